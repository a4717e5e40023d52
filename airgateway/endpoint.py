"""The gateway's ``/mcp`` endpoint: Streamable HTTP in both eras, in front of the upstreams.

Behind ``airhttp.GuardedApp`` (Host, Origin, body and in-flight limits); here the bearer token
names a client, then one JSON-RPC request per POST.
2026-07-28 requests are stateless (headers checked against the body, as aircore does);
legacy sessions live in the store (:mod:`airgateway.sessions`), so any gateway replica can
serve them. An answer is JSON, or SSE when the call may send messages first (progress, logs,
legacy elicitation/sampling passed through from the upstream).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aircore.context import LOG_LEVELS
from aircore.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    AirError,
)
from aircore.protocol import legacy, modern
from aircore.protocol.framing import (
    KIND_RESPONSE,
    cancelled_response,
    check,
    error_response,
)
from aircore.transports.streamable import (
    SESSION_HEADER,
    HttpRequest,
    RefusedError,
    SseResponse,
    StreamableEndpoint,
    answer,
    disconnected,
    may_talk_first,
    reply,
    reply_json,
    watch,
)
from airgateway import eras
from airgateway._listing import LIST_METHODS, page
from airgateway._wire import HOP_HEADER
from airgateway.access import Unauthorized, Unmatched
from airgateway.config import ClientConfig
from airgateway.errors import GatewayError
from airgateway.fast import FastPath
from airgateway.gateway import Gateway
from airgateway.rounds import HeldCall
from airgateway.sessions import Session
from airgateway.tasks import TASK_METHODS
from airgateway.types import JSONDict
from airhttp.guards import bearer_token
from airhttp.identity import current_identity
from airhttp.media import accepts

__all__ = ["DEFAULT_MAX_BODY", "GatewayEndpoint", "GatewayHandler"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 4 * 1024 * 1024
MAX_LISTENERS = 1024
"""Open notification streams (legacy GET, 2026-07-28 ``subscriptions/listen``) at most."""
LISTENER_BACKLOG = 64
CLIENT_ANSWER_TIMEOUT = 300.0
MAX_INPUT_ROUNDS = 10
_REMOVED_IN_MODERN = frozenset(
    {"ping", "initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
CAPABILITIES: JSONDict = {
    "tools": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "prompts": {"listChanged": True},
    "logging": {},
    "completions": {},
}


class _Call:
    """One request being handled: who sent it, in which era, where its messages go."""

    __slots__ = ("client", "msg_id", "session", "stream", "version")

    def __init__(
        self, client: ClientConfig | None, msg_id: Any, version: str, session: Session | None
    ) -> None:
        self.client = client
        self.msg_id = msg_id
        self.version = version
        self.session = session
        self.stream: SseResponse | None = None

    @property
    def modern(self) -> bool:
        return self.session is None

    @property
    def key(self) -> str | None:
        if self.session is not None:
            return self.session.sid
        return None if self.client is None else self.client.name


_Method = Callable[[_Call, JSONDict], Awaitable[JSONDict]]
_Owner = tuple[str | None, str | None]
"""Who a server→client request was sent to: the legacy session id and the client's name."""


