"""``tools/call`` in both eras, and the ``tasks/*`` methods of calls that became tasks.

Handshake era: the call runs through the server's chain; questions to the client are
server→client requests. 2026-07-28: questions make the call answer ``input_required``
(:mod:`~aircore.protocol.mrtr`); when the client declared the tasks extension the call runs
beside the request, which answers its result, an ``input_required`` round or, once the handler
called ``start_task``, the ``CreateTaskResult`` (:mod:`~aircore.protocol.tasks`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aircore.context import InputRequired, ToolContext
from aircore.errors import INVALID_REQUEST, AirError, InvalidParamsError
from aircore.protocol import modern
from aircore.protocol.mrtr import RoundInputs, StateSealer, read_responses
from aircore.protocol.param_headers import ParamHeader, check_param_headers, param_headers
from aircore.protocol.renamed import DEPRECATED_META_KEY, deprecation_notice
from aircore.protocol.scoped import OPEN_HTTP, missing_scopes
from aircore.protocol.session import Connection, peer_for
from aircore.protocol.tasks import (
    CallTasking,
    TaskRecord,
    TaskStore,
    client_has_tasks,
    missing_tasks_capability,
    task_owner,
)
from airhttp.identity import current_identity
from airmeter.hops import HOP_META_KEY, METERED_META_KEY, store_identity
from airmeter.trace_context import TRACEPARENT, trace_context_of

if TYPE_CHECKING:
    from aircore.types import ServerModel

__all__ = ["ToolCalls"]

logger = logging.getLogger(__name__)


class ToolCalls:
    """The ``tools/call`` and ``tasks/*`` methods of one server.

    Args:
        server: the server whose tools run.
        sealer: signs and checks ``requestState``.
        tasks: where calls that became tasks live.
    """

    def __init__(self, server: ServerModel, sealer: StateSealer, tasks: TaskStore) -> None:
        self.server = server
        self.sealer = sealer
        self.tasks = tasks
        self._param_headers: dict[str, tuple[Any, tuple[ParamHeader, ...]]] = {}
        self._warned: set[str] = set()  # deprecated aliases already logged (bounded by them)

    def check_param_headers(self, params: Mapping[str, Any], headers: Mapping[str, str]) -> None:
        """Check the ``Mcp-Param-*`` headers of an HTTP ``tools/call`` against its arguments.

        Raises:
            AirError: -32020 on a mismatch; DefinitionError for a bad ``x-mcp-header``.
        """
        name = params.get("name")
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return  # an unknown tool is refused by tools/call itself
        cached = self._param_headers.get(tool.name)
        if cached is None or cached[0] is not tool.input_schema:
            cached = (tool.input_schema, param_headers(tool.input_schema, tool=tool.name))
            self._param_headers[tool.name] = cached
        if cached[1]:
            check_param_headers(cached[1], params.get("arguments"), headers)

    async def call(
        self, params: Mapping[str, Any], conn: Connection, msg_id: Any
    ) -> dict[str, Any]:
        """``tools/call``.

        Raises:
            InvalidParamsError: a bad name, arguments, ``requestState`` or ``inputResponses``.
            AirError: protocol-level failures of the call (-32020/-32021/-32022).
        """
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParamsError("tools/call: params.name must be a string")
        tool = self.server.tools.get(name)
        if tool is None:
            renamed = self.server.aliases.get(name)
            if renamed is not None and renamed in self.server.tools:
                return await self._deprecated(name, renamed, params, conn, msg_id)
            raise InvalidParamsError(f"Unknown tool: {name}", data={"name": name})
        identity = current_identity()  # the HTTP guard answers 403 first; this holds anyway
        if identity is not None:
            missing = missing_scopes(identity, name, tool.required_scopes, self.server.aliases)
            if missing:
                raise AirError(
                    INVALID_REQUEST,
                    f"insufficient_scope: calling {name!r} needs {' '.join(sorted(missing))}",
                    data={"name": name, "scope": sorted(missing)},
                )
        elif tool.required_scopes and OPEN_HTTP.get():  # added after start: never to anyone
            raise AirError(
                INVALID_REQUEST,
                f"tool {name!r} requires OAuth scopes (required_scopes) but this HTTP server "
                "has no authorization (serve it with --auth-config FILE or --token)",
                data={"name": name, "scope": sorted(tool.required_scopes)},
            )
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise InvalidParamsError("tools/call: params.arguments must be an object")
        meta = params.get("_meta")
        is_modern = conn.era == "modern"
        inputs = (
            RoundInputs.open(self.sealer, params, ("tools/call", name, arguments))
            if is_modern
            else None
        )
        caps = conn.client_capabilities
        traceparent = tracestate = None
        if isinstance(meta, dict) and TRACEPARENT in meta:  # the caller's trace continues here
            traceparent, tracestate = trace_context_of(meta)
        tasking = (
            CallTasking(self.tasks, available=True, owner=task_owner(conn))
            if is_modern and client_has_tasks(caps)
            else None
        )
        ctx = ToolContext(
            tool=tool,
            arguments=arguments,
            server_name=self.server.name,
            state=self.server.state,
            store=self.server.store,
            request_id=str(msg_id),
            session_id=conn.session_id,
            protocol_version=conn.protocol_version,
            transport=conn.transport,
            client_name=conn.client_name,
            client_capabilities=caps,
            peer=peer_for(conn),
            progress_token=meta.get("progressToken") if isinstance(meta, dict) else None,
            inputs=inputs,
            log_level=(meta.get(modern.LOG_LEVEL_KEY) if isinstance(meta, dict) else None)
            if is_modern
            else conn.log_level,
            tasking=tasking,
            traceparent=traceparent,
            tracestate=tracestate,
        )
        hop = isinstance(meta, dict) and HOP_META_KEY in meta
        if inputs is None:
            return await (self._metered_hop(ctx) if hop else self.server.call_tool_ctx(ctx))
        if tasking is not None:
            return await self._call_or_task(ctx, inputs, tasking)
        try:
            return await (self._metered_hop(ctx) if hop else self.server.call_tool_ctx(ctx))
        except InputRequired as need:
            return inputs.result(need, self.sealer)

    async def _deprecated(
        self, old: str, new: str, params: Mapping[str, Any], conn: Connection, msg_id: Any
    ) -> dict[str, Any]:
        """A call by a deprecated alias (:mod:`aircore.definitions.renames`): the tool runs
        (and is metered) under its new name; the result's ``_meta`` says so, and the log once
        per alias."""
        notice = deprecation_notice(old, new)
        if old not in self._warned:
            self._warned.add(old)
            logger.warning("air: %s", notice["message"])
        result = await self.call({**params, "name": new}, conn, msg_id)
        meta = result.get("_meta")
        return {**result, "_meta": {**(meta if isinstance(meta, dict) else {}),
                                    DEPRECATED_META_KEY: notice}}  # fmt: skip

    async def _metered_hop(self, ctx: ToolContext) -> dict[str, Any]:
        """A gateway's hop: when this server meters the call, the answer's ``_meta`` says so
        (its record's ``call_id`` and time), and the gateway records a hop, not a second call
        (:mod:`airmeter.hops`)."""
        started = time.perf_counter()
        result = await self.server.call_tool_ctx(ctx)
        if self.server.meter is None:
            return result
        location = self.server.store_location
        said = {
            "callId": ctx.call_id,
            "latencyMs": (time.perf_counter() - started) * 1000.0,
            # a digest, never the URL: it may carry the store's password
            "store": store_identity(None if location is None else location.url),
        }
        meta = result.get("_meta")
        return {**result, "_meta": {**(meta if isinstance(meta, dict) else {}),
                                    METERED_META_KEY: said}}  # fmt: skip

    async def _call_or_task(
        self, ctx: ToolContext, inputs: RoundInputs, tasking: CallTasking
    ) -> dict[str, Any]:
        runner = asyncio.ensure_future(self.server.call_tool_ctx(ctx))
        started = asyncio.ensure_future(tasking.started.wait())
        try:
            await asyncio.wait({runner, started}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if tasking.record is None:
                runner.cancel()  # the client went away before the call became a task
            raise
        finally:
            started.cancel()
        record = tasking.record
        if record is not None:
            self.tasks.attach(record, runner)
            return {"resultType": "task", **record.envelope()}
        try:
            return runner.result()
        except InputRequired as need:
            return inputs.result(need, self.sealer)

    def _task(self, method: str, params: Mapping[str, Any], conn: Connection) -> TaskRecord:
        if not client_has_tasks(conn.client_capabilities):
            raise missing_tasks_capability(method)
        return self.tasks.get(params.get("taskId"))

    async def tasks_get(
        self, params: Mapping[str, Any], conn: Connection, _id: Any
    ) -> dict[str, Any]:
        """``tasks/get``: the task's ``DetailedTask``."""
        return self._task("tasks/get", params, conn).detailed()

    async def tasks_update(
        self, params: Mapping[str, Any], conn: Connection, _id: Any
    ) -> dict[str, Any]:
        """``tasks/update``: deliver ``inputResponses`` (keys not outstanding are ignored)."""
        record = self._task("tasks/update", params, conn)
        responses = read_responses(params)
        if responses is None:
            raise InvalidParamsError("tasks/update: params.inputResponses is required")
        self.tasks.update(record, responses)
        return {}

    async def tasks_cancel(
        self, params: Mapping[str, Any], conn: Connection, _id: Any
    ) -> dict[str, Any]:
        """``tasks/cancel``: cancel a running task (acknowledged for finished ones too)."""
        self.tasks.cancel(self._task("tasks/cancel", params, conn))
        return {}
