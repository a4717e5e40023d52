"""Metering at the gateway: every proxied ``tools/call`` becomes one airmeter record.

``server`` is the upstream's name, ``instance_id`` the replica that answered (``notes#1``),
the layer comes from the upstream's definition (its ``_meta`` layer hint, annotations and
name, through the meter's classifier), and an ``isError`` result is a failure of type
``tool_error``. Errors the gateway raises carry their JSON-RPC code as the type.

A call is counted once. The gateway tells the upstream it is a hop (``params._meta`` carries
``io.airmcp/hop``); an upstream that meters the call says so in its answer's ``_meta``, and the
gateway then records a hop (``kind: "hop"``, linked to the upstream's record by its call id,
with the upstream's own time) into the hops log instead of a second call
(:mod:`airmeter.hops`). An upstream that does not say so leaves the gateway's record a call.

With OpenTelemetry export on (an :class:`~airmeter.otel.OtelSink` among the meter's sinks) each
call also gets the gateway's own SERVER span, opened as the call starts: its parent is the
trace context the client sent in ``params._meta`` (``traceparent``/``tracestate``), and the
upstream gets the gateway's span as its parent in the ``_meta`` passed on, so one trace runs
client → gateway → server. The span carries the MCP attributes and the upstream's name and
replica (``air.gateway.upstream``, ``air.gateway.replica``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from airgateway.config import ClientConfig
from airgateway.index import IndexedTool
from airgateway.replica import Replica
from airgateway.types import JSONDict
from airhttp.identity import current_identity
from airmeter.fields import cut_id
from airmeter.hops import HOP_META_KEY, METERED_META_KEY, metered_answer
from airmeter.layers import Layer
from airmeter.meter import Meter
from airmeter.pseudonym import PROCESS_KEY, pseudonym, subject_key
from airmeter.record import HOP_KIND, CallRecord
from airmeter.settings import raw_subject_setting
from airmeter.types import CodedError

if TYPE_CHECKING:  # OpenTelemetry is imported only when export is on
    from airmeter.otel import OtelSink
    from airmeter.otel_span import CallSpan

__all__ = [
    "METERED_MARK",
    "REPLICA_ATTRIBUTE",
    "UPSTREAM_ATTRIBUTE",
    "GatewayMeter",
    "MeteredCall",
    "without_metered",
]

logger = logging.getLogger(__name__)

UPSTREAM_ATTRIBUTE = "air.gateway.upstream"
"""Span attribute: the upstream server's name."""
REPLICA_ATTRIBUTE = "air.gateway.replica"
"""Span attribute: the replica that answered (``name#index``)."""

_perf = time.perf_counter
_now = time.time


class MeteredCall:
    """One call on its way: what the record needs when it ends."""

    __slots__ = ("auth", "call_id", "client", "client_id", "entry", "params", "protocol_version",
                 "request_id", "session_id", "span", "started", "subject", "ts")  # fmt: skip

    def __init__(self, entry: IndexedTool, params: dict[str, Any], call_id: str) -> None:
        self.entry = entry
        self.params = params
        """The params to send upstream (with the gateway's trace context when tracing)."""
        self.call_id = call_id
        self.span: CallSpan | None = None
        self.ts = _now()
        self.started = _perf()
        self.client: str | None = None
        self.request_id: str | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.client_id: str | None = None
        self.subject: str | None = None
        self.auth: str | None = None


