"""Tasks behind the gateway: ``tasks/*`` go to the replica that started the task.

A 2026-07-28 server keeps its tasks in its own process (the tasks extension), so a
``tasks/get``, ``tasks/update`` or ``tasks/cancel`` must reach the replica whose ``tools/call``
answered ``resultType: "task"``. When such an answer passes, the gateway keeps the task id's
route (server, replica, tool, client) in the store, namespace :data:`TASKS_NAMESPACE`, for the
task's ``ttlMs`` (at most :data:`MAX_TASK_TTL_S`), so every gateway process sharing the store
routes the task's requests to that replica. Only the client that started a task may follow it,
and only while its allow list still admits the tool.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airgateway.config import ClientConfig
from airgateway.replica import Replica
from airgateway.types import JSONDict
from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = [
    "MAX_TASK_TTL_S",
    "TASKS_NAMESPACE",
    "TASK_METHODS",
    "TaskRoute",
    "TaskRoutes",
    "replica_of",
]

logger = logging.getLogger(__name__)

TASKS_NAMESPACE = "gateway.tasks"
MAX_TASK_TTL_S = 24 * 3600.0
"""A task's route is kept this long at most (its ``ttlMs`` when shorter)."""
DEFAULT_TASK_TTL_S = 3600.0
"""Kept this long when the answer names no ``ttlMs``."""
TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
CACHE_SIZE = 4096
_MAX_ID = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRoute:
    """Where a task lives: the server, the replica (its URL for a network replica, else its
    number), the tool and the client."""

    server: str
    replica: int
    tool: str
    client: str | None
    url: str | None = None

    def to_json(self) -> JSONDict:
        """The stored form."""
        return {"server": self.server, "replica": self.replica, "tool": self.tool,
                "client": self.client, "url": self.url}  # fmt: skip


def replica_of(route: TaskRoute, group: Sequence[Replica]) -> Replica | None:
    """The replica of ``group`` a task lives on: a network replica by its URL (gateways
    sharing a registry number one replica differently), a stdio one by its number."""
    if route.url is not None:
        return next((r for r in group if r.config.url == route.url), None)
    return next((r for r in group if r.index == route.replica and r.config.url is None), None)


def task_of(result: JSONDict) -> tuple[str, float] | None:
    """``(task id, seconds to keep its route)`` when ``result`` is a ``CreateTaskResult``."""
    if result.get("resultType") != "task":
        return None
    task_id = result.get("taskId")
    if not isinstance(task_id, str) or not 0 < len(task_id) <= _MAX_ID:
        return None
    ttl = result.get("ttlMs")
    seconds = ttl / 1000 if isinstance(ttl, int | float) and ttl > 0 else DEFAULT_TASK_TTL_S
    return task_id, min(seconds, MAX_TASK_TTL_S)


class TaskRoutes:
    """Task id → :class:`TaskRoute`, in the store and a bounded local cache.

    Args:
        store: where routes live (shared by the gateways that share it).
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: OrderedDict[str, TaskRoute] = OrderedDict()

    async def remember(
        self, result: JSONDict, *, server: str, replica: int, tool: str,
        client: ClientConfig | None, url: str | None = None,
    ) -> None:  # fmt: skip
        """Keep the route of the task ``result`` announces (nothing for other results)."""
        found = task_of(result)
        if found is None:
            return
        task_id, seconds = found
        route = TaskRoute(server=server, replica=replica, tool=tool,
                          client=None if client is None else client.name, url=url)  # fmt: skip
        self._remember(task_id, route)
        try:
            await self.store.set(TASKS_NAMESPACE, task_id, route.to_json(), seconds)
        except AirstoreError as exc:  # this gateway still routes it; others cannot
            logger.warning("task %s: route not stored: %s", task_id[:12], exc)

    async def find(self, task_id: Any) -> TaskRoute | None:
        """The route of ``task_id`` (``None`` when unknown or expired)."""
        if not isinstance(task_id, str) or not 0 < len(task_id) <= _MAX_ID:
            return None
        route = self._cache.get(task_id)
        if route is not None:
            self._cache.move_to_end(task_id)
            return route
        try:
            data = await self.store.get(TASKS_NAMESPACE, task_id)
        except AirstoreError:
            return None
        if not isinstance(data, dict):
            return None
        server, replica, tool = data.get("server"), data.get("replica"), data.get("tool")
        client, url = data.get("client"), data.get("url")
        if not (isinstance(server, str) and type(replica) is int and isinstance(tool, str)):
            return None
        route = TaskRoute(server=server, replica=replica, tool=tool,
                          client=client if isinstance(client, str) else None,
                          url=url if isinstance(url, str) else None)  # fmt: skip
        self._remember(task_id, route)
        return route

    def _remember(self, task_id: str, route: TaskRoute) -> None:
        self._cache[task_id] = route
        self._cache.move_to_end(task_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
