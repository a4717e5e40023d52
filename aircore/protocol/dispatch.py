"""Method dispatch: one decoded frame in, one response (or nothing) out."""

from __future__ import annotations

import base64
import binascii
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from aircore.context import LOG_LEVELS, InputRequired, RequestContext
from aircore.errors import (
    INTERNAL_ERROR,
    AirError,
    InvalidParamsError,
    MethodNotFoundError,
)
from aircore.execution import exception_text, exit_failure
from aircore.failure_log import logged_exc_info, masked_text
from aircore.protocol import legacy, modern
from aircore.protocol.framing import (
    KIND_NOTIFICATION,
    KIND_RESPONSE,
    check,
    error_response,
)
from aircore.protocol.mrtr import RoundInputs, StateSealer
from aircore.protocol.scoped import OPEN_HTTP, missing_scopes
from aircore.protocol.session import Connection, peer_for
from aircore.protocol.subscriptions import SUBSCRIPTION_ID_KEY, SubscriptionHub
from aircore.protocol.tasks import TASKS_EXTENSION, TaskStore
from aircore.protocol.tool_calls import ToolCalls
from aircore.settings import request_state_key
from airhttp.identity import current_identity

if TYPE_CHECKING:
    from aircore.types import ServerModel

__all__ = ["DEFAULT_PAGE_SIZE", "Dispatcher"]

logger = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 100
MODERN_ONLY = frozenset({"subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel"})
"""Methods only the 2026-07-28 era has (-32601 in the handshake era)."""

_Method = Callable[[Mapping[str, Any], Connection, Any], Awaitable[dict[str, Any]]]


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"air:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor) + "=" * (-len(str(cursor)) % 4)).decode()
        prefix, _, raw = text.partition(":")
        offset = int(raw)
        if prefix != "air" or offset < 0:
            raise ValueError(text)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidParamsError(f"invalid cursor {cursor!r}") from None
    return offset


