"""A handler's own faults that aircore answers with -32603 (a value that is not JSON, a
``SystemExit``) are the tool's failures: class ``exception``, counted in its error rate, over
real stdio with the official client and read back by ``air meter report``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from mcp import Client, StdioServerParameters

from airmeter import CALLS_NAMESPACE
from airstore.file import FileStore

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


async def _logged(data: Path, n: int) -> list[dict[str, Any]]:
    """The call log another process writes, once it holds ``n`` entries (30 s at most)."""
    async with asyncio.timeout(30):
        while True:
            async with FileStore(data, read_only=True) as store:
                logged = await store.query(CALLS_NAMESPACE, limit=n + 1)
            if len(logged) >= n:
                return logged
            await asyncio.sleep(0.05)


def _report(url: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "aircli", "meter", "report", "--store", url, "--since", "all",
         "--format", "json"],
        capture_output=True, text=True, check=True, cwd=str(ROOT), timeout=60,
    )  # fmt: skip
    report: dict[str, Any] = orjson.loads(out.stdout)
    return report


async def test_a_value_that_is_not_json_and_system_exit_count_in_the_tools_error_rate(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    url = f"file://{data}"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aircli", "serve", str(HERE / "aircore_metered_server.py"),
              "--transport", "stdio", "--store", url],
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    async with Client(params) as client:
        opaque = await client.call_tool("opaque", {})
        exits = await client.call_tool("exits", {})
        still_serving = await client.call_tool("echo", {"text": "after"})
    # the client gets a clean error, no traceback or object repr
    assert opaque.is_error
    assert exits.is_error
    texts = [opaque.content[0].text, exits.content[0].text]
    assert texts[0].startswith("[-32603] the tool returned a value that is not JSON")
    assert texts[1] == "[-32603] tool 'exits' tried to exit the server (SystemExit: 3)"
    assert all("Traceback" not in t and " at 0x" not in t for t in texts)
    assert not still_serving.is_error
    # the server stops on stdin EOF and delivers every record before exiting
    logged = await _logged(data, 3)
    failed = {e["tool"]: e for e in logged if not e["ok"]}
    assert {t: (e["error_type"], e["error_class"]) for t, e in failed.items()} == {
        "opaque": ("-32603", "exception"),
        "exits": ("-32603", "exception"),
    }
    tools = {t["tool"]: t for t in _report(url)["tools"]}
    assert tools["opaque"]["error_rate"] == 1.0
    assert tools["exits"]["error_rate"] == 1.0
    assert tools["opaque"]["errors_by_class"] == {"exception": 1}
    assert tools["echo"]["error_rate"] == 0.0
