"""A tool that fails with a hostile message, against a real ``air serve --transport stdio``.

Issue 12: a failing call's exception text went to stderr whole and as it was — a client that
sent 3 MB got two 3 MB log lines per failure, and every secret shape in the message (the ones
the meter masks) reached the log. The log line and the traceback, chained exceptions included,
are masked and cut like the meter's record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.aircore.conftest import ROOT, STARTUP_TIMEOUT
from tests.airmeter.test_redact_shapes import SHAPES

SERVER = """
from aircore import define_server, define_tool


def relay(params):
    try:
        raise ValueError("upstream said: " + params["cause"])
    except ValueError as exc:
        raise ConnectionError(params["note"]) from exc


server = define_server(
    name="relay",
    tools=[define_tool("relay", params={"note": "string", "cause": "string"}, handler=relay)],
)
"""
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
CALLS = 3
PAD = "x" * (3 * 1024 * 1024)


def test_a_failure_message_reaches_stderr_masked_and_cut(tmp_path: Path) -> None:
    (tmp_path / "relay.py").write_text(SERVER, encoding="utf-8")
    secrets = " ; ".join(text for _, text, _, _ in SHAPES)
    frames = b"".join(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {
                    "name": "relay",
                    "arguments": {"note": f"{secrets} {PAD}", "cause": secrets},
                    "_meta": META,
                },
            }
        ).encode()
        + b"\n"
        for i in range(CALLS)
    )
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as err:
        done = subprocess.run(
            [sys.executable, "-m", "aircli", "serve", str(tmp_path / "relay.py"),
             "--transport", "stdio", "--max-message", str(64 * 1024 * 1024)],
            input=frames, stdout=subprocess.PIPE, stderr=err, cwd=ROOT,
            timeout=STARTUP_TIMEOUT * 4,
        )  # fmt: skip
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["result"]["isError"] for a in answers] == [True] * CALLS
    told = answers[0]["result"]["content"][0]["text"]
    assert PAD in told  # the client hears what it sent …
    for what, _, secret, _ in SHAPES:  # … masked as the log and the meter mask it
        assert secret not in told, what
    log = stderr.read_text(encoding="utf-8")
    assert len(log) < 64 * 1024, f"{len(log)} bytes of stderr for {CALLS} failures"
    for what, _, secret, _ in SHAPES:
        assert secret not in log, what
    assert "Traceback (most recent call last)" in log
    assert "ValueError: upstream said: " in log  # the cause, masked, is still shown
    assert "The above exception was the direct cause" in log
    assert "ConnectionError: " in log
    assert f"({len(secrets) + 1 + len(PAD)} characters)" in log
