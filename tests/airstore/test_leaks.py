"""A store its owner forgets to close: a ResourceWarning, closed (flushed) at interpreter exit,
and the process still exits. One real process per backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from airstore import create_storage
from tests.airstore.backends import Backend, FakeClock

LEAKY = Path(__file__).with_name("leaky_writer.py")


def _run(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", str(LEAKY), url],
        capture_output=True,
        text=True,
        timeout=60,  # a process kept alive by a forgotten store fails here
    )


async def test_a_store_never_closed_warns_and_is_closed_at_exit_without_blocking_it(
    backend: Backend, tmp_path: Path, clock: FakeClock
) -> None:
    url = backend.url(tmp_path)
    result = _run(url)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "written\n"
    assert "ResourceWarning" in result.stderr
    assert "was never closed" in result.stderr
    if not backend.persistent:
        return
    async with await create_storage(url, read_only=True) as reader:
        assert await reader.get("ns", "k") == {"v": 1}
        assert await reader.get("ns", "n") == 1
        assert [e["i"] for e in await reader.query("log")] == [1]
