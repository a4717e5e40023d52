"""attach_otel decides when ``air serve`` exports, and where the sink goes."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from aircore import define_server, define_tool
from airmeter import MeterMiddleware, OtelSink
from airmeter.otel_attach import attach_otel, with_env_otel_sink
from tests.airmeter.otlp_receiver import otlp_receiver

ENV = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}


async def test_a_server_without_meter_gets_one_with_the_sink() -> None:
    server = SimpleNamespace(name="svc", meter=None)
    sink = attach_otel(server, env=ENV)
    assert isinstance(sink, OtelSink)
    assert isinstance(server.meter, MeterMiddleware)
    assert sink.settings.service_name == "svc"
    await server.meter.start(server_name="svc")
    assert sink in server.meter.meter.sinks
    await server.meter.stop()


async def test_an_existing_meter_gets_the_sink_added() -> None:
    hook = MeterMiddleware()
    server = SimpleNamespace(name="svc", meter=hook)
    sink = attach_otel(server, requested=True, env={})
    assert sink is not None
    assert server.meter is hook
    await hook.start(server_name="svc")
    assert sink in hook.meter.sinks
    await hook.stop()


def test_nothing_happens_when_off_disabled_or_not_ours() -> None:
    bare = SimpleNamespace(name="svc", meter=None)
    assert attach_otel(bare, env={}) is None
    assert bare.meter is None
    disabled = {**ENV, "OTEL_SDK_DISABLED": "true"}
    assert attach_otel(bare, requested=True, env=disabled) is None

    async def foreign(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    other = SimpleNamespace(name="svc", meter=foreign)
    assert attach_otel(other, requested=True, env=ENV) is None
    assert other.meter is foreign


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
