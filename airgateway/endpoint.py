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
    decode,
    error_response,
    parse_error,
)
from airgateway import eras
from airgateway._listing import LIST_METHODS, page
from airgateway._wire import (
    HOP_HEADER,
    Receive,
    Scope,
    Send,
    SseResponse,
    read_body,
    reply,
    reply_json,
    status_of,
)
from airgateway.access import Unauthorized
from airgateway.config import ClientConfig
from airgateway.errors import GatewayError
from airgateway.gateway import Gateway
from airgateway.rounds import HeldCall
from airgateway.sessions import Session
from airgateway.tasks import TASK_METHODS
from airgateway.types import JSONDict
from airhttp.guards import bearer_token
from airhttp.media import accepts, media_type

__all__ = ["DEFAULT_MAX_BODY", "GatewayEndpoint"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 4 * 1024 * 1024
MAX_LISTENERS = 1024
"""Open notification streams (legacy GET, 2026-07-28 ``subscriptions/listen``) at most."""
LISTENER_BACKLOG = 64
CLIENT_ANSWER_TIMEOUT = 300.0
MAX_INPUT_ROUNDS = 10
SESSION_HEADER = "mcp-session-id"
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


class GatewayEndpoint:
    """The ASGI endpoint serving ``/mcp`` for a :class:`~airgateway.gateway.Gateway`.

    Args:
        gateway: the started gateway.
        max_body: the request body limit in bytes.
    """

    def __init__(self, gateway: Gateway, *, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.gateway = gateway
        self.max_body = max_body
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

    # ---- guards ---------------------------------------------------------------------------
    async def admit(
        self, headers: Mapping[str, str], send: Send
    ) -> tuple[bool, ClientConfig | None]:
        """The client the bearer token names; answers 401 itself when it names none.

        Host and Origin are checked before (``airhttp.GuardedApp``, see :mod:`airgateway.serve`).
        """
        try:
            client = self.gateway.access.identify(bearer_token(headers.get("authorization")))
        except Unauthorized:
            body = error_response(None, INVALID_REQUEST, "Unauthorized")
            await reply_json(send, body, 401, [(b"www-authenticate", b"Bearer")])
            return False, None
        return True, client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if headers.get(HOP_HEADER) == self.gateway.id:
            message = "the gateway is its own upstream here (a loop): refused"
            await reply_json(send, error_response(None, INVALID_REQUEST, message), 508)
            return
        ok, client = await self.admit(headers, send)
        if not ok:
            return
        method = scope["method"]
        if method == "POST":
            await self._post(headers, client, receive, send)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            sid = headers.get(SESSION_HEADER)
            found = sid is not None and await self.gateway.sessions.end(sid)
            await reply(send, 200 if found else 404)
        else:
            await reply(send, 405, None, [(b"allow", b"GET, POST, DELETE")])

    # ---- POST -----------------------------------------------------------------------------
    async def _post(
        self, headers: dict[str, str], client: ClientConfig | None, receive: Receive, send: Send
    ) -> None:
        accept = headers.get("accept")  # media types, never substrings (RFC 9110 §12.5.1)
        accepts_json = accepts(accept, "application/json")
        accepts_sse = accepts(accept, "text/event-stream")
        if headers.get("mcp-method") == "tools/call" and client is not None:
            name = headers.get("mcp-name")  # route from headers before reading the body
            if name is not None and not name.startswith("=?"):
                try:
                    self.gateway.access.check(client, name)
                except GatewayError as exc:
                    await reply_json(
                        send, error_response(None, exc.code, exc.message, exc.data), 403
                    )
                    return
        body = await read_body(headers, receive, self.max_body)
        if body is None:
            message = f"Request body larger than {self.max_body} bytes"
            await reply_json(send, error_response(None, INVALID_REQUEST, message), 413)
            return
        if media_type(headers.get("content-type")) != "application/json":
            message = "Unsupported Media Type: use application/json"
            await reply_json(send, error_response(None, INVALID_REQUEST, message), 415)
            return
        if not (accepts_json or accepts_sse):
            message = "Not Acceptable: accept application/json or text/event-stream"
            await reply_json(send, error_response(None, INVALID_REQUEST, message), 406)
            return
        try:
            message = decode(body)
        except ValueError as exc:
            await reply_json(send, parse_error(str(exc)), 400)
            return
        kind, error = check(message)
        if error is not None:
            await reply_json(send, error, 400)
            return
        if kind == KIND_RESPONSE:  # as aircore: an id not asked of this responder is ignored
            pending = self._pending.get(str(message.get("id")))
            responder = (headers.get(SESSION_HEADER), None if client is None else client.name)
            if pending is not None and pending[0] == responder and not pending[1].done():
                pending[1].set_result(message)
            await reply(send, 202)
            return
        if "id" not in message:
            self._notification(message, headers.get(SESSION_HEADER))
            await reply(send, 202)
            return
        await self._request(message, headers, client, accepts_json, accepts_sse, receive, send)

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

    async def _request(
        self,
        message: JSONDict,
        headers: dict[str, str],
        client: ClientConfig | None,
        accepts_json: bool,
        accepts_sse: bool,
        receive: Receive,
        send: Send,
    ) -> None:
        method, msg_id = message["method"], message["id"]
        params = message.get("params") or {}
        extra: list[tuple[bytes, bytes]] = []
        is_modern = modern.is_modern(method, params)
        if is_modern:
            try:
                version, _caps, _info = modern.check_envelope(method, params, headers)
                if method in _REMOVED_IN_MODERN:
                    raise AirError(METHOD_NOT_FOUND, f"Method not found: {method}", data=method)
            except AirError as exc:
                response = error_response(msg_id, exc.code, exc.message, exc.data)
                await reply_json(send, response, status_of(response, modern=True))
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
                    else ("Session not found")
                )
                await reply_json(
                    send, error_response(msg_id, INVALID_REQUEST, text), 400 if sid is None else 404
                )
                return
            call = _Call(client, msg_id, session.version, session)
        streams = method == "subscriptions/listen" or (
            accepts_sse and (not accepts_json or _may_talk_first(method, params, is_modern))
        )
        if streams:
            call.stream = SseResponse(send, extra)
        task = asyncio.ensure_future(self._dispatch(call, method, params, extra))
        if call.session is not None:
            self._inflight[(call.session.sid, msg_id)] = task
        answer = await self._watch(task, call, receive, cancel_on_disconnect=is_modern)
        if call.session is not None:
            self._inflight.pop((call.session.sid, msg_id), None)
        await self._answer(answer, call, is_modern, extra, send)

    async def _answer(
        self,
        response: JSONDict | None,
        call: _Call,
        is_modern: bool,
        extra: list[tuple[bytes, bytes]],
        send: Send,
    ) -> None:
        if response is None:
            if is_modern:  # the client closed the POST: nobody is left to answer
                if call.stream is not None:
                    await call.stream.close()
                return
            # legacy: notifications/cancelled ended the call, but its POST is still open and
            # the 2025-era wire ends a request only with a response (so does the SDK's server)
            response = cancelled_response(call.msg_id)
        status = status_of(response, modern=is_modern)
        if call.stream is not None and (call.stream.started or status == 200):
            await call.stream.event(response)
            await call.stream.close()
            return
        await reply_json(send, response, status, extra)

    async def _watch(
        self, task: asyncio.Task[JSONDict], call: _Call, receive: Receive, *,
        cancel_on_disconnect: bool,
    ) -> JSONDict | None:  # fmt: skip
        """Wait for the call; 2026-07-28: the client closing the POST cancels it."""
        watcher: asyncio.Future[Any] | None = None
        if cancel_on_disconnect:
            watcher = asyncio.ensure_future(receive())
            watcher.add_done_callback(lambda _w: task.cancel())  # a no-op once the task is done
        try:
            return await task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                task.cancel()  # we are being cancelled (shutdown): take the call with us
                raise
            return None  # the client closed the POST, or notifications/cancelled: no answer
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _dispatch(
        self, call: _Call, method: str, params: JSONDict, extra: list[tuple[bytes, bytes]]
    ) -> JSONDict:
        try:
            listed = LIST_METHODS.get(method)
            if listed is not None:
                result = page(listed(self.gateway.index, self.gateway.access, call.client),
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

    async def _get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        """Legacy: the session's stream of list-changed notifications."""
        sid = headers.get(SESSION_HEADER)
        if sid is None or not accepts(headers.get("accept"), "text/event-stream"):
            await reply(send, 405, None, [(b"allow", b"POST, DELETE")])
            return
        if await self.gateway.sessions.get(sid) is None:
            await reply_json(send, error_response(None, INVALID_REQUEST, "Session not found"), 404)
            return
        stream = SseResponse(send)

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        disconnected = asyncio.ensure_future(gone())
        try:
            await stream.send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-cache"),
                    ],
                }
            )
            stream.started = True
            # the head leaves with the first body part: send it now, so the client knows its
            # stream is open before the first change (and a disconnect finds it answered)
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            changes = self._changes()
            nxt: asyncio.Future[JSONDict] | None = None
            try:
                while True:
                    nxt = asyncio.ensure_future(anext(changes))
                    done, _ = await asyncio.wait(
                        {nxt, disconnected}, return_when=asyncio.FIRST_COMPLETED
                    )
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
            disconnected.cancel()


def _may_talk_first(method: str, params: Mapping[str, Any], is_modern: bool) -> bool:
    if method not in ("tools/call", "prompts/get", "resources/read"):
        return False
    if not is_modern:
        return method == "tools/call"
    meta = params.get("_meta")
    return isinstance(meta, Mapping) and ("progressToken" in meta or modern.LOG_LEVEL_KEY in meta)


def _wanted(message: JSONDict, call: _Call) -> bool:
    """Whether a log message passes the legacy session's ``logging/setLevel``."""
    if message.get("method") != "notifications/message" or call.session is None:
        return True
    params = message.get("params")
    level = params.get("level") if isinstance(params, dict) else None
    if level not in LOG_LEVELS:
        return True
    return LOG_LEVELS[level] >= LOG_LEVELS.get(call.session.level, 0)
