"""The tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28): calls that continue in
the background.

A tool handler calls :meth:`~aircore.ToolContext.start_task`; when the client declared the
extension on that request, the call answers with a ``CreateTaskResult`` (``resultType:
"task"``) at once and the handler keeps running. The client polls ``tasks/get`` (status, and the
``CallToolResult`` or JSON-RPC error once terminal), answers input through ``tasks/update`` and
may ``tasks/cancel``.

Tasks live in the server process (one :class:`TaskStore` per dispatcher), so ``tasks/*`` work
across HTTP requests on a stateless server; behind several replicas, route them by the
``Mcp-Name`` header (the task id) to the replica that started the task. The store is bounded:
at most :data:`MAX_TASKS` tasks (finished ones make room, oldest first), each forgotten (and
cancelled if still running) ``ttlMs`` after it was created, and all at shutdown. Task ids are
192 random bits.

Each caller gets a fair share: at most :data:`MAX_TASKS_PER_CALLER` running tasks. Past it a
task-required tool gets a -32603 error saying so (with ``data.reason: "task share"``) and any
other tool runs inline, while other callers still start tasks. A caller is told apart, until
authorization names it, by what its requests carry (:func:`task_owner`): the bearer token
(digested), a legacy session and the ``clientInfo`` it declares. A server's only client
(stdio, in process) has no share to keep. A caller that claims many names gets many shares,
still within :data:`MAX_TASKS`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aircore.errors import (
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    AirError,
    InvalidParamsError,
)
from aircore.request_context import InputRequest
from airhttp.identity import current_identity

__all__ = [
    "DEFAULT_POLL_INTERVAL_MS",
    "DEFAULT_TASK_TTL_MS",
    "MAX_TASKS",
    "MAX_TASKS_PER_CALLER",
    "SOLE_CLIENT",
    "TASKS_EXTENSION",
    "TERMINAL",
    "CallTasking",
    "TaskInputs",
    "TaskRecord",
    "TaskStore",
    "client_has_tasks",
    "missing_tasks_capability",
    "task_owner",
]

if TYPE_CHECKING:
    from aircore.protocol.session import Connection

logger = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
DEFAULT_TASK_TTL_MS = 30 * 60 * 1000
"""How long a task stays retrievable after it was created."""
DEFAULT_POLL_INTERVAL_MS = 500
"""The polling interval suggested to clients."""
MAX_TASKS = 1024
"""Tasks kept at once (running and finished); finished ones are dropped oldest first."""
MAX_TASKS_PER_CALLER = MAX_TASKS // 8
"""Running tasks one caller may hold at once (its fair share of :data:`MAX_TASKS`)."""
TERMINAL = frozenset({"completed", "failed", "cancelled"})
SOLE_CLIENT = ""
"""The owner of a server's only client (stdio, in process): held to no share."""
TASK_SHARE = "task share"
"""``data.reason`` of the error a caller gets past its share."""

Notify = Callable[[dict[str, Any]], Awaitable[None]]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def client_has_tasks(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether a request's client capabilities declare the tasks extension."""
    if not capabilities:
        return False
    extensions = capabilities.get("extensions")  # hot path: no ABC check for the common None
    return (
        extensions is not None and isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions
    )


def task_owner(conn: Connection) -> str:
    """Who holds a task started on ``conn`` (a :class:`~aircore.protocol.session.Connection`):
    the OAuth caller (client and subject, whatever token it sends), else the bearer token's
    digest, a legacy session, and the declared ``clientInfo`` name and version;
    :data:`SOLE_CLIENT` on stdio or in process, where the server has one client (no share to
    keep: it may use every slot)."""
    if conn.transport != "tcp" and conn.session_id is None:
        return SOLE_CLIENT
    parts = []
    identity = current_identity()
    authorization = conn.authorization
    if identity is not None and identity.auth == "oauth":  # one share per caller, whatever token
        who = f"{identity.client_id}\0{identity.subject}".encode("utf-8", "replace")
        parts.append("oauth:" + hashlib.sha256(who).hexdigest()[:16])
    elif authorization:
        digest = hashlib.sha256(authorization.strip().encode("utf-8", "replace")).hexdigest()
        parts.append("token:" + digest[:16])
    if conn.session_id is not None:
        parts.append("session:" + conn.session_id)
    info = conn.client_info
    if isinstance(info, Mapping):
        parts.append(f"client:{str(info.get('name'))[:64]}/{str(info.get('version'))[:32]}")
    return " ".join(parts) or "anonymous"


def missing_tasks_capability(what: str) -> AirError:
    """The -32021 error for a client that did not declare the tasks extension."""
    return AirError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"{what} needs the {TASKS_EXTENSION} extension in the client capabilities",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


class TaskRecord:
    """One task: its status, its outcome, the input it waits for and the work running it."""

    __slots__ = (
        "counted",
        "created",
        "deadline",
        "error",
        "id",
        "owner",
        "pending",
        "poll_ms",
        "result",
        "runner",
        "status",
        "status_message",
        "timer",
        "ttl_ms",
        "updated",
        "used_keys",
    )

    def __init__(
        self, *, ttl_ms: int, poll_ms: int, status_message: str | None, owner: str = ""
    ) -> None:
        self.id = secrets.token_urlsafe(24)
        self.owner = owner
        self.counted = False
        """Counted in its owner's running tasks."""
        self.status = "working"
        self.status_message = status_message
        self.created = self.updated = time.time()
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self.deadline = time.monotonic() + ttl_ms / 1000
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.pending: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]] = {}
        self.used_keys: set[str] = set()
        self.runner: asyncio.Future[Any] | None = None
        self.timer: asyncio.TimerHandle | None = None

    def envelope(self) -> dict[str, Any]:
        """The ``Task`` fields (``CreateTaskResult`` adds ``resultType: "task"``)."""
        out: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.updated),
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_ms,
        }
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        return out

    def detailed(self) -> dict[str, Any]:
        """The ``DetailedTask`` of ``tasks/get`` and ``notifications/tasks``."""
        out = self.envelope()
        if self.status == "input_required":
            out["inputRequests"] = {key: request for key, (request, _) in self.pending.items()}
        elif self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        return out


