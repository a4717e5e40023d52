"""Records carry sizes, not payloads: every text field is cut to its cap with its original size
beside it, and no call-log line exceeds 64 KiB, whatever a client or a handler sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aircore import define_server, define_tool
from airmeter import MemorySink, Meter, MeterConfigError, MeterMiddleware
from airmeter.fields import MAX_ID_BYTES, MAX_LINE_BYTES, cut_text
from airstore import FileStore
from tests.airmeter.fakes import FakeContext

MB = 1024 * 1024


def _log_lines(data: Path) -> list[bytes]:
    lines: list[bytes] = []
    for path in sorted(data.rglob("*")):
        if path.is_file() and "meter.calls" in str(path):  # the log (not its settings file)
            lines += [line for line in path.read_bytes().split(b"\n") if b'"_ts":' in line]
    return lines


async def test_megabyte_arguments_results_and_messages_leave_small_lines(tmp_path: Path) -> None:
    def echo(params: dict[str, Any]) -> Any:
        if params["fail"]:
            raise ValueError("bad input: " + params["blob"])
        return {"blob": params["blob"]}

    data = tmp_path / "data"
    tool = define_tool("echo", params={"blob": "string", "fail": "boolean"}, handler=echo)
    hook = MeterMiddleware(capture_arguments=True, capture_results=True)
    server = define_server(name="s", tools=[tool], storage=f"file://{data}", meter=hook)
    blob = "x" * (3 * MB)
    async with server:
        await server.call_tool("echo", {"blob": blob, "fail": False}, request_id="ok")
        await server.call_tool("echo", {"blob": blob, "fail": True}, request_id="r" * MB)
        (failed, good) = hook.meter.recent(2)[::-1]
    lines = _log_lines(data)
    assert len(lines) == 2
    assert max(len(line) for line in lines) <= MAX_LINE_BYTES
    assert isinstance(good.arguments, str)
    assert good.arguments.endswith("…")
    assert good.arguments_bytes is not None
    assert good.arguments_bytes > 3 * MB
    assert good.input_bytes == good.arguments_bytes
    assert good.result_bytes is not None
    assert good.result_bytes > 3 * MB
    assert good.output_bytes is not None
    assert good.output_bytes > 3 * MB
    assert failed.error_message is not None
    assert failed.error_message.startswith("bad input: xxx")
    assert failed.error_message_bytes == len("bad input: ") + 3 * MB
    assert len(orjson.dumps(failed.error_message)) <= 4096 + 2
    assert failed.request_id is not None
    assert len(failed.request_id.encode()) <= MAX_ID_BYTES


async def test_small_values_are_kept_whole_without_sizes_beside_them() -> None:
    sink = MemorySink()
    meter = Meter(sinks=[sink])
    mw = MeterMiddleware(meter, capture_arguments=True, capture_results=True)

    async def fail(ctx: Any) -> Any:
        raise RuntimeError("short")

    with pytest.raises(RuntimeError):
        await mw(FakeContext("get_user", {"id": 7}), fail)
    await meter.stop()
    (rec,) = sink.records
    assert (rec.arguments, rec.arguments_bytes) == ({"id": 7}, None)
    assert (rec.error_message, rec.error_message_bytes) == ("short", None)


def test_max_field_bytes_is_bounded() -> None:
    for bad in (0, 63, 16 * 1024 + 1):
        with pytest.raises(MeterConfigError):
            MeterMiddleware(max_field_bytes=bad)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(min_size=0, max_size=3000), limit=st.integers(min_value=64, max_value=600))
def test_a_cut_text_always_fits_and_keeps_its_start(text: str, limit: int) -> None:
    out, size = cut_text(text, limit)
    assert len(orjson.dumps(out)) - 2 <= limit
    if size is None:
        assert out == text.encode("utf-8", "replace").decode("utf-8")
    else:
        assert out.endswith("…")
        assert size == len(text.encode("utf-8", "surrogatepass"))


hostile = st.text(alphabet=st.characters(codec=None), min_size=0, max_size=2000) | st.builds(
    lambda c, n: c * n,
    st.sampled_from(['"', "\\", "\x00", "\ud800", "é", "𝄞"]),
    st.integers(min_value=0, max_value=40_000),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=hostile, request_id=hostile, arg=hostile, client=hostile)
def test_no_record_of_hostile_text_encodes_above_the_line_cap(
    message: str, request_id: str, arg: str, client: str
) -> None:
    import asyncio

    async def run() -> bytes:
        sink = MemorySink()
        meter = Meter(sinks=[sink])
        mw = MeterMiddleware(meter, capture_arguments=True, capture_results=True,
                             max_field_bytes=16 * 1024)  # fmt: skip

        async def fail(ctx: Any) -> Any:
            raise ValueError(message)

        ctx = FakeContext("t", {"a": arg, "b": [arg, {"c": arg}]}, request_id=request_id,
                          client_name=client, session_id=request_id)  # fmt: skip
        with pytest.raises(ValueError):
            await mw(ctx, fail)
        await meter.stop()
        (rec,) = sink.records
        return orjson.dumps(rec.to_log())

    line = asyncio.run(run())
    assert len(line) <= MAX_LINE_BYTES


async def test_a_store_accepts_every_bounded_record(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "d") as store:
        meter = Meter(store=store)
        mw = MeterMiddleware(meter, capture_arguments=True)

        async def ok(ctx: Any) -> str:
            return "fine"

        await mw(FakeContext("t", {"a": "\ud800" * 10, "b": "\x00" * 100_000}), ok)
        await meter.stop()
        (rec,) = await store.query("meter.calls")
    assert rec["tool"] == "t"


async def test_records_made_elsewhere_are_bounded_and_redacted_too() -> None:
    from airmeter import CallRecord, Layer
    from airmeter.record import LEGACY_FIELDS, from_legacy

    sink = MemorySink()
    meter = Meter(sinks=[sink], max_field_bytes=256)
    plain = CallRecord(ts_ms=1, server="s", tool="t", layer=Layer.L2, latency_ms=1.0, ok=True)
    leaky = CallRecord(
        ts_ms=2, server="s", tool="t", layer=Layer.L2, latency_ms=1.0, ok=False,
        error_type="ValueError", error_message="db password=hunter2pw " + "y" * 1000,
        request_id="r" * 1000, arguments={"token": "abc", "q": "x"},
    )  # fmt: skip
    legacy = [None] * len(LEGACY_FIELDS)
    legacy[:6] = [3, "s", "t", Layer.L5, 2.0, False]
    legacy[LEGACY_FIELDS.index("error_message")] = "Bearer abcdefgh12345678"
    meter.record(plain)
    meter.record(leaky)
    meter.record(from_legacy(tuple(legacy)))  # the deprecated tuple, converted by its caller
    await meter.stop()
    first, second, third = sink.records
    assert first is plain
    assert second.error_message is not None
    assert "hunter2pw" not in second.error_message
    assert second.error_message_bytes == len("db password=hunter2pw ") + 1000
    assert second.request_id is not None
    assert len(second.request_id) < 1000
    assert second.arguments == {"token": "[REDACTED]", "q": "x"}
    assert (third.ts_ms, third.layer, third.error_message) == (3, Layer.L5, "Bearer [REDACTED]")


async def test_the_meter_refuses_what_is_not_a_record_at_the_call() -> None:
    from airmeter.record import LEGACY_FIELDS

    sink = MemorySink()
    meter = Meter(sinks=[sink])
    legacy = (3, "s", "t", 5, 2.0, False) + (None,) * (len(LEGACY_FIELDS) - 6)
    for wrong in (legacy, (1, 2), {"tool": "t"}):
        with pytest.raises(TypeError, match="from_legacy"):
            meter.record(wrong)  # type: ignore[arg-type]
    assert meter.stats.recorded == 0  # nothing queued
    await meter.stop()
    assert sink.records == []
