from __future__ import annotations

import pytest

from airmeter import LAYERS, CallRecord, Layer, parse_layer


def test_layer_table_has_seven_rising_weights() -> None:
    assert [info.code for info in LAYERS] == [f"L{i}" for i in range(1, 8)]
    assert [info.weight for info in LAYERS] == [1, 3, 5, 10, 20, 50, 100]
    assert Layer.L5.weight == 20
    assert Layer.L5.code == "L5"


@pytest.mark.parametrize("raw", [3, "3", "L3", "l3", Layer.L3])
def test_parse_layer_accepts_every_spelling(raw: object) -> None:
    assert parse_layer(raw) is Layer.L3


@pytest.mark.parametrize("raw", [0, 8, "L9", "x", None, True])
def test_parse_layer_rejects_nonsense(raw: object) -> None:
    with pytest.raises(ValueError, match="layer"):
        parse_layer(raw)


def test_call_record_log_form_round_trips() -> None:
    rec = CallRecord(
        ts_ms=1_700_000_000_000,
        server="demo",
        tool="get_user",
        layer=Layer.L2,
        latency_ms=1.5,
        ok=False,
        error_type="tool_error",
        request_id="7",
        tokens_in=3,
    )
    log = rec.to_log()
    assert log["_ts"] == 1_700_000_000_000
    assert log["layer"] == "L2"
    assert log["error_type"] == "tool_error"
    assert "session_id" not in log
    assert CallRecord.from_log(log) == rec