class Dispatcher:
    """Routes JSON-RPC messages of both eras to an :class:`~aircore.server.AirServer`."""

    def __init__(self, server: ServerModel, *, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        self.server = server
        self.page_size = page_size
        self.sealer = StateSealer(request_state_key())
        self.subscriptions = SubscriptionHub(server.capabilities)
        self.tasks = TaskStore(notify=self._task_changed)
        self.calls = ToolCalls(server, self.sealer, self.tasks)
        self._methods: dict[str, _Method] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "server/discover": self._discover,
            "tools/list": self._tools_list,
            "tools/call": self.calls.call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "completion/complete": self._complete,
            "subscriptions/listen": self._listen,
            "tasks/get": self.calls.tasks_get,
            "tasks/update": self.calls.tasks_update,
            "tasks/cancel": self.calls.tasks_cancel,
        }

    @property
    def modern_capabilities(self) -> dict[str, Any]:
        """The server's capabilities as ``server/discover`` shows them (with extensions)."""
        caps = dict(self.server.capabilities)
        extensions = dict(caps.get("extensions") or {})
        extensions.setdefault(TASKS_EXTENSION, {})
        caps["extensions"] = extensions
        return caps

    def close(self) -> None:
        """End every listen stream gracefully and cancel every running task (shutdown)."""
        self.subscriptions.close()
        self.tasks.close()

    async def _task_changed(self, detailed: dict[str, Any]) -> None:
        await self.subscriptions.publish("notifications/tasks", detailed)

    # ---- entry points -------------------------------------------------------------------
    async def handle(
        self,
        message: Any,
        conn: Connection,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """Handle one decoded message; return the response, or ``None`` for notifications
        and client responses."""
        kind, error = check(message)
        if error is not None:
            return error
        if kind == KIND_RESPONSE:
            conn.resolve(message)
            return None
        if kind == KIND_NOTIFICATION:
            self.notification(message, conn)
            return None
        return await self.request(message, conn, headers=headers)

    async def request(
        self,
        message: dict[str, Any],
        conn: Connection,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Handle one well-formed request (see :meth:`handle`)."""
        msg_id = message["id"]
        method = message["method"]
        params = message.get("params") or {}
        try:
            if modern.is_modern(method, params):
                version, caps, info = modern.check_envelope(method, params, headers)
                conn.era = "modern"
                conn.protocol_version = version
                conn.client_capabilities = caps
                if info is not None:
                    conn.client_info = info
                handler = None if method in modern.REMOVED_METHODS else self._methods.get(method)
                if handler is None:
                    raise MethodNotFoundError(f"Method not found: {method}", data=method)
                if headers is not None and method == "tools/call":
                    self.calls.check_param_headers(params, headers)
                    conn.authorization = headers.get("authorization")
                result = await handler(params, conn, msg_id)
                result = modern.decorate(method, result, self.server.server_info)
            else:
                handler = None if method in MODERN_ONLY else self._methods.get(method)
                if handler is None:
                    raise MethodNotFoundError(f"Method not found: {method}", data=method)
                result = await handler(params, conn, msg_id)
        except AirError as exc:
            return error_response(msg_id, exc.code, exc.message, exc.data)
        except Exception as exc:
            # masked, cut and bounded like a tool's failure: no secret, no 200 KB traceback
            logger.error("internal error handling %s", method, exc_info=logged_exc_info(exc))
            text = masked_text(exception_text(exc))
            return error_response(msg_id, INTERNAL_ERROR, f"Internal error: {text}")
        except BaseException as exc:  # SystemExit, a stray CancelledError …: not an end
            failure = exit_failure(f"a handler of {method}", exc)
            if failure is None:
                raise
            logger.error("internal error handling %s", method, exc_info=logged_exc_info(exc))
            return error_response(msg_id, INTERNAL_ERROR, f"Internal error: {failure.message}")
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def notification(self, message: dict[str, Any], conn: Connection) -> None:
        """Handle a client notification (``initialized``, ``cancelled``; others ignored)."""
        method = message["method"]
        params = message.get("params") or {}
        if method == "notifications/initialized":
            conn.initialized = True
        elif method == "notifications/cancelled" and isinstance(params, dict):
            rid = params.get("requestId")
            # a request id is a string or a number: anything else (a list…) matches nothing
            task = conn.inflight.get(rid) if isinstance(rid, str | int) else None
            if task is not None:
                logger.debug("cancelling request %r: %s", rid, params.get("reason"))
                task.cancel()
        # every other notification is accepted and ignored, as the spec allows

    # ---- lifecycle ----------------------------------------------------------------------
    async def _initialize(
        self, params: Mapping[str, Any], conn: Connection, _id: Any
    ) -> dict[str, Any]:
        version = legacy.negotiate(params.get("protocolVersion"))
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        legacy.check_declaration(caps, info)
        conn.era = "legacy"
        conn.protocol_version = version
        conn.client_capabilities = caps if isinstance(caps, Mapping) else {}
        conn.client_info = info if isinstance(info, Mapping) else None
        return legacy.initialize_result(
            version=version,
            capabilities=self.server.capabilities,
            server_info=self.server.server_info,
            instructions=self.server.instructions,
        )

    async def _ping(self, _p: Mapping[str, Any], _c: Connection, _id: Any) -> dict[str, Any]:
        return {}

    async def _set_level(self, p: Mapping[str, Any], conn: Connection, _id: Any) -> dict[str, Any]:
        level = p.get("level")
        if level not in LOG_LEVELS:
            raise InvalidParamsError(f"logging/setLevel: unknown level {level!r}")
        conn.log_level = level
        return {}

    async def _subscribe(self, p: Mapping[str, Any], conn: Connection, _id: Any) -> dict[str, Any]:
        uri = p.get("uri")
        if not isinstance(uri, str):
            raise InvalidParamsError("resources/subscribe: params.uri must be a string")
        conn.subscriptions.add(uri)
        self.server.subscribers.add(conn)
        return {}

    async def _unsubscribe(
        self, p: Mapping[str, Any], conn: Connection, _id: Any
    ) -> dict[str, Any]:
        uri = p.get("uri")
        if not isinstance(uri, str):
            raise InvalidParamsError("resources/unsubscribe: params.uri must be a string")
        conn.subscriptions.discard(uri)
        return {}

    async def _complete(self, p: Mapping[str, Any], _c: Connection, _id: Any) -> dict[str, Any]:
        ref = p.get("ref")
        argument = p.get("argument")
        if not isinstance(ref, Mapping) or not isinstance(argument, Mapping):
            raise InvalidParamsError("completion/complete: params.ref and params.argument needed")
        name, value = argument.get("name"), argument.get("value", "")
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidParamsError("completion/complete: argument.name/value must be strings")
        completer = None
        if ref.get("type") == "ref/prompt":
            prompt = self.server.prompts.get(str(ref.get("name")))
            if prompt is None:
                raise InvalidParamsError(f"Unknown prompt: {ref.get('name')}")
            completer = prompt.complete
        elif ref.get("type") == "ref/resource":
            uri = ref.get("uri")
            found = [r for r in self.server.resources if r.uri == uri]
            if not found:
                raise InvalidParamsError(f"Resource not found: {uri}")
            completer = found[0].complete
        else:
            raise InvalidParamsError(f"completion/complete: unknown ref type {ref.get('type')!r}")
        values: list[str] = []
        if completer is not None:
            out = completer(name, value)
            if inspect.isawaitable(out):
                out = await out
            values = [str(v) for v in out]
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }

    async def _discover(self, _p: Mapping[str, Any], _c: Connection, _id: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "supportedVersions": list(modern.MODERN_VERSIONS),
            "capabilities": self.modern_capabilities,
        }
        if self.server.instructions:
            out["instructions"] = self.server.instructions
        return out

    # ---- lists ----------------------------------------------------------------------------
    def _page(
        self, items: list[dict[str, Any]], key: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        start = _decode_cursor(params.get("cursor"))
        if start > len(items):
            raise InvalidParamsError(f"invalid cursor {params.get('cursor')!r}")
        end = start + self.page_size
        out: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            out["nextCursor"] = _encode_cursor(end)
        return out

    async def _tools_list(self, p: Mapping[str, Any], _c: Connection, _id: Any) -> dict[str, Any]:
        tools = self.server.tool_listing()
        identity = current_identity()  # an OAuth caller sees only the tools it may call
        known = self.server.tools
        if identity is not None and identity.auth == "oauth":
            aliases = self.server.aliases
            tools = [
                tool
                for tool in tools
                if not missing_scopes(
                    identity, tool["name"], known[tool["name"]].required_scopes, aliases
                )
            ]
        elif identity is None and OPEN_HTTP.get():  # nobody may call a scoped tool there
            tools = [tool for tool in tools if not known[tool["name"]].required_scopes]
        return self._page(tools, "tools", p)

    async def _resources_list(
        self, p: Mapping[str, Any], _c: Connection, _id: Any
    ) -> dict[str, Any]:
        items = [r.describe() for r in self.server.resources if not r.is_template]
        return self._page(items, "resources", p)

    async def _templates_list(
        self, p: Mapping[str, Any], _c: Connection, _id: Any
    ) -> dict[str, Any]:
        items = [r.describe() for r in self.server.resources if r.is_template]
        return self._page(items, "resourceTemplates", p)

    async def _prompts_list(self, p: Mapping[str, Any], _c: Connection, _id: Any) -> dict[str, Any]:
        return self._page([pr.describe() for pr in self.server.prompts.values()], "prompts", p)

    # ---- streams, resources and prompts -------------------------------------------------
    async def _listen(
        self, params: Mapping[str, Any], conn: Connection, msg_id: Any
    ) -> dict[str, Any]:
        honored = self.subscriptions.honor(params, conn.client_capabilities)
        sub = self.subscriptions.open(msg_id, honored, peer_for(conn))
        self.server.subscribers.add(sub)  # resource_updated reaches listeners of both eras
        try:
            await sub.acknowledge()
            await sub.closed.wait()
        finally:
            self.subscriptions.discard(sub)
            self.server.subscribers.discard(sub)
        return {"_meta": {SUBSCRIPTION_ID_KEY: msg_id}}

    async def _resources_read(
        self, params: Mapping[str, Any], _c: Connection, _id: Any
    ) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParamsError("resources/read: params.uri must be a string")
        for resource in self.server.resources:
            variables = resource.match(uri)
            if variables is not None:
                return {"contents": await resource.read(uri, variables)}
        raise InvalidParamsError(f"Resource not found: {uri}", data={"uri": uri})

    async def _prompts_get(
        self, params: Mapping[str, Any], conn: Connection, _id: Any
    ) -> dict[str, Any]:
        name = params.get("name")
        prompt = self.server.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise InvalidParamsError(f"Unknown prompt: {name}", data={"name": name})
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise InvalidParamsError("prompts/get: params.arguments must be an object")
        if conn.era != "modern":
            ctx = RequestContext(
                protocol_version=conn.protocol_version,
                client_capabilities=conn.client_capabilities,
                peer=peer_for(conn),
            )
            return await prompt.render(arguments, ctx)
        inputs = RoundInputs.open(self.sealer, params, ("prompts/get", name, arguments))
        ctx = RequestContext(
            protocol_version=conn.protocol_version,
            client_capabilities=conn.client_capabilities,
            inputs=inputs,
        )
        try:
            return await prompt.render(arguments, ctx)
        except InputRequired as need:
            return inputs.result(need, self.sealer)
