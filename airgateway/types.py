"""The vocabulary of airgateway: what an upstream connection offers, and message callbacks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = ["Counter", "JSONDict", "MessageHandler", "NotificationListener", "UpstreamClient"]

JSONDict: TypeAlias = dict[str, Any]
"""A JSON object."""

MessageHandler: TypeAlias = Callable[[JSONDict], Awaitable[JSONDict | None]]
"""Takes a message an upstream sent while a call ran: a notification (progress, log; returns
``None``) or a server→client request (elicitation, sampling; returns the JSON-RPC response
object ``{"result": …}`` or ``{"error": …}`` to send back)."""

NotificationListener: TypeAlias = Callable[[str, JSONDict], None]
"""Told ``(label, notification)`` for upstream notifications that belong to no call
(``notifications/tools/list_changed`` …)."""


@runtime_checkable
class UpstreamClient(Protocol):
    """One long-lived connection to one replica of an upstream server.

    ``connect`` runs the handshake once (``server/discover``, else ``initialize``); calls then
    reuse the connection (HTTP keep-alive, one stdio process, one SSE stream). ``era`` is
    ``"modern"`` (2026-07-28, stateless) or ``"legacy"`` (a session) once connected.
    """

    label: str
    era: str | None

    async def connect(self) -> None:
        """Open the connection and run the handshake.

        Raises:
            UpstreamUnavailableError: the replica cannot be reached or refused the handshake.
        """

    async def request(
        self,
        method: str,
        params: JSONDict,
        *,
        timeout: float,
        on_message: MessageHandler | None = None,
    ) -> JSONDict:
        """Send one request and return its ``result``.

        Raises:
            UpstreamError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: no answer (connection lost, process died).
            UpstreamTimeoutError: no answer within ``timeout`` seconds.
        """

    async def notify(self, method: str, params: JSONDict) -> None:
        """Send one notification (best effort)."""

    async def close(self) -> None:
        """Close the connection (and stop a stdio process). Idempotent."""


@runtime_checkable
class Counter(Protocol):
    """A store's atomic counter (``airstore`` backends' ``incr``; Redis ``INCRBY``)."""

    async def incr(self, ns: str, key: str, by: int = 1, ttl: float | None = None) -> int:
        """Add ``by`` to the counter and return the new value; ``ttl`` on first creation."""
