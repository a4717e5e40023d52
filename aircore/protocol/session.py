"""One client connection: its era, negotiated version, in-flight calls and outbound requests."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any, Protocol

from aircore.errors import INTERNAL_ERROR, AirError

__all__ = [
    "CURRENT_SENDER",
    "DEFAULT_REQUEST_TIMEOUT",
    "BoundPeer",
    "Connection",
    "Peer",
    "Sender",
    "peer_for",
]

DEFAULT_REQUEST_TIMEOUT = 300.0

Sender = Callable[[dict[str, Any]], Awaitable[None]]
"""Writes one message to the client."""


CURRENT_SENDER: ContextVar[Sender | None] = ContextVar("air_current_sender", default=None)
"""Where messages of the request being handled go (HTTP: that POST's SSE stream). A transport
sets it before starting the request's task; the task's context keeps it."""


class Peer(Protocol):
    """What a call can send back to its client."""

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification."""

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float = DEFAULT_REQUEST_TIMEOUT
    ) -> Any:
        """Send a server→client request and wait for its result."""


class Connection:
    """State of one client connection (a stdio pipe, an HTTP session, or in-process).

    Attributes:
        transport: ``"pipe"``, ``"tcp"`` or ``"inproc"``.
        era: ``"legacy"`` after ``initialize``, ``"modern"`` after a 2026-07-28 request.
        protocol_version: the negotiated version (legacy) or the last request's (modern).
        client_info, client_capabilities: from ``initialize`` or the request ``_meta``.
        session_id: the HTTP ``Mcp-Session-Id`` (legacy HTTP only).
        authorization: the HTTP request's ``Authorization`` header (a per-request connection
            of the 2026-07-28 era; it tells callers apart for their share of tasks).
        inflight: request id → the task running it (``notifications/cancelled`` cancels it).
    """

    __slots__ = (
        "__weakref__",
        "_client_info",
        "_ids",
        "_pending",
        "_sender",
        "authorization",
        "client_capabilities",
        "client_name",
        "era",
        "inflight",
        "initialized",
        "log_level",
        "protocol_version",
        "session_id",
        "subscriptions",
        "transport",
    )

    def __init__(
        self, *, transport: str, sender: Sender | None = None, session_id: str | None = None
    ) -> None:
        self.transport = transport
        self.session_id = session_id
        self.authorization: str | None = None
        self.era: str | None = None
        self.protocol_version: str | None = None
        self._client_info: Mapping[str, Any] | None = None
        self.client_name: str | None = None
        self.client_capabilities: Mapping[str, Any] | None = None
        self.initialized = False
        self.log_level = "debug"
        self.subscriptions: set[str] = set()
        self.inflight: dict[Any, asyncio.Task[Any]] = {}
        self._sender = sender
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    @property
    def client_info(self) -> Mapping[str, Any] | None:
        """``clientInfo`` from ``initialize`` or the request ``_meta``."""
        return self._client_info

    @client_info.setter
    def client_info(self, info: Mapping[str, Any] | None) -> None:
        self._client_info = info
        name = info.get("name") if isinstance(info, Mapping) else None
        self.client_name = name if isinstance(name, str) else None

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification; dropped when the transport cannot carry one right now."""
        if self._sender is not None:
            await self._sender({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        via: Sender | None = None,
    ) -> Any:
        """Send a request to the client (through ``via`` if given) and await its result.

        Raises:
            AirError: the transport cannot carry requests, the client answered with an error,
                or no answer came within ``timeout`` seconds.
        """
        sender = via or self._sender
        if sender is None:
            raise AirError(INTERNAL_ERROR, f"cannot send {method}: no channel to the client")
        req_id = f"air-{next(self._ids)}"
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        try:
            await sender({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            raise AirError(INTERNAL_ERROR, f"the client did not answer {method}") from None
        finally:
            self._pending.pop(req_id, None)

    def resolve(self, message: Mapping[str, Any]) -> bool:
        """Deliver a client's response to the waiting :meth:`request`; False if unknown id."""
        fut = self._pending.get(str(message.get("id")))
        if fut is None or fut.done():
            return False
        if "error" in message:
            err = message["error"] if isinstance(message["error"], Mapping) else {}
            fut.set_exception(
                AirError(
                    int(err.get("code", INTERNAL_ERROR)), str(err.get("message", "client error"))
                )
            )
        else:
            fut.set_result(message.get("result"))
        return True

    def cancel_all(self) -> None:
        """Cancel every in-flight call and fail every pending outbound request."""
        for task in list(self.inflight.values()):
            task.cancel()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(AirError(INTERNAL_ERROR, "connection closed"))


class BoundPeer:
    """A connection seen from one request: messages go to that request's own stream, answers
    to server→client requests come back through the connection."""

    __slots__ = ("conn", "sender")

    def __init__(self, conn: Connection, sender: Sender) -> None:
        self.conn = conn
        self.sender = sender

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification on this request's stream."""
        await self.sender({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float = DEFAULT_REQUEST_TIMEOUT
    ) -> Any:
        """Send a request on this request's stream and await the client's answer."""
        return await self.conn.request(method, params, timeout=timeout, via=self.sender)


def peer_for(conn: Connection) -> Connection | BoundPeer:
    """The peer a handler should talk to: the request's own stream if the transport set one."""
    sender = CURRENT_SENDER.get()
    return conn if sender is None else BoundPeer(conn, sender)
