"""A store its owner forgets to close: a ResourceWarning, closed (flushed) at interpreter exit,
and the process still exits. One real process per backend."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import subprocess
import sys
import warnings
from pathlib import Path

from airstore import FileStore, create_storage
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


async def test_reads_cancelled_while_namespaces_load_leave_no_file_open(tmp_path: Path) -> None:
    """A caller cancelled while its namespace's snapshot is being opened in a worker thread
    (a dashboard refresh that timed out) must not leak that file; the namespace still loads."""
    names = [f"ns{i}" for i in range(60)]
    async with FileStore(tmp_path) as store:
        for ns in names:
            await store.set(ns, "k", "x" * 1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        async with FileStore(tmp_path, read_only=True) as reader:
            for i, ns in enumerate(names):
                task = asyncio.ensure_future(reader.get(ns, "k"))
                for _ in range(i % 5):  # cancel at every stage of the load
                    await asyncio.sleep(0)
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for ns in names:
                assert await reader.get(ns, "k") == "x" * 1000
        gc.collect()
    unclosed = [str(w.message) for w in caught if "unclosed file" in str(w.message)]
    assert unclosed == []
