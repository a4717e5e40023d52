"""``ToolContext``: what a handler and every middleware of one call see.

Its base, :class:`~aircore.request_context.RequestContext`, holds what any request handler may
ask the client for (elicitation, sampling, roots) in either protocol era.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aircore.errors import INTERNAL_ERROR, AirError
from aircore.request_context import (
    Elicit,
    ElicitResult,
    InputChannel,
    InputRequest,
    InputRequired,
    RequestContext,
    TaskStarter,
    _is_modern,
)
from airmeter.types import CallInfo

# Tool: a circle (tool -> signature -> context) kept on purpose: only ToolContext.tool's type,
# never imported at run time (tests/test_architecture.py, DEFENDED_CIRCLES)
if TYPE_CHECKING:
    from aircore.protocol.session import Peer
    from aircore.tool import Tool
    from airstore import Store

__all__ = [
    "LOG_LEVELS",
    "Elicit",
    "ElicitResult",
    "InputChannel",
    "InputRequest",
    "InputRequired",
    "RequestContext",
    "TaskStarter",
    "ToolContext",
]

LOG_LEVELS = {
    "debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6,
    "emergency": 7,
}  # fmt: skip
"""MCP log levels (syslog severities), lowest first."""

# ctx.call_id: a random per-process prefix plus a counter (uuid4 costs 2-3 µs a call; this costs
# one next() and, when read, one format). A forked child draws a new prefix, so ids stay unique
# across processes.
_CALL_PREFIX_BYTES = 8
_call_prefix = secrets.token_hex(_CALL_PREFIX_BYTES)
_call_counter = itertools.count(1)


def _new_call_prefix() -> None:
    global _call_prefix, _call_counter
    _call_prefix = secrets.token_hex(_CALL_PREFIX_BYTES)
    _call_counter = itertools.count(1)


os.register_at_fork(after_in_child=_new_call_prefix)


class ToolContext(RequestContext):
    """Context of one tool call, shared by every middleware and the handler.

    Attributes:
        tool_name: the called tool.
        arguments: the (validated) JSON arguments; ``before`` hooks may replace them (assign a
            new dict: a tool with typed parameters converts a replaced dict again).
        bound_arguments: the arguments as the handler's annotated types (an ``Enum`` member, a
            model instance …), set by validation for decorator tools whose signature needs
            conversion; ``None`` otherwise.
        request_id: the JSON-RPC id as a string (``None`` in-process without an id); clients
            number their requests per connection, so it repeats across connections.
        call_id: unique per call across processes (a random per-process prefix and a
            counter, ``"3f9a…c2-1a"``); the meter, spans (``air.call.id``) and logs carry it.
        session_id: the HTTP ``Mcp-Session-Id`` (legacy era), else ``None``.
        protocol_version: the negotiated or per-request protocol version (see also
            :class:`RequestContext`: ``ask``, ``elicit``, ``sample``, ``list_roots``).
        transport: ``"pipe"`` (stdio), ``"tcp"`` (HTTP) or ``"inproc"``.
        client_name: ``clientInfo.name`` when the client sent it.
        traceparent, tracestate: the W3C trace context of the request's ``params._meta``
            (``None`` without one): the meter's span of this call continues the caller's trace.
        server_name: the server's name.
        started_at: ``time.time()`` when the call entered the chain.
        state: the server-wide state dict.
        store: the server's store (``None`` without storage).
        layer, tags, annotations, tool_meta: the tool's metadata (after plugins changed it).
        meta: extra meta added by ``before`` hooks (``{"meta": {...}}``) and middleware.
        usage: a handler may set ``tokens_in``, ``tokens_out``, ``cost`` here for the meter.
        call_result: the ``CallToolResult`` built inside the chain (inside the meter, so a value
            that cannot become one is recorded as failed) from ``call_result_of``, the value the
            chain goes on returning, so the meter measures and redacts the tool's own value.
        cancelled: True once the client cancelled the call (its task is being cancelled;
            ``notifications/cancelled``, or the POST closed on 2026-07-28 HTTP).
    """

    __slots__ = (
        "_call_id",
        "_call_number",
        "_log_level",
        "_progress_token",
        "_task",
        "_tasking",
        "arguments",
        "bound_arguments",
        "bound_source",
        "call_result",
        "call_result_of",
        "client_name",
        "meta",
        "request_id",
        "server_name",
        "session_id",
        "started_at",
        "state",
        "store",
        "tool",
        "traceparent",
        "tracestate",
        "transport",
        "usage",
    )

    def __init__(
        self,
        *,
        tool: Tool,
        arguments: dict[str, Any],
        server_name: str,
        state: dict[str, Any],
        store: Store | None,
        request_id: str | None = None,
        session_id: str | None = None,
        protocol_version: str | None = None,
        transport: str = "inproc",
        client_name: str | None = None,
        client_capabilities: Mapping[str, Any] | None = None,
        peer: Peer | None = None,
        progress_token: Any = None,
        inputs: InputChannel | None = None,
        log_level: str | None = None,
        tasking: TaskStarter | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> None:
        # RequestContext's fields, set here rather than through its __init__ (hot path)
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self._peer = peer
        self._inputs = inputs
        self._elicit_count = 0
        self.tool = tool
        self.arguments = arguments
        self.server_name = server_name
        self.state = state
        self.store = store
        self.request_id = request_id
        self.session_id = session_id
        self.transport = transport
        self.client_name = client_name
        self.traceparent = traceparent
        self.tracestate = tracestate
        self.started_at = time.time()
        self.meta: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self._task: asyncio.Task[Any] | None = asyncio.current_task()
        self._progress_token = progress_token
        self._log_level = log_level
        self._tasking = tasking
        self._call_number = next(_call_counter)
        self._call_id: str | None = None
        self.bound_arguments: dict[str, Any] | None = None
        self.bound_source: dict[str, Any] | None = None  # the arguments bound_arguments came from
        self.call_result: dict[str, Any] | None = None
        self.call_result_of: Any = None

    @property
    def call_id(self) -> str:
        """This call's id, unique across calls and processes (the seed's ``requestId``)."""
        call_id = self._call_id
        if call_id is None:
            call_id = self._call_id = f"{_call_prefix}-{self._call_number:x}"
        return call_id

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this call (the handler's task is being cancelled)."""
        task = self._task
        return task is not None and task.cancelling() > 0

    # tool metadata, read through so plugins' on_tool_register changes show
    @property
    def tool_name(self) -> str:
        """The tool's name."""
        return self.tool.name

    @property
    def layer(self) -> int | None:
        """The tool's L1-L7 hint, or ``None``."""
        return self.tool.layer

    @property
    def tags(self) -> tuple[str, ...]:
        """The tool's tags."""
        return self.tool.tags

    @property
    def annotations(self) -> Mapping[str, Any] | None:
        """The tool's annotations."""
        return self.tool.annotations

    @property
    def tool_meta(self) -> Mapping[str, Any] | None:
        """The tool's ``_meta``."""
        return self.tool.meta

    @property
    def input_schema(self) -> Mapping[str, Any] | None:
        """The tool's ``inputSchema`` (the meter classifies a tool by it)."""
        return self.tool.input_schema

    @property
    def can_start_task(self) -> bool:
        """Whether :meth:`start_task` would turn this call into a task (a 2026-07-28 request
        whose client declared the ``io.modelcontextprotocol/tasks`` extension)."""
        return self._tasking is not None and self._tasking.available

    async def start_task(
        self, *, required: bool = False, status_message: str | None = None
    ) -> bool:
        """Continue this call in the background as a task (the tasks extension).

        The client gets a ``CreateTaskResult`` now and follows the call with ``tasks/get``;
        what the handler returns becomes the task's result. Input asked for before this point
        is gathered in ``input_required`` rounds of the call itself; afterwards the task waits
        in ``input_required`` for ``tasks/update``. A task sends no progress or log
        notifications. Without the extension the call simply goes on (``False``).

        Args:
            required: the call cannot go on without becoming a task: raise instead of going on.
            status_message: the task's initial ``statusMessage``.

        Returns:
            ``True`` when the call now runs as a task.

        Raises:
            AirError: ``required`` and the client did not declare the extension (-32021 on
                2026-07-28; -32603, an ``isError`` result, in the legacy era, which has no
                tasks extension), or the server holds too many tasks, or this caller holds
                its share of them (-32603, the message says which).
        """
        tasking = self._tasking
        if tasking is None or not tasking.available:
            if required and _is_modern(self.protocol_version):
                from aircore.protocol.tasks import missing_tasks_capability

                raise missing_tasks_capability(f"tool {self.tool.name!r}")
            if required:  # the legacy era has no -32021 (nor this extension): an isError result
                message = (
                    f"tool {self.tool.name!r} runs only as a task (2026-07-28 tasks extension)"
                )
                raise AirError(INTERNAL_ERROR, message)
            return False
        channel = tasking.begin(status_message=status_message)
        if channel is None:
            if required:
                raise tasking.refusal or AirError(
                    INTERNAL_ERROR, "too many tasks in flight; try again later"
                )
            return False
        self._inputs = channel
        self._peer = None  # request-scoped notifications end with the request
        await asyncio.sleep(0)  # the CreateTaskResult goes out before the handler goes on
        return True

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` when the client asked for it (a ``progressToken``).

        Args:
            progress: the amount done so far (must increase between calls).
            total: the total amount, when known.
            message: a short human-readable status.
        """
        if self._progress_token is None or self._peer is None:
            return
        params: dict[str, Any] = {"progressToken": self._progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._peer.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` to the client, if it asked for this level.

        Legacy era: levels at or above ``logging/setLevel`` (all when never set). 2026-07-28:
        only when the request's ``_meta`` carries ``io.modelcontextprotocol/logLevel``.

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``, ``critical``,
                ``alert`` or ``emergency``.
            data: any JSON value.
            logger: an optional logger name.
        """
        if self._peer is None or self._log_level is None:
            return
        if LOG_LEVELS.get(level, 0) < LOG_LEVELS.get(self._log_level, 0):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._peer.notify("notifications/message", params)


def _is_call_info(ctx: ToolContext) -> CallInfo:
    """Checked by mypy: a ToolContext is what the meter reads from a call (airmeter's
    ``CallInfo``); a test checks the same at run time."""
    return ctx
