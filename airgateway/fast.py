"""The fast path: a 2026-07-28 ``tools/call`` answered with JSON, before the ASGI endpoint.

Most of a gateway's traffic is stateless ``tools/call`` requests. :class:`FastPath` is
:class:`airhttp.HttpServer`'s raw-request hook (behind :meth:`airhttp.GuardedApp.guard_fast`,
so the same guards and in-flight count apply; the server cancels the call when the client
closes the POST). One request is taken here when its
headers say so (``Mcp-Method: tools/call``, ``Mcp-Name``, no session) and it passes exactly the
checks the ASGI endpoint would make: the same ``airhttp`` guards (Host, Origin, the in-flight
cap, shared with :class:`airhttp.GuardedApp`), the bearer token naming a client, the client's
allow list, the envelope (headers against body), and a tool that exists. Anything else —
a refusal, a bad envelope, an unknown tool, a call that may send progress or logs first, a
legacy session — is left to the endpoint, which answers it as before.

The request body is forwarded as it came (a 2026-07-28 HTTP replica gets the client's bytes,
its own id included, when the tool keeps its upstream name and no trace context is added), and
the replica's answer goes back as it came: no JSON is encoded on the way. Other replicas
(stdio, SSE, a legacy-era HTTP server) get the call through their connection as usual.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine, Mapping
from typing import Any

import orjson

from aircore.errors import AirError
from aircore.protocol import modern
from aircore.protocol.framing import encode, error_response
from airgateway import eras
from airgateway._wire import HOP_HEADER, status_of
from airgateway.access import Unauthorized
from airgateway.config import ClientConfig
from airgateway.errors import GatewayError
from airgateway.gateway import Gateway
from airgateway.index import IndexedTool
from airgateway.replica import Replica
from airgateway.types import JSONDict
from airgateway.upstream_http import HttpUpstream
from airhttp import Answer, Scope
from airhttp.guards import bearer_token
from airhttp.media import accepts, media_type

__all__ = ["FastPath"]

_HOP = HOP_HEADER.encode()
_WANTED = frozenset(
    {
        b"host", b"origin", b"authorization", b"content-type", b"accept", b"mcp-method",
        b"mcp-name", b"mcp-protocol-version", b"mcp-session-id", _HOP,
    }
)  # fmt: skip
_JSON = ((b"content-type", b"application/json"),)
_JSON_TYPE = "application/json"


def _refuse_input(_message: JSONDict) -> Awaitable[JSONDict | None]:
    async def answer() -> JSONDict | None:
        if "id" in _message:  # a server→client request: a stateless JSON answer cannot carry it
            return {"error": {"code": -32601, "message": "the client cannot be asked now"}}
        return None

    return answer()


class FastPath:
    """Takes the requests it can (see the module docstring): an :data:`airhttp.FastHandler`.

    Args:
        gateway: the started gateway.
        path: the MCP endpoint path.
    """

    def __init__(self, gateway: Gateway, *, path: str = "/mcp") -> None:
        self.gateway = gateway
        self.path = path
        self._me = gateway.id.encode()

    def __call__(self, scope: Scope, body: bytes) -> Coroutine[Any, Any, Answer] | None:
        """The coroutine answering the request, or ``None`` to leave it to the endpoint."""
        if scope["method"] != "POST" or scope["path"] != self.path:
            return None
        found: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _WANTED and name not in found:
                found[name] = value
        if found.get(b"mcp-method") != b"tools/call" or b"mcp-session-id" in found:
            return None
        if found.get(_HOP) == self._me:
            return None  # a loop: the endpoint refuses it
        text = {k.decode("latin-1"): v.decode("latin-1") for k, v in found.items()}
        # parsed as media types (never substrings): the endpoint answers 415/406 to the rest
        if media_type(text.get("content-type")) != _JSON_TYPE or not accepts(
            text.get("accept"), _JSON_TYPE
        ):
            return None
        try:
            client = self.gateway.access.identify(bearer_token(text.get("authorization")))
        except Unauthorized:
            return None
        name = text.get("mcp-name")
        if client is not None and name is not None:
            try:  # refused from the header, before the body is parsed: the endpoint's answer
                self.gateway.access.check(client, name)
            except GatewayError:
                return None
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        msg_id = message.get("id")
        params = message.get("params")
        if (
            message.get("method") != "tools/call"
            or not isinstance(params, dict)
            or not (isinstance(msg_id, str) or type(msg_id) is int)
        ):
            return None
        try:
            version, _caps, _info = modern.check_envelope("tools/call", params, text)
        except AirError:
            return None
        meta = params.get("_meta")
        if isinstance(meta, Mapping) and ("progressToken" in meta or modern.LOG_LEVEL_KEY in meta):
            return None  # progress or logs may come first: an SSE answer, the endpoint's
        tool = params.get("name")
        entry = self.gateway.index.tool(tool) if isinstance(tool, str) else None
        if entry is None or self.gateway.legacy_era(entry.server):
            return None  # a legacy upstream may ask mid-call: input rounds, the endpoint's
        return self._call(body, params, entry, client, msg_id, version)

    async def _call(
        self, body: bytes, params: JSONDict, entry: IndexedTool, client: ClientConfig | None,
        msg_id: Any, version: str,
    ) -> Answer:  # fmt: skip
        try:
            response, raw = await self._route(body, params, entry, client, msg_id, version)
        except (GatewayError, AirError) as exc:
            error = error_response(msg_id, exc.code, exc.message, exc.data)
            return status_of(error, modern=True), _JSON, encode(error)
        return 200, _JSON, raw if raw is not None else encode(response)

    async def _route(
        self, body: bytes, params: JSONDict, entry: IndexedTool, client: ClientConfig | None,
        msg_id: Any, version: str,
    ) -> tuple[JSONDict, bytes | None]:  # fmt: skip
        gateway = self.gateway
        gateway.access.check(client, entry.name)
        await gateway.access.admit(client, entry.name)
        as_is = entry.upstream_name == entry.name
        upstream = params if as_is else {**params, "name": entry.upstream_name}
        meter = gateway.meter
        call = None
        if meter is not None:
            call = meter.begin(entry, upstream, client=client, request_id=msg_id,
                               session_id=None, protocol_version=version)  # fmt: skip
            # the hop's mark (and the gateway's trace context) go upstream
            upstream, as_is = call.params, False
        sent = body if as_is else None

        async def attempt(replica: Replica) -> tuple[JSONDict, bytes | None]:
            conn = replica.client
            timeout = replica.config.timeout_s
            if isinstance(conn, HttpUpstream) and conn.era == eras.MODERN:
                out = sent
                if out is None:
                    out = orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call",
                                        "params": upstream})  # fmt: skip
                message, raw = await conn.forward(out, entry.upstream_name, timeout=timeout)
                if message.get("id") == msg_id:
                    return message["result"], raw
                return message["result"], None  # not our id: re-encoded with it below
            result = await conn.request(
                "tools/call", upstream, timeout=timeout, on_message=_refuse_input
            )
            return result, None

        picked: list[Replica] = []
        key = None if client is None else client.name
        try:
            result, raw = await gateway.router.run(
                entry.server, attempt, retry_safe=entry.retry_safe, session_key=key, picked=picked
            )
        except BaseException as exc:
            if meter is not None and call is not None:
                meter.end(call, picked, None, exc)
            raise
        if meter is not None and call is not None:
            meter.end(call, picked, result, None, result_bytes=None if raw is None else len(raw))
        if result.get("resultType") == "task":
            await gateway.task_started(result, entry, picked, client)
        if raw is not None:
            return {}, raw
        result = modern.decorate("tools/call", dict(result), eras.GATEWAY_INFO)
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}, None
