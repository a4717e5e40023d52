"""Turn call records into OpenTelemetry spans and metric points (runs on the sink's worker)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from opentelemetry.context import Context
from opentelemetry.metrics import Meter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from airmeter.record import CallRecord
from airmeter.semconv import (
    AIR_ERROR_CLASS,
    AIR_LAYER,
    CALLS_COUNTER,
    DURATION_BUCKETS_S,
    DURATION_HISTOGRAM,
    ERROR_TYPE,
    GEN_AI_TOOL_NAME,
    metric_attributes,
    span_attributes,
    span_name,
)

__all__ = ["Emitter"]

_MAX_CACHED_KEYS: Final = 4096

_Key = tuple[str, int, str | None, str | None, bool, str | None]


def _key(record: CallRecord) -> _Key:
    return (
        record.tool,
        int(record.layer),
        record.protocol_version,
        record.transport,
        record.ok,
        record.error_type,
    )


class Emitter:
    """Holds the instruments; one call per batch.

    Metric attribute dicts are cached per distinct key (tool, layer, version, transport,
    outcome) and the counter is added once per key per batch: the SDK's per-point attribute
    handling is most of its cost.
    """

    def __init__(self, tracer: Tracer, meter: Meter) -> None:
        self._tracer = tracer
        self._duration = meter.create_histogram(
            DURATION_HISTOGRAM,
            unit="s",
            description="Duration of MCP requests handled by the server.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self._calls = meter.create_counter(
            CALLS_COUNTER, unit="{call}", description="MCP tool calls, by cost layer."
        )
        self._attrs: dict[_Key, tuple[dict[str, str], dict[str, str]]] = {}
        self.spans = 0
        self.errors = 0

    def _attributes(self, record: CallRecord) -> tuple[_Key, dict[str, str], dict[str, str]]:
        key = _key(record)
        cached = self._attrs.get(key)
        if cached is None:
            attrs = metric_attributes(record)
            counter = {AIR_LAYER: attrs[AIR_LAYER], GEN_AI_TOOL_NAME: record.tool}
            if ERROR_TYPE in attrs:
                counter[ERROR_TYPE] = attrs[ERROR_TYPE]
                counter[AIR_ERROR_CLASS] = attrs[AIR_ERROR_CLASS]
            if len(self._attrs) >= _MAX_CACHED_KEYS:
                self._attrs.clear()  # pathological cardinality: stay bounded
            cached = self._attrs[key] = (attrs, counter)
        return key, cached[0], cached[1]

    def _span(self, record: CallRecord, parent: Context | None) -> None:
        start_ns = record.ts_ms * 1_000_000
        span = self._tracer.start_span(
            span_name(record),
            context=parent,
            kind=SpanKind.SERVER,
            attributes=span_attributes(record),
            start_time=start_ns,
        )
        if not record.ok:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=start_ns + int(record.latency_ms * 1_000_000))
        self.spans += 1

    def emit(
        self,
        records: Sequence[CallRecord],
        traced: Sequence[bool],
        parents: Sequence[Context | None] | None = None,
    ) -> None:
        """Record each call's duration and span (unless ``traced``; child of its entry in
        ``parents`` when there is one), then the counts.

        A record that fails to convert is counted in :attr:`errors` and skipped.
        """
        counts: dict[_Key, tuple[dict[str, str], int]] = {}
        contexts = parents if parents is not None else [None] * len(records)
        for record, already, parent in zip(records, traced, contexts, strict=True):
            try:
                key, attrs, counter = self._attributes(record)
                self._duration.record(record.latency_ms / 1000.0, attrs)
                seen = counts.get(key)
                counts[key] = (counter, 1 if seen is None else seen[1] + 1)
                if not already:
                    self._span(record, parent)
            except Exception:
                self.errors += 1
        for counter_attrs, n in counts.values():
            self._calls.add(n, counter_attrs)
