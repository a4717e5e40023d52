"""otel_meter_hook decides when ``air serve`` exports, and which hook the server then uses."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aircore import define_server, define_tool
from aircore.errors import DefinitionError
from airmeter import MeterMiddleware, OtelSink
from airmeter.otel_attach import otel_meter_hook, with_env_otel_sink
from tests.airmeter.otlp_receiver import otlp_receiver

ENV = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}


def _otel_sinks(hook: MeterMiddleware) -> list[OtelSink]:
    return [s for s in hook.meter.sinks if isinstance(s, OtelSink)]


async def test_a_server_without_meter_gets_one_with_the_sink() -> None:
    hook = otel_meter_hook(None, service_name="svc", env=ENV)
    assert isinstance(hook, MeterMiddleware)
    await hook.start(server_name="svc")
    (sink,) = _otel_sinks(hook)
    assert sink.settings.service_name == "svc"
    await hook.stop()


async def test_an_existing_meter_gets_the_sink_added() -> None:
    hook = MeterMiddleware()
    assert otel_meter_hook(hook, service_name="svc", requested=True, env={}) is hook
    await hook.start(server_name="svc")
    assert len(_otel_sinks(hook)) == 1
    await hook.stop()


def test_nothing_happens_when_off_disabled_or_not_ours() -> None:
    assert otel_meter_hook(None, service_name="svc", env={}) is None
    disabled = {**ENV, "OTEL_SDK_DISABLED": "true"}
    assert otel_meter_hook(None, service_name="svc", requested=True, env=disabled) is None

    async def foreign(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    assert otel_meter_hook(foreign, service_name="svc", requested=True, env=ENV) is None


async def test_use_meter_gives_a_server_its_exporting_hook_before_it_starts() -> None:
    server = define_server(name="svc", tools=[define_tool(name="ping", handler=lambda p: "pong")])
    hook = otel_meter_hook(server.meter, service_name=server.name, env=ENV)
    assert hook is not None
    server.use_meter(hook)
    assert server.meter is hook
    async with server:
        await server.call_tool("ping", {})
        with pytest.raises(DefinitionError, match="running server"):
            server.use_meter(None)
    assert hook.meter.stats.recorded == 1


async def test_the_environment_alone_turns_export_on_for_a_metered_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def ping(params: dict[str, Any]) -> str:
        return "pong"

    server = define_server(
        name="env-otel", tools=[define_tool(name="ping", params={}, handler=ping)], meter=True
    )
    with otlp_receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        async with server:
            await server.call_tool("ping", {}, request_id="1")
        assert receiver.wait_for(lambda: len(receiver.spans()) == 1)
    (span,) = receiver.spans()
    assert span.name == "tools/call ping"
    hook = server.meter
    assert isinstance(hook, MeterMiddleware)
    assert sum(isinstance(s, OtelSink) for s in hook.meter.sinks) == 1


def test_an_otel_sink_already_there_is_not_doubled() -> None:
    sink = OtelSink.from_env(ENV)
    assert sink is not None
    sinks = with_env_otel_sink([sink], "svc", env=ENV)
    assert sinks == [sink]
    assert with_env_otel_sink([], "svc", env={}) == []
    asyncio.run(sink.close())
