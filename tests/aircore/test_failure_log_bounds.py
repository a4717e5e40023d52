"""What a failure path logs is bounded and masked whatever the failure: a deep recursion's
thousand frames, or a text that cannot be masked."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import airmeter
from aircore.failure_log import MAX_FRAMES, FailureLog, masked_text


def _ping(n: int) -> int:
    return _pong(n + 1)


def _pong(n: int) -> int:
    return _ping(n + 1)


def test_a_deep_recursion_logs_a_bounded_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="aircore")
    try:
        _ping(0)
    except RecursionError as exc:
        FailureLog().tool_failed("deep", "7", exc)
    (record,) = [r for r in caplog.records if r.name == "aircore"]
    text = caplog.text
    assert "tool 'deep' failed (request 7)" in record.getMessage()
    assert "frames of its traceback left out" in text
    assert text.count("in _ping") + text.count("in _pong") <= MAX_FRAMES
    assert len(text.encode()) < 16 * 1024


def test_a_text_that_cannot_be_masked_is_withheld(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(airmeter, "redact_text", broken)
    out = masked_text("password=hunter2pw")
    assert "hunter2pw" not in out
    assert out == "<18 characters withheld: masking them failed (RecursionError)>"
