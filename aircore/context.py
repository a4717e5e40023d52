"""``ToolContext``: what a handler and every middleware of one call see."""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from aircore.errors import (
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ElicitationError,
)
from aircore.params import params_to_json_schema
from airmeter.types import CallInfo, CallSuspended

if TYPE_CHECKING:
    from aircore.protocol.session import Peer
    from aircore.tool import Tool
    from airstore import Store

__all__ = ["LOG_LEVELS", "Elicit", "ElicitResult", "InputRequired", "ToolContext"]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitResult:
    """The user's answer to :meth:`ToolContext.elicit`."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class InputRequired(CallSuspended):
    """Raised by ``elicit`` in the 2026-07-28 era: the call answers ``input_required``.

    A ``BaseException`` (airmeter's :class:`~airmeter.types.CallSuspended`), so that middleware
    catching ``Exception`` lets it through and the meter records a suspended call, not a
    failed one.
    """

    def __init__(self, key: str, request: dict[str, Any]) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


class Elicit(Protocol):
    """``ctx.elicit``: ``await ctx.elicit(message, schema)`` → :class:`ElicitResult`."""

    async def __call__(self, message: str, schema: Mapping[str, Any]) -> ElicitResult: ...


class _ElicitUnavailable:
    """``ctx.elicit`` when the client cannot elicit: falsy, so ``if ctx.elicit:`` takes the
    fallback; called anyway, it raises what the protocol asks (-32021 on 2026-07-28)."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<elicit unavailable: the client did not declare elicitation>"

    async def __call__(self, message: str, schema: Mapping[str, Any]) -> ElicitResult:
        return await self._ctx._elicit(message, schema)


def elicit_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The seed's elicitation schema ``{field: {type, description, required}}`` → JSON Schema."""
    if schema.get("type") == "object" and "properties" in schema:
        return dict(schema)
    fields: dict[str, Any] = {}
    for name, spec in schema.items():
        if isinstance(spec, Mapping) and "required" not in spec and "optional" not in spec:
            spec = {**spec, "optional": True}  # seed: fields are optional unless required
        fields[name] = spec
    return params_to_json_schema(fields)


class ToolContext:
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
        protocol_version: the negotiated or per-request protocol version.
        transport: ``"pipe"`` (stdio), ``"tcp"`` (HTTP) or ``"inproc"``.
        client_name: ``clientInfo.name`` when the client sent it.
        server_name: the server's name.
        started_at: ``time.time()`` when the call entered the chain.
        state: the server-wide state dict.
        store: the server's store (``None`` without storage).
        layer, tags, annotations, tool_meta: the tool's metadata (after plugins changed it).
        meta: extra meta added by ``before`` hooks (``{"meta": {...}}``) and middleware.
        usage: a handler may set ``tokens_in``, ``tokens_out``, ``cost`` here for the meter.
        cancelled: True once the client cancelled the call (its task is being cancelled;
            ``notifications/cancelled``, or the POST closed on 2026-07-28 HTTP).
    """

    __slots__ = (
        "_call_id",
        "_call_number",
        "_elicit_count",
        "_input_responses",
        "_log_level",
        "_peer",
        "_progress_token",
        "_task",
        "arguments",
        "bound_arguments",
        "bound_source",
        "client_capabilities",
        "client_name",
        "meta",
        "protocol_version",
        "request_id",
        "server_name",
        "session_id",
        "started_at",
        "state",
        "store",
        "tool",
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
        input_responses: Mapping[str, Any] | None = None,
        log_level: str | None = None,
    ) -> None:
        self.tool = tool
        self.arguments = arguments
        self.server_name = server_name
        self.state = state
        self.store = store
        self.request_id = request_id
        self.session_id = session_id
        self.protocol_version = protocol_version
        self.transport = transport
        self.client_name = client_name
        self.client_capabilities = client_capabilities
        self.started_at = time.time()
        self.meta: dict[str, Any] = {}
        self.usage: dict[str, Any] = {}
        self._task: asyncio.Task[Any] | None = asyncio.current_task()
        self._peer = peer
        self._progress_token = progress_token
        self._input_responses = input_responses
        self._log_level = log_level
        self._elicit_count = 0
        self._call_number = next(_call_counter)
        self._call_id: str | None = None
        self.bound_arguments: dict[str, Any] | None = None
        self.bound_source: dict[str, Any] | None = None  # the arguments bound_arguments came from

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

    @property
    def can_elicit(self) -> bool:
        """Whether the client declared elicitation and this call can reach it."""
        caps = self.client_capabilities
        if not caps or "elicitation" not in caps:
            return False
        if _is_modern(self.protocol_version) or self._input_responses is not None:
            return True
        return self._peer is not None

    @property
    def elicit(self) -> Elicit:
        """``await ctx.elicit(message, schema)`` asks the user; falsy when the client cannot.

        So the seed's idiom works: ``if ctx.elicit: answer = await ctx.elicit(…) else: …``.
        Called although the client cannot elicit, it raises :class:`ElicitationError`
        (-32021 on 2026-07-28, an ``isError`` result in the legacy era).
        """
        return self._elicit if self.can_elicit else _ElicitUnavailable(self)

    async def _elicit(self, message: str, schema: Mapping[str, Any]) -> ElicitResult:
        """Ask the user for input through the client.

        Legacy era: an ``elicitation/create`` request to the client. 2026-07-28: the call answers
        ``resultType: "input_required"`` and the client retries it with the answer; the handler
        runs again and this call returns that answer.

        Args:
            message: what to ask.
            schema: ``{field: {"type", "description", "required"}}`` or a flat object schema.

        Returns:
            ``ElicitResult(action, content)``.

        Raises:
            ElicitationError: the client did not declare the elicitation capability or the
                transport cannot carry the request.
        """
        params: dict[str, Any] = {"message": message, "requestedSchema": elicit_schema(schema)}
        if _is_modern(self.protocol_version) or (self.protocol_version or "") >= "2025-11-25":
            params = {"mode": "form", **params}
        return _elicit_result(await self._ask_client("elicitation/create", params, "elicitation"))

    async def sample(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 256,
        **options: Any,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (``sampling/createMessage``).

        Works in both eras like :meth:`elicit`.

        Args:
            messages: a prompt string (one user message) or MCP sampling messages.
            max_tokens: ``maxTokens``.
            **options: other request fields (``systemPrompt``, ``temperature`` …).

        Returns:
            The client's ``CreateMessageResult`` (``role``, ``content``, ``model`` …).

        Raises:
            ElicitationError: the client did not declare the sampling capability.
        """
        if isinstance(messages, str):
            msgs: list[Any] = [{"role": "user", "content": {"type": "text", "text": messages}}]
        else:
            msgs = [dict(m) for m in messages]
        params = {"messages": msgs, "maxTokens": max_tokens, **options}
        answer = await self._ask_client("sampling/createMessage", params, "sampling")
        if not isinstance(answer, Mapping):
            raise ElicitationError(INTERNAL_ERROR, f"invalid sampling answer: {answer!r}")
        return dict(answer)

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

    async def _ask_client(self, method: str, params: dict[str, Any], capability: str) -> Any:
        caps = self.client_capabilities or {}
        modern = _is_modern(self.protocol_version) or self._input_responses is not None
        if capability not in caps:
            raise ElicitationError(
                MISSING_REQUIRED_CLIENT_CAPABILITY if modern else INTERNAL_ERROR,
                f"the client does not support {capability}",
                data={"requiredCapabilities": {capability: {}}} if modern else None,
            )
        key = f"input-{self._elicit_count}"
        self._elicit_count += 1
        if modern:
            answer = (self._input_responses or {}).get(key)
            if answer is None:
                raise InputRequired(key, {"method": method, "params": params})
            return answer
        if self._peer is None:
            raise ElicitationError(INTERNAL_ERROR, f"{method} needs a connected client")
        return await self._peer.request(method, params)


def _is_modern(version: str | None) -> bool:
    # imported here: aircore.protocol imports this module
    from aircore.protocol.modern import MODERN_VERSIONS

    return version in MODERN_VERSIONS


def _elicit_result(answer: Any) -> ElicitResult:
    if not isinstance(answer, Mapping) or answer.get("action") not in (
        "accept",
        "decline",
        "cancel",
    ):
        raise ElicitationError(INTERNAL_ERROR, f"invalid elicitation answer: {answer!r}")
    content = answer.get("content")
    return ElicitResult(action=answer["action"], content=dict(content) if content else None)


def _is_call_info(ctx: ToolContext) -> CallInfo:
    """Checked by mypy: a ToolContext is what the meter reads from a call (airmeter's
    ``CallInfo``); a test checks the same at run time."""
    return ctx
