"""The onion chain, before-hook effects, on_error recovery, plugin lifecycle and built-ins."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from aircore import (
    AirError,
    DefinitionError,
    Tool,
    ToolContext,
    cache_plugin,
    define_plugin,
    define_server,
    define_tool,
    retry_plugin,
    timeout_plugin,
)

Next = Callable[[Any], Awaitable[Any]]


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def _recorder(name: str, log: list[str]) -> Any:
    class Hooks:
        def before(self, ctx: ToolContext) -> None:
            log.append(f"{name}.before")

        async def after(self, ctx: ToolContext, result: Any) -> None:
            log.append(f"{name}.after")

    return Hooks()


async def test_chain_runs_meter_then_plugins_in_use_order_then_user_middleware() -> None:
    log: list[str] = []

    class Meter:
        async def __call__(self, ctx: Any, call_next: Next) -> Any:
            log.append("meter.before")
            try:
                return await call_next(ctx)
            finally:
                log.append("meter.after")

        async def start(self, *, server_name: str, store: Any) -> None:
            log.append(f"meter.start:{server_name}")

        async def stop(self) -> None:
            log.append("meter.stop")

    def handler(params: dict[str, Any]) -> str:
        log.append("handler")
        return "ok"

    p1 = define_plugin("p1", middleware=[_recorder("p1", log)])
    p2 = define_plugin("p2", middleware=[_recorder("p2", log)])
    server = define_server(
        name="s",
        tools=[define_tool("t", handler=handler)],
        meter=Meter(),
        use=[p1, p2],
        middleware=[_recorder("u1", log), _recorder("u2", log)],
    )
    async with server:
        result = await server.call_tool("t", {})
    assert _text(result) == "ok"
    assert log == [
        "meter.start:s",
        "meter.before",
        "p1.before",
        "p2.before",
        "u1.before",
        "u2.before",
        "handler",
        "u2.after",
        "u1.after",
        "p2.after",
        "p1.after",
        "meter.after",
        "meter.stop",
    ]


async def test_invalid_arguments_reach_the_meter_as_a_refusal_but_never_the_handler() -> None:
    seen: list[str] = []

    async def meter(ctx: Any, call_next: Next) -> Any:
        seen.append("meter")
        try:
            return await call_next(ctx)
        except AirError as exc:
            seen.append(f"refused {exc.code}")
            raise

    def handler(params: dict[str, Any]) -> str:
        seen.append("handler")
        return "x"

    server = define_server(
        name="s",
        tools=[define_tool("t", params={"a": "string", "b": "number"}, handler=handler)],
        meter=meter,
    )
    async with server:
        result = await server.call_tool("t", {"a": 1, "b": "no"})
    assert result["isError"] is True
    assert _text(result).startswith("[-32602]")
    assert "a: must be string" in _text(result)
    assert "b: must be number" in _text(result)
    assert seen == ["meter", "refused -32602"]


async def test_before_can_replace_params() -> None:
    class Upper:
        def before(self, ctx: ToolContext) -> dict[str, Any]:
            return {"params": {"s": ctx.arguments["s"].upper()}}

    server = define_server(
        name="s",
        tools=[define_tool("echo", params={"s": "string"}, handler=lambda p: p["s"])],
        middleware=[Upper()],
    )
    async with server:
        assert _text(await server.call_tool("echo", {"s": "abc"})) == "ABC"


async def test_before_abort_answers_without_running_inner_layers() -> None:
    ran: list[str] = []

    class Abort:
        def before(self, ctx: ToolContext) -> dict[str, Any]:
            return {"abort": True, "abort_response": "short-circuit"}

    server = define_server(
        name="s",
        tools=[define_tool("t", handler=lambda p: ran.append("handler") or "x")],
        middleware=[_recorder("outer", ran), Abort(), _recorder("inner", ran)],
    )
    async with server:
        assert _text(await server.call_tool("t", {})) == "short-circuit"
    assert ran == ["outer.before", "outer.after"]


async def test_before_meta_is_merged_into_ctx_meta() -> None:
    seen: dict[str, Any] = {}

    def handler(params: dict[str, Any], ctx: ToolContext) -> str:
        seen.update(ctx.meta)
        return "ok"

    server = define_server(
        name="s",
        tools=[define_tool("t", handler=handler)],
        middleware=[{"before": lambda ctx: {"meta": {"tenant": "acme"}}}],
    )
    async with server:
        await server.call_tool("t", {})
    assert seen == {"tenant": "acme"}


async def test_on_error_runs_innermost_first_and_a_value_recovers() -> None:
    order: list[str] = []

    class Passes:
        def on_error(self, ctx: ToolContext, error: Exception) -> None:
            order.append("inner")

    class Recovers:
        def on_error(self, ctx: ToolContext, error: Exception) -> str:
            order.append("outer")
            return f"recovered from {error}"

    def boom(params: dict[str, Any]) -> str:
        raise ValueError("boom")

    server = define_server(
        name="s", tools=[define_tool("t", handler=boom)], middleware=[Recovers(), Passes()]
    )
    async with server:
        result = await server.call_tool("t", {})
    assert order == ["inner", "outer"]
    assert "isError" not in result
    assert _text(result) == "recovered from boom"


async def test_errors_become_is_error_results_with_their_code() -> None:
    def air(params: dict[str, Any]) -> str:
        raise AirError(-32050, "quota exceeded")

    def plain(params: dict[str, Any]) -> str:
        raise RuntimeError("disk on fire")

    server = define_server(
        name="s", tools=[define_tool("air", handler=air), define_tool("plain", handler=plain)]
    )
    async with server:
        a = await server.call_tool("air", {})
        p = await server.call_tool("plain", {})
    assert a == {"content": [{"type": "text", "text": "[-32050] quota exceeded"}], "isError": True}
    assert p == {"content": [{"type": "text", "text": "[-32603] disk on fire"}], "isError": True}


async def test_plain_callable_middleware_wraps_the_call() -> None:
    async def double(ctx: ToolContext, call_next: Next) -> Any:
        return (await call_next(ctx)) * 2

    server = define_server(
        name="s", tools=[define_tool("t", handler=lambda p: 21)], middleware=[double]
    )
    async with server:
        assert _text(await server.call_tool("t", {})) == "42"


async def test_plugin_lifecycle_runs_in_the_seed_order() -> None:
    log: list[str] = []

    def make(name: str) -> Any:
        def on_tool_register(tool: Tool, server: Any) -> None:
            log.append(f"{name}.register:{tool.name}")
            tool.tags = (*tool.tags, name)
            tool.description = f"{tool.description} [{name}]"

        async def on_init(server: Any) -> None:
            log.append(f"{name}.init")
            server.state[name] = True

        return define_plugin(
            name,
            on_init=on_init,
            on_start=lambda server: log.append(f"{name}.start"),
            on_tool_register=on_tool_register,
            on_stop=lambda server: log.append(f"{name}.stop"),
        )

    server = define_server(
        name="s",
        tools=[define_tool("t", description="T", handler=lambda p: "x")],
        use=[make("a"), make("b")],
    )
    await server.start()
    assert server.state == {"a": True, "b": True}
    assert server.tools["t"].tags == ("a", "b")
    assert server.tool_listing()[0]["description"] == "T [a] [b]"
    server.add_tool(define_tool("late", handler=lambda p: "y"))
    await server.stop()
    await server.stop()  # idempotent
    assert log == [
        "a.init",
        "b.init",
        "a.start",
        "b.start",
        "a.register:t",
        "b.register:t",
        "a.register:late",
        "b.register:late",
        "b.stop",
        "a.stop",
    ]


@pytest.mark.parametrize(
    "plugin",
    [
        {"meta": {}},
        {"meta": {"name": ""}},
        {"meta": {"name": "bad name!"}},
        {"meta": {"name": "cache\n"}},
        object(),
    ],
)
def test_plugin_without_a_valid_meta_name_is_rejected_at_registration(plugin: Any) -> None:
    with pytest.raises(DefinitionError):
        define_server(name="s", use=[plugin])


def test_duplicate_plugin_names_are_rejected() -> None:
    with pytest.raises(DefinitionError, match="twice"):
        define_server(name="s", use=[define_plugin("x"), {"meta": {"name": "x"}}])


async def test_timeout_plugin_cancels_a_slow_call() -> None:
    cancelled = asyncio.Event()

    async def slow(params: dict[str, Any]) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    server = define_server(
        name="s", tools=[define_tool("slow", handler=slow)], use=[timeout_plugin(0.05)]
    )
    async with server:
        result = await server.call_tool("slow", {})
    assert result["isError"] is True
    assert _text(result).startswith("[-32001]")
    assert "timed out" in _text(result)
    assert cancelled.is_set()


async def test_timeout_plugin_in_warn_mode_logs_and_lets_the_call_finish() -> None:
    warned = asyncio.Event()
    release = asyncio.Event()
    messages: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())
            warned.set()

    async def slow(params: dict[str, Any]) -> str:
        await release.wait()
        return "finished"

    server = define_server(
        name="s", tools=[define_tool("slow", handler=slow)], use=[timeout_plugin(0.01, mode="warn")]
    )
    catch = Catch(logging.WARNING)
    plugin_logger = logging.getLogger("aircore.builtin_plugins")
    plugin_logger.addHandler(catch)
    try:
        async with server:
            call = asyncio.create_task(server.call_tool("slow", {}))
            await asyncio.wait_for(warned.wait(), timeout=30)
            assert not call.done()  # warned, not cancelled
            release.set()
            result = await asyncio.wait_for(call, timeout=30)
    finally:
        plugin_logger.removeHandler(catch)
    assert "isError" not in result or result["isError"] is False
    assert _text(result) == "finished"
    assert messages == [
        "tool 'slow' still running after 0.01s (timeout_plugin mode='warn': it is not cancelled)"
    ]


def test_timeout_plugin_refuses_an_unknown_mode() -> None:
    with pytest.raises(DefinitionError, match="mode"):
        timeout_plugin(1, mode="log")


async def test_retry_plugin_retries_until_success_but_not_invalid_params() -> None:
    calls = {"flaky": 0, "bad": 0}

    def flaky(params: dict[str, Any]) -> str:
        calls["flaky"] += 1
        if calls["flaky"] < 3:
            raise ConnectionError("transient")
        return "finally"

    def bad(params: dict[str, Any]) -> str:
        calls["bad"] += 1
        raise AirError(-32602, "no")

    server = define_server(
        name="s",
        tools=[define_tool("flaky", handler=flaky), define_tool("bad", handler=bad)],
        use=[retry_plugin(2, delay=0)],
    )
    async with server:
        assert _text(await server.call_tool("flaky", {})) == "finally"
        assert (await server.call_tool("bad", {}))["isError"] is True
    assert calls == {"flaky": 3, "bad": 1}


async def test_retry_plugin_gives_up_after_max_retries() -> None:
    calls = 0

    def always(params: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        raise ConnectionError("down")

    server = define_server(
        name="s", tools=[define_tool("t", handler=always)], use=[retry_plugin(1, delay=0)]
    )
    async with server:
        assert (await server.call_tool("t", {}))["isError"] is True
    assert calls == 2


async def test_cache_plugin_hit_skips_the_handler_and_lives_in_the_store() -> None:
    calls = 0

    def compute(params: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"square": params["n"] ** 2}

    server = define_server(
        name="s",
        tools=[define_tool("sq", params={"n": "integer"}, handler=compute)],
        use=[cache_plugin(60)],
    )
    async with server:
        first = await server.call_tool("sq", {"n": 4})
        second = await server.call_tool("sq", {"n": 4})
        other = await server.call_tool("sq", {"n": 5})
        assert server.store is not None
        keys = await server.store.list("air.cache")
    assert first == second
    assert '"square": 16' in _text(first)
    assert '"square": 25' in _text(other)
    assert calls == 2
    assert len(keys) == 2
    assert all(k.startswith("sq:") for k in keys)


async def test_cache_plugin_entries_expire_with_their_ttl() -> None:
    from airstore import MemoryStore

    now = [1000.0]
    store = MemoryStore(clock=lambda: now[0])
    calls = 0

    def compute(params: dict[str, Any]) -> int:
        nonlocal calls
        calls += 1
        return calls

    server = define_server(
        name="s",
        tools=[define_tool("t", handler=compute)],
        storage=store,
        use=[cache_plugin(10)],
    )
    async with server:
        assert _text(await server.call_tool("t", {})) == "1"
        assert _text(await server.call_tool("t", {})) == "1"
        now[0] += 11
        assert _text(await server.call_tool("t", {})) == "2"
    await store.close()


async def test_cache_plugin_entries_belong_to_their_server_and_tool_version() -> None:
    from airstore import MemoryStore

    store = MemoryStore()

    def server(name: str, answer: str, version: str) -> Any:
        tool = define_tool("who", handler=lambda p: answer, meta={"version": version})
        return define_server(name=name, tools=[tool], storage=store, use=[cache_plugin(60)])

    async with server("alpha", "from alpha", "1.0.0") as alpha:
        assert _text(await alpha.call_tool("who", {})) == "from alpha"
    async with server("beta", "from beta", "1.0.0") as beta:  # same store, same tool name
        assert _text(await beta.call_tool("who", {})) == "from beta"
    async with server("alpha", "alpha 2", "2.0.0") as upgraded:  # a new version of the tool
        assert _text(await upgraded.call_tool("who", {})) == "alpha 2"
    async with server("alpha", "not run", "1.0.0") as again:  # the old entry still serves 1.0.0
        assert _text(await again.call_tool("who", {})) == "from alpha"
    await store.close()


def test_builtin_plugins_reject_bad_options() -> None:
    with pytest.raises(DefinitionError):
        timeout_plugin(0)
    with pytest.raises(DefinitionError):
        retry_plugin(-1)
    with pytest.raises(DefinitionError):
        cache_plugin(ttl=-5)


async def test_meter_hook_sees_the_call_info_and_usage() -> None:
    from aircore import CallInfo, MeterHook

    seen: list[dict[str, Any]] = []

    class Meter:
        async def __call__(self, ctx: Any, call_next: Next) -> Any:
            assert isinstance(ctx, CallInfo)
            try:
                return await call_next(ctx)
            finally:
                seen.append(
                    {
                        "tool": ctx.tool_name,
                        "layer": ctx.layer,
                        "tags": ctx.tags,
                        "annotations": ctx.annotations,
                        "usage": dict(ctx.usage),
                        "transport": ctx.transport,
                        "request_id": ctx.request_id,
                    }
                )

        async def start(self, *, server_name: str, store: Any) -> None:
            return None

        async def stop(self) -> None:
            return None

    def gen(params: dict[str, Any], ctx: ToolContext) -> str:
        ctx.usage["tokens_out"] = 7
        return "text"

    meter = Meter()
    assert isinstance(meter, MeterHook)
    server = define_server(
        name="s",
        meter=meter,
        tools=[
            define_tool(
                "generate", handler=gen, layer=6, tags=["llm"], annotations={"readOnlyHint": True}
            )
        ],
    )
    async with server:
        await server.handle_message(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "generate"}}
        )
    assert seen == [
        {
            "tool": "generate",
            "layer": 6,
            "tags": ("llm",),
            "annotations": {"readOnlyHint": True},
            "usage": {"tokens_out": 7},
            "transport": "inproc",
            "request_id": "5",
        }
    ]


async def test_cancelling_the_call_task_cancels_the_handler_and_sets_cancelled() -> None:
    entered = asyncio.Event()
    observed: list[bool] = []

    async def wait_forever(params: dict[str, Any], ctx: ToolContext) -> str:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            observed.append(ctx.cancelled)
        return "never"

    server = define_server(name="s", tools=[define_tool("w", handler=wait_forever)])
    async with server:
        task = asyncio.ensure_future(server.call_tool("w", {}))
        await asyncio.wait_for(entered.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert observed == [True]


async def test_output_breaking_its_schema_is_metered_as_a_failure() -> None:
    seen: list[str] = []

    async def meter(ctx: Any, call_next: Next) -> Any:
        try:
            value = await call_next(ctx)
        except AirError as exc:
            seen.append(f"failed {exc.code}")
            raise
        seen.append("ok")
        return value

    server = define_server(
        name="s",
        tools=[
            define_tool("good", output_schema={"n": "number"}, handler=lambda p: {"n": 1}),
            define_tool("bad", output_schema={"n": "number"}, handler=lambda p: {"n": "one"}),
        ],
        meter=meter,
    )
    async with server:
        good = await server.call_tool("good", {})
        bad = await server.call_tool("bad", {})
    assert good["structuredContent"] == {"n": 1}
    assert bad["isError"] is True
    assert _text(bad).startswith("[-32603]")
    assert "outputSchema" in _text(bad)
    assert seen == ["ok", "failed -32603"]


@pytest.mark.parametrize("with_middleware", [False, True])
async def test_a_result_that_is_not_json_is_metered_as_the_failure_the_client_gets(
    with_middleware: bool,
) -> None:
    from airmeter import MemorySink, create_meter_hook

    class Opaque:
        pass

    sink = MemorySink()
    seen: list[str] = []

    async def passing(ctx: Any, call_next: Next) -> Any:
        seen.append(ctx.tool_name)
        return await call_next(ctx)

    server = define_server(
        name="s",
        tools=[
            define_tool("fine", handler=lambda p: {"n": 1}),
            define_tool("opaque", handler=lambda p: {"rows": [1, Opaque()]}),
        ],
        meter=create_meter_hook(sinks=[sink]),
        middleware=[passing] if with_middleware else [],
    )

    @server.tool
    def opaque_typed() -> Any:  # a return annotation without a JSON shape: no outputSchema
        return Opaque()

    async with server:
        fine = await server.call_tool("fine", {})
        opaque = await server.call_tool("opaque", {})
        typed = await server.call_tool("opaque_typed", {})
    records = await sink.wait_for(3, timeout=30.0)
    assert "isError" not in fine
    assert opaque["isError"] is True
    assert typed["isError"] is True
    assert "result['rows'][1] is a " in _text(opaque)
    assert "Opaque" in _text(opaque)
    assert [(r.tool, r.ok, r.error_type) for r in records] == [
        ("fine", True, None),
        ("opaque", False, "-32603"),
        ("opaque_typed", False, "-32603"),
    ]
    assert records[0].output_bytes == len(b'{"n":1}')  # the meter still sees the tool's value
    assert seen == (["fine", "opaque", "opaque_typed"] if with_middleware else [])


async def test_the_value_a_middleware_put_in_place_is_the_one_answered() -> None:
    async def replace(ctx: Any, call_next: Next) -> Any:
        await call_next(ctx)
        return {"replaced": True}

    server = define_server(
        name="s", tools=[define_tool("t", handler=lambda p: "original")], middleware=[replace]
    )
    async with server:
        result = await server.call_tool("t", {})
    assert "replaced" in _text(result)
    assert "original" not in _text(result)
