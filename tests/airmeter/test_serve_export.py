"""``air serve`` over real HTTP: ``/metrics`` beside ``/mcp``, and ``--otel`` exporting to a
real OTLP/HTTP receiver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from mcp import Client

from airmeter.prometheus import CONTENT_TYPE
from tests.aircore.conftest import HttpServer
from tests.airmeter.otlp_receiver import otlp_receiver
from tests.airmeter.prom_parser import parse

METERED = str(Path(__file__).parent / "aircore_metered_server.py")


def _attrs(item: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in item.attributes}


async def test_metrics_route_and_otel_export_of_a_served_server() -> None:
    with otlp_receiver() as receiver:
        server = HttpServer(METERED, "--otel", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        try:
            async with Client(server.url) as client:
                assert not (await client.call_tool("echo", {"text": "hi"})).is_error
                assert (await client.call_tool("fetch_url", {"url": "https://x.test"})).is_error
            async with httpx.AsyncClient(base_url=server.base, timeout=20) as http:
                response = await http.get("/metrics")
        finally:
            assert server.close() == 0  # SIGTERM: the meter stops and the sink exports
        assert receiver.wait_for(lambda: len(receiver.spans()) >= 2)
        assert receiver.wait_for(
            lambda: bool(receiver.metric_points("mcp.server.operation.duration"))
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == CONTENT_TYPE
    families = parse(response.text)
    calls = {
        (s.labels["tool"], s.labels["layer"], s.labels["ok"]): s.value
        for s in families["air_mcp_calls_total"].samples
    }
    assert calls == {("echo", "L1", "true"): 1, ("fetch_url", "L5", "false"): 1}
    errors = [
        (s.labels["tool"], s.labels["error_type"]) for s in families["air_mcp_errors_total"].samples
    ]
    assert errors == [("fetch_url", "ConnectionError")]
    spans = {span.name: span for span in receiver.spans()}
    assert {"tools/call echo", "tools/call fetch_url"} <= set(spans)
    failed = _attrs(spans["tools/call fetch_url"])
    assert (failed["error.type"], failed["air.layer"]) == ("ConnectionError", "L5")
    assert _attrs(spans["tools/call echo"])["network.transport"] == "tcp"
    resource = receiver.traces[0].resource_spans[0].resource
    assert _attrs(resource)["service.name"] == "metered"


async def test_metrics_route_requires_the_servers_token() -> None:
    server = HttpServer(METERED, "--token", "t0k")
    try:
        async with httpx.AsyncClient(base_url=server.base, timeout=20) as http:
            denied = await http.get("/metrics")
            allowed = await http.get("/metrics", headers={"authorization": "Bearer t0k"})
    finally:
        assert server.close() == 0
    assert denied.status_code == 401
    assert allowed.status_code == 200
    assert parse(allowed.text)["air_mcp_calls_total"].samples == []
