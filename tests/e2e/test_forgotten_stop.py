"""A script that calls tools in-process and never stops the server (no ``async with server``, no
``stop()``: the way people write a quick script) still meters every call: the records the meter
holds when ``asyncio.run`` ends reach the store, which flushes them at exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
CALLS = 3

SCRIPT = f"""\
import asyncio

from aircore import define_server

server = define_server(name="lazy", meter=True)


@server.tool(description="Add two numbers")
async def add(a: int, b: int) -> int:
    return a + b


async def main() -> None:
    for i in range({CALLS}):
        await server.call_tool("add", {{"a": i, "b": 1}}, request_id=str(i))


asyncio.run(main())
"""


def test_calls_of_a_server_never_stopped_are_metered_in_the_default_location(
    tmp_path: Path,
) -> None:
    (tmp_path / "quick.py").write_text(SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "AIR_DATA_DIR"}
    env["PYTHONPATH"] = str(ROOT)

    done = subprocess.run(
        [sys.executable, "-W", "ignore::ResourceWarning", "quick.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    log = tmp_path / ".air" / "data" / "meter.calls.log.jsonl"
    assert log.exists(), done.stderr
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert sorted((r["tool"], r["request_id"], r["ok"]) for r in records) == [
        ("add", str(i), True) for i in range(CALLS)
    ]
