"""``subscriptions/listen`` (2026-07-28): long-lived notification streams.

A listen request names the notifications it wants (``notifications``: ``toolsListChanged``,
``promptsListChanged``, ``resourcesListChanged``, ``resourceSubscriptions``, and ``taskIds``
with the tasks extension). The server acknowledges the subset it honors
(``notifications/subscriptions/acknowledged``, always the stream's first message), then sends
only those notifications, each tagged with ``_meta["io.modelcontextprotocol/subscriptionId"]``
(the listen request's id). The request stays open until the client closes the stream (HTTP) or
cancels it (stdio), or the server shuts down, which answers it with an empty result.

A :class:`Subscription` looks to :meth:`aircore.AirServer.resource_updated` like a legacy
subscriber (``subscriptions`` URIs and ``notify``), so resource updates reach both eras. At most
:data:`MAX_SUBSCRIPTIONS` streams are open at once and each names at most :data:`MAX_FILTER_ITEMS`
URIs or task ids.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aircore.errors import INTERNAL_ERROR, AirError, InvalidParamsError
from aircore.protocol.session import Peer
from aircore.protocol.tasks import client_has_tasks, missing_tasks_capability

__all__ = [
    "MAX_FILTER_ITEMS",
    "MAX_SUBSCRIPTIONS",
    "SUBSCRIPTION_ID_KEY",
    "Subscription",
    "SubscriptionHub",
]

SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
MAX_SUBSCRIPTIONS = 64
"""Listen streams open at once, per server: a quarter of the default HTTP in-flight cap, so
held streams alone cannot take every slot a call needs."""
MAX_FILTER_ITEMS = 1024
"""URIs (``resourceSubscriptions``) or task ids (``taskIds``) one stream may name."""

_FLAGS = {
    "toolsListChanged": ("tools", "notifications/tools/list_changed"),
    "promptsListChanged": ("prompts", "notifications/prompts/list_changed"),
    "resourcesListChanged": ("resources", "notifications/resources/list_changed"),
}


def _strings(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParamsError(f"subscriptions/listen: notifications.{field} must be strings")
    if len(value) > MAX_FILTER_ITEMS:
        raise InvalidParamsError(
            f"subscriptions/listen: notifications.{field} names more than {MAX_FILTER_ITEMS}",
            data={"limit": MAX_FILTER_ITEMS},
        )
    return list(dict.fromkeys(value))


class Subscription:
    """One open listen stream: what it honors and where its notifications go."""

    __slots__ = ("__weakref__", "closed", "honored", "methods", "peer", "sid", "subscriptions")

    def __init__(self, sid: Any, honored: dict[str, Any], peer: Peer) -> None:
        self.sid = sid
        self.honored = honored
        self.peer = peer
        self.methods = {method for flag, (_, method) in _FLAGS.items() if honored.get(flag)}
        self.subscriptions: set[str] = set(honored.get("resourceSubscriptions", ()))
        if self.subscriptions:
            self.methods.add("notifications/resources/updated")
        if honored.get("taskIds"):
            self.methods.add("notifications/tasks")
        self.closed = asyncio.Event()

    def _tag(self, params: Mapping[str, Any]) -> dict[str, Any]:
        meta = params.get("_meta")
        tagged = dict(meta) if isinstance(meta, Mapping) else {}
        tagged[SUBSCRIPTION_ID_KEY] = self.sid
        return {**params, "_meta": tagged}

    async def acknowledge(self) -> None:
        """Send the acknowledgment (the stream's first message)."""
        params = self._tag({"notifications": self.honored})
        await self.peer.notify("notifications/subscriptions/acknowledged", params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send ``method`` if this stream asked for it (tagged with the subscription id)."""
        if method not in self.methods or self.closed.is_set():
            return
        if method == "notifications/tasks" and params.get("taskId") not in self.honored.get(
            "taskIds", ()
        ):
            return
        await self.peer.notify(method, self._tag(params))


class SubscriptionHub:
    """The open listen streams of one server.

    Args:
        capabilities: the server's capabilities (decides what can be honored).
        tasks: whether ``taskIds`` (task status notifications) can be honored.
    """

    def __init__(self, capabilities: Mapping[str, Any], *, tasks: bool = True) -> None:
        self.capabilities = capabilities
        self.tasks = tasks
        self._open: set[Subscription] = set()

    def __len__(self) -> int:
        return len(self._open)

    def honor(
        self, params: Mapping[str, Any], client_capabilities: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """The subset of a listen request's filter this server will send.

        Raises:
            InvalidParamsError: a missing or malformed ``notifications`` filter.
            AirError: -32021 for ``taskIds`` without the tasks extension.
        """
        wanted = params.get("notifications")
        if not isinstance(wanted, Mapping):
            raise InvalidParamsError("subscriptions/listen: params.notifications must be an object")
        honored: dict[str, Any] = {}
        for flag, (family, _) in _FLAGS.items():
            value = wanted.get(flag)
            if value is not None and not isinstance(value, bool):
                raise InvalidParamsError(f"subscriptions/listen: notifications.{flag} is boolean")
            cap = self.capabilities.get(family)
            if value and isinstance(cap, Mapping) and cap.get("listChanged"):
                honored[flag] = True
        if "resourceSubscriptions" in wanted:
            uris = _strings(wanted["resourceSubscriptions"], "resourceSubscriptions")
            cap = self.capabilities.get("resources")
            if uris and isinstance(cap, Mapping) and cap.get("subscribe"):
                honored["resourceSubscriptions"] = uris
        if "taskIds" in wanted:
            ids = _strings(wanted["taskIds"], "taskIds")
            if not client_has_tasks(client_capabilities):
                raise missing_tasks_capability("notifications.taskIds")
            if ids and self.tasks:
                honored["taskIds"] = ids
        return honored

    def open(self, sid: Any, honored: dict[str, Any], peer: Peer) -> Subscription:
        """Register a stream.

        Raises:
            AirError: -32603 when :data:`MAX_SUBSCRIPTIONS` streams are already open.
        """
        if len(self._open) >= MAX_SUBSCRIPTIONS:
            raise AirError(
                INTERNAL_ERROR,
                f"too many open subscriptions (limit {MAX_SUBSCRIPTIONS}); close one first",
                data={"limit": MAX_SUBSCRIPTIONS},
            )
        sub = Subscription(sid, honored, peer)
        self._open.add(sub)
        return sub

    def discard(self, sub: Subscription) -> None:
        """Forget a stream (it ended)."""
        self._open.discard(sub)
        sub.closed.set()

    async def publish(self, method: str, params: dict[str, Any]) -> int:
        """Send a notification to every stream that asked for it; return how many did."""
        sent = 0
        for sub in list(self._open):
            if method in sub.methods:
                await sub.notify(method, params)
                sent += 1
        return sent

    def close(self) -> None:
        """End every stream gracefully (server shutdown): each listen request answers."""
        for sub in list(self._open):
            sub.closed.set()
