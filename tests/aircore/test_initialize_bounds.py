"""A legacy session keeps what its ``initialize`` declared for its whole life: an oversized
declaration is refused (a real ``air serve`` process over stdio), so 1,024 sessions can never
each hold a whole request body."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from aircore.protocol.legacy import MAX_DECLARATION_BYTES
from tests.aircore.conftest import LIFECYCLE, serve_args


def _initialize(msg_id: int, capabilities: object, client_info: object) -> bytes:
    params = {"protocolVersion": "2025-06-18", "capabilities": capabilities,
              "clientInfo": client_info}  # fmt: skip
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}
    ).encode()


def test_an_initialize_declaring_too_much_is_refused_and_a_normal_one_then_served(
    tmp_path: Path,
) -> None:
    pad = "x" * MAX_DECLARATION_BYTES
    frames = [
        _initialize(1, {"experimental": {"pad": pad}}, {"name": "c", "version": "1"}),
        _initialize(2, {}, {"name": "c", "version": "1", "title": pad}),
        _initialize(3, {"roots": {}}, {"name": "c", "version": "1"}),
    ]
    done = subprocess.run(
        serve_args(LIFECYCLE, "--transport", "stdio"),
        input=b"\n".join(frames) + b"\n",
        capture_output=True,
        timeout=60,
        env={**os.environ, "AIR_TEST_EVENTS": str(tmp_path / "events.txt")},
        check=False,
    )
    answers = sorted((json.loads(line) for line in done.stdout.splitlines()), key=lambda a: a["id"])
    assert [a.get("error", {}).get("code") for a in answers] == [-32602, -32602, None]
    assert f"at most {MAX_DECLARATION_BYTES}" in answers[0]["error"]["message"]
    assert answers[2]["result"]["protocolVersion"] == "2025-06-18"
