"""Honest error classes reach every exporter: Prometheus's ``error_class`` label beside
``error_type``, and OTel's ``air.error.class`` span attribute beside the conventions'
``error.type`` (unchanged), at a real OTLP receiver, for every class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from airmeter import CallRecord, Layer
from airmeter.otel import OtelSink
from airmeter.prometheus import PrometheusSink
from tests.airmeter.otlp_receiver import Receiver, otlp_receiver
from tests.airmeter.prom_parser import parse

# error_type as recorded -> the class every exporter must show
CLASSES = {
    "tool_error": "tool_error",
    "-32602": "refused",
    "ValueError": "exception",
    "-32001": "timeout",
    "TimeoutError": "timeout",
    "cancelled": "cancelled",
    "budget_exceeded": "budget",
    "-32603": "exception",
    "-32601": "protocol",
}
RECORDS = [
    CallRecord(ts_ms=1_760_000_000_000 + i, server="s", tool=f"t{i}", layer=Layer.L2,
               latency_ms=3.0, ok=False, error_type=etype, request_id=str(i))
    for i, etype in enumerate(CLASSES)
] + [CallRecord(ts_ms=1_760_000_000_100, server="s", tool="fine", layer=Layer.L1,
                latency_ms=1.0, ok=True, request_id="ok")]  # fmt: skip


async def test_prometheus_labels_each_error_with_its_class() -> None:
    sink = PrometheusSink()
    await sink.write(RECORDS)
    samples = parse(sink.render())["air_mcp_errors_total"].samples
    got = {s.labels["error_type"]: s.labels["error_class"] for s in samples}
    assert got == CLASSES
    assert all(s.value == 1 for s in samples)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as rec:
        yield rec


def _attrs(span: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in span.attributes}


async def test_otel_spans_carry_the_class_beside_the_unchanged_error_type(
    receiver: Receiver,
) -> None:
    sink = OtelSink.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "classes"}
    )
    assert sink is not None
    await sink.write(RECORDS)
    assert await sink.force_flush()
    await sink.close()
    assert receiver.wait_for(lambda: len(receiver.spans()) >= len(RECORDS))
    by_request = {_attrs(s)["jsonrpc.request.id"]: _attrs(s) for s in receiver.spans()}
    for i, (etype, eclass) in enumerate(CLASSES.items()):
        attrs = by_request[str(i)]
        assert (attrs["error.type"], attrs["air.error.class"]) == (etype, eclass)
    assert "air.error.class" not in by_request["ok"]
    assert "error.type" not in by_request["ok"]