class TaskStore:
    """The tasks of one server process, bounded in number and age.

    Args:
        notify: called with a task's ``DetailedTask`` whenever its status changes (the
            subscriptions hub sends ``notifications/tasks`` to listeners of that task).
        max_tasks: the bound on tasks kept.
        max_per_caller: running tasks one caller (owner) may hold (default: an eighth of
            ``max_tasks``, :data:`MAX_TASKS_PER_CALLER` for the default).
        ttl_ms: each task's ``ttlMs``.
        poll_ms: each task's ``pollIntervalMs``.
    """

    def __init__(
        self,
        *,
        notify: Notify | None = None,
        max_tasks: int = MAX_TASKS,
        max_per_caller: int | None = None,
        ttl_ms: int = DEFAULT_TASK_TTL_MS,
        poll_ms: int = DEFAULT_POLL_INTERVAL_MS,
    ) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._running: dict[str, int] = {}  # owner → running tasks
        self.max_per_caller = (
            max(1, max_tasks * MAX_TASKS_PER_CALLER // MAX_TASKS)
            if max_per_caller is None
            else max_per_caller
        )
        self._notify = notify
        self.max_tasks = max_tasks
        self.ttl_ms = ttl_ms
        self.poll_ms = poll_ms
        self._background: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def running(self, owner: str) -> int:
        """Tasks ``owner`` holds that have not finished."""
        return self._running.get(owner, 0)

    def _uncount(self, record: TaskRecord) -> None:
        if record.counted:
            record.counted = False
            left = self._running.get(record.owner, 0) - 1
            if left > 0:
                self._running[record.owner] = left
            else:
                self._running.pop(record.owner, None)

    def _drop(self, record: TaskRecord) -> None:
        self._uncount(record)
        self._tasks.pop(record.id, None)
        if record.timer is not None:
            record.timer.cancel()
        if record.runner is not None and not record.runner.done():
            record.runner.cancel()  # its time is up and nobody can ask for it any more

    def share_error(self, owner: str) -> AirError:
        """The error of a caller past its share of running tasks."""
        return AirError(
            INTERNAL_ERROR,
            f"this client holds {self.running(owner)} running tasks, its share of the "
            f"server's {self.max_tasks}: wait for one to finish or cancel one (tasks/cancel)",
            data={
                "reason": TASK_SHARE,
                "running": self.running(owner),
                "share": self.max_per_caller,
                "maxTasks": self.max_tasks,
            },
        )

    def over_share(self, owner: str) -> bool:
        """Whether ``owner`` holds its share (:attr:`max_per_caller`; never the sole client)."""
        return owner != SOLE_CLIENT and self.running(owner) >= self.max_per_caller

    def create(
        self, *, status_message: str | None = None, owner: str = SOLE_CLIENT
    ) -> TaskRecord | None:
        """A new working task held by ``owner``, or ``None`` when the store is full of
        running tasks or ``owner`` holds its share (:meth:`over_share`)."""
        if self.over_share(owner):
            return None
        while len(self._tasks) >= self.max_tasks:
            finished = next((r for r in self._tasks.values() if r.status in TERMINAL), None)
            if finished is None:
                logger.warning("task store full (%d running tasks): not starting one", len(self))
                return None
            self._drop(finished)
        record = TaskRecord(
            ttl_ms=self.ttl_ms, poll_ms=self.poll_ms, status_message=status_message, owner=owner
        )
        self._tasks[record.id] = record
        record.counted = True
        self._running[owner] = self._running.get(owner, 0) + 1
        record.timer = asyncio.get_running_loop().call_later(self.ttl_ms / 1000, self._drop, record)
        return record

    def get(self, task_id: Any) -> TaskRecord:
        """The task ``task_id`` names.

        Raises:
            InvalidParamsError: -32602 for a missing, malformed, unknown or expired id.
        """
        record = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if record is None:
            raise InvalidParamsError(
                "Failed to retrieve task: Task not found", data={"taskId": task_id}
            )
        return record

    def changed(self, record: TaskRecord, status: str | None = None) -> None:
        """Record a change of ``record`` (and its new status) and tell the listeners."""
        if status is not None:
            record.status = status
            if status in TERMINAL:
                self._uncount(record)
        record.updated = time.time()
        if self._notify is not None:
            job = asyncio.ensure_future(self._notify(record.detailed()))
            self._background.add(job)
            job.add_done_callback(self._background.discard)

    def attach(self, record: TaskRecord, runner: asyncio.Future[dict[str, Any]]) -> None:
        """Let ``runner`` (the call continuing in the background) settle ``record``."""
        record.runner = runner
        runner.add_done_callback(lambda fut: self._settle(record, fut))

    def _settle(self, record: TaskRecord, fut: asyncio.Future[dict[str, Any]]) -> None:
        for _, waiter in record.pending.values():
            waiter.cancel()
        record.pending.clear()
        if record.status in TERMINAL:
            return
        if fut.cancelled():
            record.status_message = record.status_message or "The task was cancelled."
            self.changed(record, "cancelled")
            return
        exc = fut.exception()
        if exc is None:
            record.result = fut.result()
            self.changed(record, "completed")
        elif isinstance(exc, AirError):
            record.error = exc.to_error()
            record.status_message = f"Tool execution failed: {exc.message}"
            self.changed(record, "failed")
        else:
            logger.error("task %s failed: %s: %s", record.id, type(exc).__name__, exc)
            record.error = {"code": INTERNAL_ERROR, "message": f"Internal error: {exc}"}
            record.status_message = "Tool execution failed: internal error"
            self.changed(record, "failed")

    def cancel(self, record: TaskRecord) -> None:
        """Cancel a running task (a finished one stays as it is)."""
        if record.status not in TERMINAL and record.runner is not None:
            record.runner.cancel()

    def update(self, record: TaskRecord, responses: Mapping[str, Any]) -> None:
        """Deliver ``inputResponses``; keys not currently outstanding are ignored."""
        for key, answer in responses.items():
            entry = record.pending.pop(key, None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(answer)
        if record.status == "input_required" and not record.pending:
            self.changed(record, "working")

    def close(self) -> None:
        """Cancel every running task and forget every task (server shutdown)."""
        for record in list(self._tasks.values()):
            self._drop(record)


class TaskInputs:
    """The input channel of a call running as a task: questions wait in ``input_required``
    until ``tasks/update`` answers them (each key used once over the task's life)."""

    __slots__ = ("record", "store")

    def __init__(self, store: TaskStore, record: TaskRecord) -> None:
        self.store = store
        self.record = record

    async def ask(self, requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        """Wait for the client's answers to ``requests``."""
        record = self.record
        loop = asyncio.get_running_loop()
        waiting: dict[str, asyncio.Future[Any]] = {}
        for key, req in requests.items():
            wire = key
            n = 1
            while wire in record.used_keys:  # a key is never reused within a task
                n += 1
                wire = f"{key}~{n}"
            record.used_keys.add(wire)
            fut: asyncio.Future[Any] = loop.create_future()
            record.pending[wire] = ({"method": req.method, "params": dict(req.params)}, fut)
            waiting[key] = fut
        self.store.changed(record, "input_required")
        try:
            return {key: await fut for key, fut in waiting.items()}
        finally:
            for fut in waiting.values():
                fut.cancel()


class CallTasking:
    """What lets one ``tools/call`` become a task (satisfies :class:`~aircore.context.
    TaskStarter`); the dispatcher waits on :attr:`started` to answer ``CreateTaskResult``."""

    __slots__ = ("available", "owner", "record", "refusal", "started", "store")

    def __init__(self, store: TaskStore, *, available: bool, owner: str = SOLE_CLIENT) -> None:
        self.store = store
        self.available = available
        self.owner = owner
        self.record: TaskRecord | None = None
        self.refusal: AirError | None = None
        self.started = asyncio.Event()

    def begin(self, *, status_message: str | None) -> TaskInputs | None:
        """Create the task (once); ``None`` when the store is full or the caller holds its
        share (:attr:`refusal` says which)."""
        if self.record is not None:
            return TaskInputs(self.store, self.record)
        store = self.store
        record = store.create(status_message=status_message, owner=self.owner)
        if record is None:
            if store.over_share(self.owner):
                self.refusal = store.share_error(self.owner)
            else:
                self.refusal = AirError(INTERNAL_ERROR, "too many tasks in flight; try again later")
            return None
        self.record = record
        self.started.set()
        return TaskInputs(self.store, record)
