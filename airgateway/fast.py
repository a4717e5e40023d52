"""The gateway's fast path: a 2026-07-28 ``tools/call`` answered with JSON, before ASGI.

Most of a gateway's traffic is stateless ``tools/call`` requests. The shared endpoint's fast
path (:meth:`aircore.transports.streamable.StreamableEndpoint.fast`, :class:`airhttp.HttpServer`'s
raw-request hook behind :meth:`airhttp.GuardedApp.guard_fast`, so the same guards and in-flight
count apply; the server cancels the call when the client closes the POST) makes the checks
every handler shares — admitted (the bearer token naming a client, the client's allow list for
``Mcp-Name``, no loop), no session, JSON in and accepted, a well-formed 2026-07-28 request —
then hands the request to :class:`FastPath`, which takes it when its headers say
``Mcp-Method: tools/call`` and it passes the rest of what the ASGI endpoint would check: the
envelope (headers against body) and a tool that exists. Anything else — a bad envelope, an
unknown tool, a call that may send progress or logs first — is left to the endpoint, which
answers it as before.

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
from aircore.transports.streamable import JSON_HEADERS, status_of
from airgateway import eras
from airgateway.config import ClientConfig
from airgateway.errors import GatewayError
from airgateway.gateway import Gateway
from airgateway.index import IndexedTool
from airgateway.metering import METERED_MARK, without_metered
from airgateway.replica import Replica
from airgateway.types import JSONDict
from airgateway.upstream_http import HttpUpstream
from airhttp import Answer

__all__ = ["FastPath"]


def _refuse_input(_message: JSONDict) -> Awaitable[JSONDict | None]:
    async def answer() -> JSONDict | None:
        if "id" in _message:  # a server→client request: a stateless JSON answer cannot carry it
            return {"error": {"code": -32601, "message": "the client cannot be asked now"}}
        return None

    return answer()


class FastPath:
    """Takes the requests it can (see the module docstring): the gateway handler's ``fast``.

    Args:
        gateway: the started gateway.
    """

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def __call__(
        self,
        message: dict[str, Any],
        body: bytes,
        headers: dict[str, str],
        client: ClientConfig | None,
    ) -> Coroutine[Any, Any, Answer] | None:
        """The coroutine answering the request, or ``None`` to leave it to the endpoint."""
        params = message.get("params")
        if (
            headers.get("mcp-method") != "tools/call"
            or message["method"] != "tools/call"
            or not isinstance(params, dict)
        ):
            return None
        try:
            version, _caps, _info = modern.check_envelope("tools/call", params, headers)
        except AirError:
            return None
        meta = params.get("_meta")
        if isinstance(meta, Mapping) and ("progressToken" in meta or modern.LOG_LEVEL_KEY in meta):
            return None  # progress or logs may come first: an SSE answer, the endpoint's
        tool = params.get("name")
        entry = self.gateway.index.tool(tool) if isinstance(tool, str) else None
        if entry is None or self.gateway.legacy_era(entry.server):
            return None  # a legacy upstream may ask mid-call: input rounds, the endpoint's
        return self._call(body, params, entry, client, message["id"], version)

    async def _call(
        self, body: bytes, params: JSONDict, entry: IndexedTool, client: ClientConfig | None,
        msg_id: Any, version: str,
    ) -> Answer:  # fmt: skip
        # one coroutine from here to the replica's connection (each layer costs every call)
        gateway = self.gateway
        try:
            gateway.access.check(client, entry.name)
            await gateway.access.admit(client, entry.name)
            as_is = entry.upstream_name == entry.name
            upstream = params if as_is else {**params, "name": entry.upstream_name}
            with_caller = gateway.caller_params(entry.server, upstream)
            if with_caller is not upstream:  # the caller's identity added, or a client's removed
                upstream, as_is = with_caller, False
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
                    message, raw = await conn.forward(out, entry.upstream_name, msg_id=msg_id,
                                                      timeout=timeout,
                                                      resend=entry.retry_safe)  # fmt: skip
                    return message["result"], raw  # (its id is ours: forward checked it)
                result = await conn.request(
                    "tools/call", upstream, timeout=timeout, on_message=_refuse_input
                )
                return result, None

            picked: list[Replica] = []
            key = None if client is None else client.name
            try:
                result, raw = await gateway.router.run(entry.server, attempt,
                                                       retry_safe=entry.retry_safe,
                                                       session_key=key, picked=picked)  # fmt: skip
            except BaseException as exc:
                if meter is not None and call is not None:
                    meter.end(call, picked, None, exc)
                raise
            if meter is not None and call is not None:
                meter.end(call, picked, result, None,
                          result_bytes=None if raw is None else len(raw))  # fmt: skip
            if result.get("resultType") == "task":
                await gateway.task_started(result, entry, picked, client)
            if raw is not None and METERED_MARK not in raw:
                return 200, JSON_HEADERS, raw
            # (the upstream's metered marker is for this gateway, not its client)
            result = without_metered(result)
            result = modern.decorate("tools/call", dict(result), eras.GATEWAY_INFO)
            response: JSONDict = {"jsonrpc": "2.0", "id": msg_id, "result": result}
        except (GatewayError, AirError) as exc:
            error = error_response(msg_id, exc.code, exc.message, exc.data)
            return status_of(error), JSON_HEADERS, encode(error)
        return 200, JSON_HEADERS, encode(response)
