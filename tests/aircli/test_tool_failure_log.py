"""A tool that raises tells its author why (traceback on stderr), and its client nothing more."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from aircore.failure_log import FailureLog

SERVER = """
from aircore import define_server, define_tool


def parse_config(params):
    return _load(params["text"])


def _load(text):
    raise ValueError(f"bad config line: {text}")


server = define_server(
    name="broken",
    tools=[define_tool("parse_config", params={"text": "string"}, handler=parse_config)],
    storage="memory://",
)
"""


async def test_a_raising_tool_logs_its_traceback_with_tool_and_request_id(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(SERVER, encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aircli", "serve", str(tmp_path / "broken.py"), "--transport", "stdio"],
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, err)) as client:
            result = await client.call_tool("parse_config", {"text": "x=1"})
    text = errlog.read_text(encoding="utf-8")
    assert result.is_error
    answer = result.content[0].text  # type: ignore[union-attr]
    assert "bad config line: x=1" in answer
    assert "Traceback" not in answer
    assert "_load" not in answer
    assert "tool 'parse_config' failed (request " in text
    assert "Traceback (most recent call last)" in text
    assert 'in _load\n    raise ValueError(f"bad config line: {text}")' in text
    assert "ValueError: bad config line: x=1" in text


def test_repeated_failures_log_one_traceback_per_window_then_one_line_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    log = FailureLog(every=60.0, clock=lambda: now[0])
    caplog.set_level(logging.ERROR, logger="aircore")
    for n in range(3):
        log.tool_failed("explode", str(n), RuntimeError(f"boom {n}"))
    log.tool_failed("other", None, RuntimeError("boom"))
    log.tool_failed("explode", "3", KeyError("k"))  # another error type: its own traceback
    now[0] = 61.0
    log.tool_failed("explode", "4", RuntimeError("boom 4"))
    seen = [
        (r.getMessage().split(":", 1)[0], r.exc_info is not None)
        for r in caplog.records
        if r.name == "aircore"
    ]
    assert seen == [
        ("tool 'explode' failed (request 0)", True),
        ("tool 'explode' failed (request 1)", False),
        ("tool 'explode' failed (request 2)", False),
        ("tool 'other' failed (request -)", True),
        ("tool 'explode' failed (request 3)", True),
        ("tool 'explode' failed (request 4)", True),
    ]