class GatewayHandler:
    """The gateway's side of ``/mcp``: a
    :class:`~aircore.transports.streamable.StreamableHandler` over the router (the shared
    endpoint does the HTTP: body, media types, SSE, the fast path).

    Args:
        gateway: the started gateway.
    """

    allow = b"GET, POST, DELETE"

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.fast = FastPath(gateway)
        """The fast path's call (a 2026-07-28 ``tools/call`` answered with JSON)."""
        self._inflight: dict[tuple[str, Any], asyncio.Task[Any]] = {}
        self._pending: dict[str, tuple[_Owner, asyncio.Future[JSONDict]]] = {}
        """Server→client requests awaiting an answer: id → (who was asked, the answer)."""
        self._ids = itertools.count(1)
        self._listeners = 0
        self._methods: dict[str, _Method] = {
            "initialize": self._initialize,
            "server/discover": self._discover,
            "ping": self._ping,
            "tools/call": self._tools_call,
            "resources/read": self._resources_read,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._subscribe,
            **{method: self._task_method(method) for method in TASK_METHODS},
        }

    # ---- admission (the seam authorization uses) -------------------------------------------
    def identify(self, headers: Mapping[str, str]) -> ClientConfig | None:
        """The client the bearer token names, or the ``clients:`` entry an OAuth caller (the
        current :class:`~airhttp.Identity`, set by the OAuth guard) matches (``None``: the
        gateway names no clients).

        Host and Origin are checked before (``airhttp.GuardedApp``, see :mod:`airgateway.serve`);
        with ``auth:``, the token too (``airhttp.OAuthGuard``).

        Raises:
            RefusedError: 401, the token names no client; 403, no entry matches the caller.
        """
        identity = current_identity()
        # an OAuth caller is matched on its identity: its token was read (and checked) by
        # the guard, and is not parsed again here
        given = None
        if identity is None or identity.auth != "oauth":
            given = bearer_token(headers.get("authorization"))
        try:
            return self.gateway.access.identify(given, identity)
        except Unauthorized:
            raise RefusedError(
                401, INVALID_REQUEST, "Unauthorized", headers=[(b"www-authenticate", b"Bearer")]
            ) from None
        except Unmatched:
            text = "Forbidden: no clients: entry of the gateway matches this caller"
            raise RefusedError(403, INVALID_REQUEST, text) from None

    def admit(self, method: str, headers: Mapping[str, str]) -> ClientConfig | None:
        """Who sends this request, before its body is read: a loop (508), the bearer token
        (401), and a ``tools/call`` whose ``Mcp-Name`` the client may not call (403, routed
        from the headers).

        Raises:
            RefusedError: the request is refused.
        """
        if headers.get(HOP_HEADER) == self.gateway.id:
            text = "the gateway is its own upstream here (a loop): refused"
            raise RefusedError(508, INVALID_REQUEST, text)
        client = self.identify(headers)
        if method == "POST" and headers.get("mcp-method") == "tools/call" and client is not None:
            name = headers.get("mcp-name")  # route from headers before reading the body
            if name is not None and not name.startswith("=?"):
                try:
                    self.gateway.access.check(client, name)
                except GatewayError as exc:
                    raise RefusedError(403, exc.code, exc.message, data=exc.data) from exc
        return client

    # ---- DELETE ---------------------------------------------------------------------------
    async def delete(self, request: HttpRequest[ClientConfig | None]) -> None:
        sid = request.headers.get(SESSION_HEADER)
        found = sid is not None and await self.gateway.sessions.end(sid)
        await reply(request.send, 200 if found else 404)

    # ---- POST -----------------------------------------------------------------------------
    async def post(self, message: Any, request: HttpRequest[ClientConfig | None]) -> None:
        kind, error = check(message)
        if error is not None:
            await reply_json(request.send, error, 400)
            return
        headers, client = request.headers, request.identity
        if kind == KIND_RESPONSE:  # as aircore: an id not asked of this responder is ignored
            pending = self._pending.get(str(message.get("id")))
            responder = (headers.get(SESSION_HEADER), None if client is None else client.name)
            if pending is not None and pending[0] == responder and not pending[1].done():
                pending[1].set_result(message)
            await reply(request.send, 202)
            return
        if "id" not in message:
            self._notification(message, headers.get(SESSION_HEADER))
            await reply(request.send, 202)
            return
        await self._request(message, request)

    def _notification(self, message: JSONDict, sid: str | None) -> None:
        if message["method"] != "notifications/cancelled" or sid is None:
            return
        params = message.get("params") or {}
        request_id = params.get("requestId")
        if not isinstance(request_id, str | int):  # the client's input: never hashed unchecked
            return
        task = self._inflight.get((sid, request_id))
        if task is not None:
            task.cancel()

    async def _request(self, message: JSONDict, request: HttpRequest[ClientConfig | None]) -> None:
        method, msg_id = message["method"], message["id"]
        params = message.get("params") or {}
        headers, client, send = request.headers, request.identity, request.send
        extra: list[tuple[bytes, bytes]] = []
        is_modern = modern.is_modern(method, params)
        if is_modern:
            try:
                version, _caps, _info = modern.check_envelope(method, params, headers)
                if method in _REMOVED_IN_MODERN:
                    raise AirError(METHOD_NOT_FOUND, f"Method not found: {method}", data=method)
            except AirError as exc:
                await reply_json(send, error_response(msg_id, exc.code, exc.message, exc.data))
                return
            call = _Call(client, msg_id, version, None)
        elif method == "initialize":
            call = _Call(client, msg_id, "", None)
        else:
            sid = headers.get(SESSION_HEADER)
            session = None if sid is None else await self.gateway.sessions.get(sid)
            if session is None:
                text = (
                    "Bad Request: Mcp-Session-Id header is required"
                    if sid is None
                    else "Session not found"
                )
                refusal = error_response(msg_id, INVALID_REQUEST, text)
                await reply_json(send, refusal, 400 if sid is None else 404)
                return
            call = _Call(client, msg_id, session.version, session)
        streams = method == "subscriptions/listen" or (
            request.accepts_sse
            and (not request.accepts_json or may_talk_first(method, params, is_modern))
        )
        if streams:
            call.stream = SseResponse(send, extra)
        task = asyncio.ensure_future(self._dispatch(call, method, params, extra))
        if call.session is not None:
            self._inflight[(call.session.sid, msg_id)] = task
        try:
            response = await watch(task, request.receive, cancel_on_disconnect=is_modern)
        finally:
            if call.session is not None:
                self._inflight.pop((call.session.sid, msg_id), None)
        if response is None:
            if is_modern:  # the client closed the POST: nobody is left to answer
                if call.stream is not None:
                    await call.stream.close()
                return
            # legacy: notifications/cancelled ended the call, but its POST is still open and
            # the 2025-era wire ends a request only with a response (so does the SDK's server)
            response = cancelled_response(call.msg_id)
        await answer(send, response, call.stream, extra)

    async def _dispatch(
        self, call: _Call, method: str, params: JSONDict, extra: list[tuple[bytes, bytes]]
    ) -> JSONDict:
        try:
            listed = LIST_METHODS.get(method)
            if listed is not None:
                gateway = self.gateway
                scoped = gateway.scopes_of_tools
                hidden = gateway.hidden_from_caller if scoped is not None else None
                result = page(listed(gateway.index, gateway.access, call.client, scoped, hidden),
                              listed.key, params)  # fmt: skip
            elif method == "subscriptions/listen" and call.modern:
                result = await self._listen(call, params)
            else:
                handler = self._methods.get(method)
                if handler is None or (method == "server/discover" and not call.modern):
                    raise AirError(METHOD_NOT_FOUND, f"Method not found: {method}", data=method)
                result = await handler(call, params)
                if method == "initialize" and call.session is not None:
                    extra.append((b"mcp-session-id", call.session.sid.encode()))
        except (GatewayError, AirError) as exc:
            data = exc.data
            return error_response(call.msg_id, exc.code, exc.message, data)
        except Exception as exc:
            logger.exception("internal error handling %s", method)
            return error_response(call.msg_id, INTERNAL_ERROR, f"Internal error: {exc}")
        if call.modern:
            result = modern.decorate(method, dict(result), eras.GATEWAY_INFO)
        elif "resultType" in result:
            result = {k: v for k, v in result.items() if k != "resultType"}
        return {"jsonrpc": "2.0", "id": call.msg_id, "result": result}

    # ---- lifecycle methods ----------------------------------------------------------------
    async def _initialize(self, call: _Call, params: JSONDict) -> JSONDict:
        call.version = legacy.negotiate(params.get("protocolVersion"))
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        legacy.check_declaration(caps, info)
        name = info.get("name") if isinstance(info, Mapping) else None
        call.session = await self.gateway.sessions.create(
            version=call.version,
            capabilities=caps if isinstance(caps, dict) else {},
            client=name if isinstance(name, str) else None,
        )
        return legacy.initialize_result(
            version=call.version,
            capabilities=CAPABILITIES,
            server_info=eras.GATEWAY_INFO,
            instructions=None,
        )

    async def _discover(self, _call: _Call, _params: JSONDict) -> JSONDict:
        return {"supportedVersions": list(modern.MODERN_VERSIONS), "capabilities": CAPABILITIES}

    async def _ping(self, _call: _Call, _params: JSONDict) -> JSONDict:
        return {}

    async def _set_level(self, call: _Call, params: JSONDict) -> JSONDict:
        level = params.get("level")
        if level not in LOG_LEVELS or call.session is None:
            raise AirError(INVALID_PARAMS, f"logging/setLevel: unknown level {level!r}")
        call.session = await self.gateway.sessions.set_level(call.session, str(level))
        return {}

    async def _subscribe(self, call: _Call, params: JSONDict) -> JSONDict:
        uri = params.get("uri")
        server = self.gateway.index.resource_server(uri) if isinstance(uri, str) else None
        if server is None:
            raise AirError(INVALID_PARAMS, f"Resource not found: {uri}", data={"uri": uri})
        return {}

    # ---- forwarded methods -----------------------------------------------------------------
    def _relay(self, call: _Call) -> Callable[[JSONDict], Awaitable[JSONDict | None]]:
        async def on_message(message: JSONDict) -> JSONDict | None:
            if "id" in message:
                if call.modern or call.stream is None:
                    return {"error": {"code": METHOD_NOT_FOUND,
                                      "message": "the client cannot be asked now"}}  # fmt: skip
                return await self._ask_client(call, message["method"], message.get("params"))
            if call.stream is not None and _wanted(message, call):
                await call.stream.event(message)
            return None

        return on_message

    async def _ask_client(self, call: _Call, method: str, params: Any) -> JSONDict:
        """Send a server→client request on the call's stream and wait for the answer."""
        if call.stream is None or call.session is None:
            raise AirError(INTERNAL_ERROR, f"cannot send {method}: the call has no stream")
        gid = f"gw-{next(self._ids)}"
        future: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        owner = (call.session.sid, None if call.client is None else call.client.name)
        self._pending[gid] = (owner, future)
        try:
            request = {"jsonrpc": "2.0", "id": gid, "method": method, "params": params or {}}
            await call.stream.event(request)
            async with asyncio.timeout(CLIENT_ANSWER_TIMEOUT):
                answer = await future
        except TimeoutError:
            raise AirError(INTERNAL_ERROR, f"the client did not answer {method}") from None
        finally:
            self._pending.pop(gid, None)
        return {k: v for k, v in answer.items() if k in ("result", "error")}

    async def _tools_call(self, call: _Call, params: JSONDict) -> JSONDict:
        gateway = self.gateway
        if call.modern:
            rounds = gateway.rounds
            name = None if call.client is None else call.client.name
            if rounds.ours(params):  # the answer to a legacy upstream's question
                return await rounds.resume(name, params)
            entry = gateway.tool(params.get("name"))
            if gateway.legacy_era(entry.server):
                return await rounds.start(name, lambda held: self._held_call(call, params, held))
        on_message = self._relay(call)
        if call.session is not None:  # a 2026-07-28 upstream logs only when asked per request
            meta = params.get("_meta")
            meta = meta if isinstance(meta, dict) else {}
            params = {**params, "_meta": {**meta, modern.LOG_LEVEL_KEY: call.session.level}}
        for _round in range(MAX_INPUT_ROUNDS):
            result = await self._call_tool(call, params, on_message)
            if call.modern or result.get("resultType") != "input_required":
                return result
            # a 2026-07-28 upstream asks for input; a legacy client answers server→client requests
            answers: JSONDict = {}
            requests = result.get("inputRequests")
            for key, request in (requests if isinstance(requests, dict) else {}).items():
                answer = await self._ask_client(call, request.get("method"), request.get("params"))
                if "error" in answer:
                    raise AirError(INTERNAL_ERROR, f"the client refused {request.get('method')}")
                answers[key] = answer.get("result")
            params = {
                **params,
                "inputResponses": answers,
                "requestState": result.get("requestState"),
            }
        raise AirError(INTERNAL_ERROR, "the upstream asked for input too many times")

    async def _held_call(self, call: _Call, params: JSONDict, held: HeldCall) -> JSONDict:
        """A 2026-07-28 client's call to a legacy-era upstream: its questions become rounds."""
        relay = self._relay(call)

        async def on_message(message: JSONDict) -> JSONDict | None:
            if "id" in message:
                return await held.relay(message)
            return await relay(message)

        return await self._call_tool(call, params, on_message)

    async def _call_tool(
        self,
        call: _Call,
        params: JSONDict,
        on_message: Callable[[JSONDict], Awaitable[JSONDict | None]],
    ) -> JSONDict:
        return await self.gateway.call_tool(
            params,
            client=call.client,
            session_key=call.key,
            on_message=on_message,
            request_id=call.msg_id,
            protocol_version=call.version,
        )

    async def _resources_read(self, call: _Call, params: JSONDict) -> JSONDict:
        uri = params.get("uri")
        server = self.gateway.index.resource_server(uri) if isinstance(uri, str) else None
        if server is None:
            raise AirError(INVALID_PARAMS, f"Resource not found: {uri}", data={"uri": uri})
        return await self.gateway.forward(
            server, "resources/read", params, session_key=call.key, on_message=self._relay(call)
        )

    async def _prompts_get(self, call: _Call, params: JSONDict) -> JSONDict:
        name = params.get("name")
        found = self.gateway.index.prompt(name) if isinstance(name, str) else None
        if found is None:
            raise AirError(INVALID_PARAMS, f"Unknown prompt: {name}", data={"name": name})
        self.gateway.access.check(call.client, str(name))
        server, upstream = found
        return await self.gateway.forward(
            server,
            "prompts/get",
            {**params, "name": upstream},
            session_key=call.key,
            on_message=self._relay(call),
        )

    async def _complete(self, call: _Call, params: JSONDict) -> JSONDict:
        ref = params.get("ref")
        ref = ref if isinstance(ref, dict) else {}
        server: str | None = None
        if ref.get("type") == "ref/prompt":
            found = self.gateway.index.prompt(str(ref.get("name")))
            if found is not None:
                server, upstream = found
                params = {**params, "ref": {**ref, "name": upstream}}
        elif ref.get("type") == "ref/resource":
            server = self.gateway.index.resource_server(str(ref.get("uri")))
        if server is None:
            raise AirError(INVALID_PARAMS, f"completion/complete: unknown ref {ref!r}")
        return await self.gateway.forward(
            server, "completion/complete", params, session_key=call.key
        )

    def _task_method(self, method: str) -> _Method:
        async def handler(call: _Call, params: JSONDict) -> JSONDict:
            if not call.modern:  # the tasks extension belongs to 2026-07-28
                raise AirError(METHOD_NOT_FOUND, f"Method not found: {method}", data=method)
            return await self.gateway.task_request(method, params, client=call.client)

        return handler

    # ---- notification streams --------------------------------------------------------------
    async def _listen(self, call: _Call, params: JSONDict) -> JSONDict:
        """2026-07-28 ``subscriptions/listen``: acknowledge, then list changes until closed."""
        wanted = params.get("notifications")
        wanted = wanted if isinstance(wanted, dict) else {}
        honored = {k: True for k in ("toolsListChanged", "promptsListChanged",
                                     "resourcesListChanged") if wanted.get(k) is True}  # fmt: skip
        meta = {"io.modelcontextprotocol/subscriptionId": call.msg_id}
        methods = {f"notifications/{k.removesuffix('ListChanged')}/list_changed"
                   for k in honored}  # fmt: skip
        stream = call.stream
        assert stream is not None
        ack = {"notifications": honored, "_meta": meta}
        await stream.event(
            {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack}
        )
        async for message in self._changes():
            if message["method"] in methods:
                await stream.event({**message, "params": {"_meta": meta}})
        return {"_meta": meta}

    async def _changes(self) -> Any:
        if self._listeners >= MAX_LISTENERS:
            raise AirError(INTERNAL_ERROR, "too many notification streams")
        queue: asyncio.Queue[JSONDict] = asyncio.Queue(LISTENER_BACKLOG)

        def put(message: JSONDict) -> None:
            with contextlib.suppress(asyncio.QueueFull):  # level-triggered: a drop loses nothing
                queue.put_nowait(message)

        self._listeners += 1
        stop = self.gateway.listen(put)
        try:
            while True:
                yield await queue.get()
        finally:
            stop()
            self._listeners -= 1

    async def get(self, request: HttpRequest[ClientConfig | None]) -> None:
        """Legacy: the session's stream of list-changed notifications."""
        headers, send = request.headers, request.send
        sid = headers.get(SESSION_HEADER)
        if sid is None or not accepts(headers.get("accept"), "text/event-stream"):
            await reply(send, 405, None, [(b"allow", b"POST, DELETE")])
            return
        if await self.gateway.sessions.get(sid) is None:
            await reply_json(send, error_response(None, INVALID_REQUEST, "Session not found"), 404)
            return
        stream = SseResponse(send)
        gone = asyncio.ensure_future(disconnected(request.receive))
        try:
            await stream.open()
            # the head leaves with the first body part: send it now, so the client knows its
            # stream is open before the first change (and a disconnect finds it answered)
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            changes = self._changes()
            nxt: asyncio.Future[JSONDict] | None = None
            try:
                while True:
                    nxt = asyncio.ensure_future(anext(changes))
                    done, _ = await asyncio.wait({nxt, gone}, return_when=asyncio.FIRST_COMPLETED)
                    if nxt not in done:
                        break
                    await stream.event(nxt.result())
            finally:
                # The generator is still running inside the pending ``nxt``: close it there
                # (its ``finally`` runs) before ``aclose``, which refuses a running generator.
                if nxt is not None and not nxt.done():
                    nxt.cancel()
                    await asyncio.wait({nxt})
                await changes.aclose()
            await stream.close()
        finally:
            gone.cancel()


class GatewayEndpoint(StreamableEndpoint["ClientConfig | None"]):
    """The ASGI endpoint serving ``/mcp`` for a :class:`~airgateway.gateway.Gateway`: the shared
    :class:`~aircore.transports.streamable.StreamableEndpoint` over a :class:`GatewayHandler`
    (its :meth:`fast` is the server's raw-request hook).

    Args:
        gateway: the started gateway.
        max_body: the request body limit in bytes.
    """

    def __init__(self, gateway: Gateway, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.gateway_handler = GatewayHandler(gateway)
        super().__init__(self.gateway_handler, max_body=max_body)


def _wanted(message: JSONDict, call: _Call) -> bool:
    """Whether a log message passes the legacy session's ``logging/setLevel``."""
    if message.get("method") != "notifications/message" or call.session is None:
        return True
    params = message.get("params")
    level = params.get("level") if isinstance(params, dict) else None
    if level not in LOG_LEVELS:
        return True
    return LOG_LEVELS[level] >= LOG_LEVELS.get(call.session.level, 0)