class GatewayMeter:
    """Records proxied calls into a :class:`~airmeter.Meter` (see the module docstring).

    Args:
        meter: the meter (its store and sinks decide where records go).
        store_url: the URL of that store (see :attr:`store_url`).
        otel: the OpenTelemetry sink (also among the meter's sinks) when export is on: calls
            then get the gateway's own span.
    """

    def __init__(
        self, meter: Meter, *, otel: OtelSink | None = None, store_url: str | None = None
    ) -> None:
        self.meter = meter
        self.store_url = store_url
        """The URL of the store the meter writes to: an upstream metering into the same one
        makes a proxied call a hop, not a second call."""
        self._layers: dict[tuple[str, str], Layer] = {}
        self._otel = otel
        self._prefix = f"gw{os.getpid():x}{secrets.token_hex(3)}-"
        self._ids = itertools.count(1)
        self._subject_key = PROCESS_KEY
        self._raw_subject = raw_subject_setting()

    @property
    def tracing(self) -> bool:
        """Whether calls get the gateway's own span (OpenTelemetry export is on)."""
        return self._otel is not None

    async def start(self) -> None:
        """Start the meter's delivery (and read the store's pseudonym key)."""
        await self.meter.start()
        if self.meter.store is not None:
            self._subject_key = await subject_key(self.meter.store)

    async def stop(self) -> None:
        """Deliver everything pending and stop."""
        await self.meter.stop()

    def _layer(self, entry: IndexedTool) -> Layer:
        key = (entry.server, entry.name)
        layer = self._layers.get(key)
        if layer is None:
            meta = entry.definition.get("_meta")
            hint = meta.get("layer") if isinstance(meta, dict) else None
            try:
                found = self.meter.classifier.classify(
                    entry.upstream_name, entry.definition.get("inputSchema"), entry.annotations,
                    hint if isinstance(hint, int | str) else None,
                )  # fmt: skip
            except Exception:  # a bad hint in an upstream's _meta: classify by name
                found = self.meter.classifier.classify(entry.upstream_name, None, entry.annotations)
            layer = self._layers[key] = found.layer
        return layer

    def begin(
        self,
        entry: IndexedTool,
        params: dict[str, Any],
        *,
        client: ClientConfig | None,
        request_id: Any,
        session_id: str | None,
        protocol_version: str | None,
    ) -> MeteredCall:
        """Start timing a call (and, when tracing, open its span and put the span's trace
        context in the ``_meta`` of :attr:`MeteredCall.params`)."""
        call = MeteredCall(entry, params, f"{self._prefix}{next(self._ids)}")
        call.client = None if client is None else client.name
        call.request_id = None if request_id is None else str(request_id)
        call.session_id = session_id
        call.protocol_version = protocol_version
        identity = current_identity()  # who called (set by the HTTP guards), or None
        if identity is not None:
            subject = identity.subject
            if subject is not None and not self._raw_subject:
                subject = pseudonym(self._subject_key, subject)
            call.client_id, call.subject = cut_id(identity.client_id), cut_id(subject)
            call.auth = identity.auth
        meta = params.get("_meta")
        call.params = {**params, "_meta": {**(meta if isinstance(meta, dict) else {}),
                                           HOP_META_KEY: call.call_id}}  # fmt: skip
        if self._otel is not None:
            self._trace(call, call.params, protocol_version)
        return call

    def _trace(self, call: MeteredCall, params: dict[str, Any], version: str | None) -> None:
        assert self._otel is not None
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        attributes = {UPSTREAM_ATTRIBUTE: call.entry.server, "network.transport": "tcp"}
        if version is not None:
            attributes["mcp.protocol.version"] = version
        try:  # telemetry never breaks a call
            span = self._otel.start_call_span(call.entry.name, carrier=meta,
                                              attributes=attributes)  # fmt: skip
            span.inject(meta)
        except Exception:
            logger.exception("could not open the gateway's span")
            return
        call.span = span
        call.params = {**params, "_meta": meta}

    def end(
        self,
        call: MeteredCall,
        picked: Sequence[Replica],
        result: dict[str, Any] | None,
        error: BaseException | None,
        *,
        result_bytes: int | None = None,
    ) -> None:
        """Record the call: O(1), never raises into the caller.

        ``result_bytes`` is the result's encoded size when the caller has it (else it is
        measured by encoding ``result``).
        """
        latency = (_perf() - call.started) * 1000.0
        entry = call.entry
        message: str | None = None
        if error is None:
            ok = not (result is not None and result.get("isError") is True)
            etype = None if ok else "tool_error"
        elif isinstance(error, asyncio.CancelledError):
            ok, etype, message = False, "cancelled", "the call was cancelled before it finished"
        else:
            code = error.code if isinstance(error, CodedError) else None
            ok = False
            etype = str(code) if isinstance(code, int) else type(error).__name__
            message = str(error)
        arguments = call.params.get("arguments")
        out_bytes = _size(result) if result_bytes is None else result_bytes
        meta = entry.definition.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        replica = picked[-1].instance if picked else None
        answered = metered_answer(result, self.store_url)
        kind, upstream_id, upstream_ms = (None, None, None) if answered is None else (
            HOP_KIND, *answered)  # fmt: skip
        record = CallRecord(
            ts_ms=int(call.ts * 1000), server=entry.server, tool=entry.name,
            layer=self._layer(entry), latency_ms=latency, ok=ok, error_type=etype,
            request_id=call.request_id, call_id=call.call_id, session_id=call.session_id,
            protocol_version=call.protocol_version, transport="tcp", client_name=call.client,
            instance_id=replica, input_bytes=_size(arguments), output_bytes=out_bytes,
            error_message=message,
            # the standard's "categoryKey"; "category_key" from servers before it
            category=_text(meta.get("categoryKey", meta.get("category_key"))),
            tool_version=_text(meta.get("version")),
            kind=kind, upstream_call_id=upstream_id, upstream_latency_ms=upstream_ms,
            client_id=call.client_id, subject=call.subject, auth=call.auth,
        )  # fmt: skip
        if call.span is not None:
            extra = {UPSTREAM_ATTRIBUTE: entry.server}
            if picked:
                extra[REPLICA_ATTRIBUTE] = picked[-1].label
            try:
                call.span.end(record, extra)
            except Exception:
                logger.exception("could not finish the gateway's span")
        self.meter.record(record)


METERED_MARK = f'"{METERED_META_KEY}"'.encode()
"""The upstream's metered marker as it appears in an encoded answer (a cheap test on raw
bytes before the answer is decoded and stripped)."""


def without_metered(result: JSONDict) -> JSONDict:
    """``result`` without the upstream's :data:`~airmeter.hops.METERED_META_KEY` (what the
    upstream told this gateway, not the client: it names the upstream's store); ``result``
    itself when it has none."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or METERED_META_KEY not in meta:
        return result
    rest = {k: v for k, v in meta.items() if k != METERED_META_KEY}
    out = {k: v for k, v in result.items() if k != "_meta"}
    if rest:
        out["_meta"] = rest
    return out


def _size(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
