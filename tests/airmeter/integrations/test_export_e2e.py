"""The whole export path: official client → MCPServer/FastMCP + adapter → Meter → OtelSink and
PrometheusSink → a real OTLP/HTTP receiver and exposition text."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from mcp import Client
from mcp.server.mcpserver import MCPServer

from airmeter import Layer, Meter, OtelSink, PrometheusSink
from airmeter.integrations import FastMCPMeterMiddleware, instrument_mcp_server
from tests.airmeter.otlp_receiver import otlp_receiver
from tests.airmeter.prom_parser import parse


def _attrs(span: Any) -> dict[str, Any]:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in span.attributes}


async def test_mcpserver_calls_reach_the_collector_and_the_exposition() -> None:
    mcp: MCPServer[Any] = MCPServer("e2e")

    @mcp.tool()
    def search_notes(query: str) -> list[str]:
        return [query]

    @mcp.tool()
    def send_email(to: str) -> str:
        raise PermissionError("no mail today")

    with otlp_receiver() as receiver:
        otel = OtelSink.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert otel is not None
        prom = PrometheusSink()
        meter = Meter(sinks=[otel, prom], server="e2e-meter")
        async with meter:
            instrument_mcp_server(mcp, meter)
            async with Client(mcp) as client:
                await client.call_tool("search_notes", {"query": "otel"})
                await client.call_tool("search_notes", {"query": "prom"})
                assert (await client.call_tool("send_email", {"to": "a@b.c"})).is_error
        # stop() delivered everything and closed the sinks: the final export happened
        assert receiver.wait_for(lambda: len(receiver.spans()) == 3)
        assert receiver.wait_for(lambda: bool(receiver.metric_points("air.mcp.calls")))
    names = sorted(span.name for span in receiver.spans())
    assert names == ["tools/call search_notes"] * 2 + ["tools/call send_email"]
    failed = next(s for s in receiver.spans() if s.name == "tools/call send_email")
    assert _attrs(failed)["error.type"] == "tool_error"
    assert _attrs(failed)["air.layer"] == "L5"
    assert _attrs(failed)["air.server"] == "e2e"
    families = parse(prom.render())
    calls = {
        (s.labels["tool"], s.labels["ok"]): s.value for s in families["air_mcp_calls_total"].samples
    }
    assert calls == {("search_notes", "true"): 2, ("send_email", "false"): 1}
    assert meter.stats.delivered == 3


async def test_fastmcp_calls_use_the_meters_classifier_and_name() -> None:
    mcp = FastMCP("fast-e2e")

    @mcp.tool
    def lookup_weather(city: str) -> str:
        return city

    prom = PrometheusSink()
    meter = Meter(sinks=[prom], server="fast-e2e")
    meter.classifier.add_rule("lookup_weather", Layer.L5)
    async with meter:
        mcp.add_middleware(FastMCPMeterMiddleware(meter))
        async with Client(mcp._mcp_server) as client:
            await client.call_tool("lookup_weather", {"city": "Seoul"})
    (rec,) = meter.recent()
    assert (rec.server, rec.layer) == ("fast-e2e", Layer.L5)
    families = parse(prom.render())
    (sample,) = families["air_mcp_calls_total"].samples
    assert sample.labels == {"tool": "lookup_weather", "layer": "L5", "ok": "true"}
