"""SIGKILL a real writer process at random moments; the store must reopen within its loss window.

Per durability mode the writer (crash_writer.py) sets and appends at full speed and reports
every acknowledged operation; after the kill the parent checks that every file parses, the
store reopens, nothing survives out of order, and the lost acknowledged writes are at most:

* ``sync``: none;
* ``journal``: the writes acknowledged since the writer's loop last yielded (one loop turn);
* ``snapshot``: KV writes since the last completed flush; appends as in ``journal``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airstore import FileStore
from airstore._recovery import check_directory
from tests.airstore.crash_writer import MAX_LOG_BYTES, YIELD_EVERY

WRITER = Path(__file__).with_name("crash_writer.py")
ROUNDS = 7  # per mode; 21 in all

# Every test runs twice: Linux's own platform calls, then macOS's (tests/airstore/conftest.py).
pytestmark = pytest.mark.usefixtures("platform_shape")


def _wait_for(condition: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.002)


def _run_and_kill(data: Path, mode: str, start: int, ack: Path, rng: random.Random) -> None:
    ack.write_bytes(b"")
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), str(data), mode, str(start), str(ack)],
        stderr=subprocess.PIPE,
    )
    try:
        # bytes of acks: ~300 to ~15 k iterations; sync mode waits for a disk flush per op
        target = rng.randint(300, 3_000) if mode == "sync" else rng.randint(2_000, 120_000)
        _wait_for(lambda: ack.stat().st_size >= target or proc.poll() is not None, timeout=60)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()


def _parse_acks(ack: Path, counts: list[int] | None = None) -> tuple[list[int], list[int], int]:
    """(acknowledged sets, appends, last flushed set); ``counts`` gets the acknowledged values
    of the shared counter."""
    sets: list[int] = []
    appends: list[int] = []
    flushed = -1
    data = ack.read_bytes()
    for line in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        kind, num = line[:1], int(line[1:])
        if kind == b"s":
            sets.append(num)
        elif kind == b"a":
            appends.append(num)
        elif kind == b"c":
            if counts is not None:
                counts.append(num)
        else:
            flushed = num
    return sets, appends, flushed


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["journal", "snapshot", "sync"])
async def test_sigkilled_writer_loses_at_most_its_window(mode: str, tmp_path: Path) -> None:
    rng = random.Random(f"crash-{mode}")
    data = tmp_path / "data"
    ack = tmp_path / "acks"
    start = 0
    kept_keys: list[int] = []  # keys verified present after earlier rounds
    kept_entries = 0
    for _round in range(ROUNDS):
        _run_and_kill(data, mode, start, ack, rng)
        sets, appends, flushed = _parse_acks(ack)
        assert sets, "the writer acknowledged nothing before the kill"

        # Every file parses; at most a torn tail, which the reopen below repairs.
        before = await check_directory(str(data))
        assert {f.kind for f in before.findings} <= {"torn_tail"}, before.findings

        store = FileStore(data, durability=mode, max_log_bytes=MAX_LOG_BYTES)  # type: ignore[arg-type]
        await store.init()
        try:
            lost = [i for i in sets if await store.get("crash", f"k{i}") != i]
            if mode == "sync":
                assert lost == []
            elif mode == "journal":
                assert set(lost) <= set(sets[-YIELD_EVERY:]), lost
            else:
                assert all(i > flushed for i in lost), (lost[:5], flushed)
            for i in kept_keys:
                assert await store.get("crash", f"k{i}") == i
            lost_set = set(lost)  # (built once, not once per acknowledged key)
            kept_keys = [i for i in sets if i not in lost_set][-2000:]

            entries = [e["i"] for e in reversed(await store.query("crash.log", limit=10**9))]
            assert entries == sorted(set(entries)), "log entries duplicated or out of order"
            old = [i for i in entries if i < start]
            assert len(old) == kept_entries, "entries of earlier rounds went missing"
            survived = set(entries)
            lost_entries = [i for i in appends if i not in survived]
            if mode == "sync":
                assert lost_entries == []
            else:
                assert set(lost_entries) <= set(appends[-YIELD_EVERY:]), lost_entries
            kept_entries = len(entries)
        finally:
            await store.close()
        assert (await check_directory(str(data))).ok
        start = max(sets[-1], appends[-1] if appends else 0) + 1000
    rotated = [n for n in os.listdir(data) if n.startswith("crash.log.log.0")]
    assert rotated, "the log never rotated: kills around rotations were not exercised"


WRITERS = 4
MULTI_ROUNDS = 3  # per mode; 9 in all, 4 writer processes each


def _spawn(data: Path, mode: str, start: int, ack: Path) -> subprocess.Popen[bytes]:
    ack.write_bytes(b"")
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(data), mode, str(start), str(ack), "shared"],
        stderr=subprocess.PIPE,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()


def _run_writers_and_kill(
    data: Path, mode: str, starts: list[int], acks: list[Path], rng: random.Random
) -> None:
    """Start one writer per ack file; once each has acknowledged a random amount, SIGKILL one
    of them first (half the time; the others write on past its torn tail) and then all."""
    procs = [_spawn(data, mode, start, ack) for start, ack in zip(starts, acks, strict=True)]
    try:
        for ack, proc in zip(acks, procs, strict=True):
            target = rng.randint(300, 2_000) if mode == "sync" else rng.randint(2_000, 40_000)
            _wait_for(_grown(ack, target, proc), 60)
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        if rng.random() < 0.5:
            victim = rng.randrange(len(procs))
            _stop(procs[victim])
            other = acks[(victim + 1) % len(acks)]
            _wait_for(_grown(other, other.stat().st_size + 2000, None), 60)
    finally:
        for proc in procs:
            _stop(proc)


def _grown(ack: Path, size: int, proc: subprocess.Popen[bytes] | None) -> object:
    return lambda: ack.stat().st_size >= size or (proc is not None and proc.poll() is not None)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["journal", "snapshot", "sync"])
async def test_sigkilled_writers_sharing_a_directory_each_lose_at_most_their_window(
    mode: str, tmp_path: Path
) -> None:
    """4 writer processes set, append and incr one shared counter at once; one of them, or
    all together, are SIGKILLed at random moments. Per process, losses stay in its window."""
    rng = random.Random(f"multi-crash-{mode}")
    data = tmp_path / "data"
    kept: set[int] = set()  # keys verified present after earlier rounds
    top_count = 0
    for round_no in range(MULTI_ROUNDS):
        acks = [tmp_path / f"acks-{w}" for w in range(WRITERS)]
        starts = [(round_no * WRITERS + w) * 10_000_000 for w in range(WRITERS)]
        _run_writers_and_kill(data, mode, starts, acks, rng)
        before = await check_directory(str(data))
        assert {f.kind for f in before.findings} <= {"torn_tail"}, before.findings

        store = FileStore(data, durability=mode, max_log_bytes=MAX_LOG_BYTES)  # type: ignore[arg-type]
        await store.init()
        try:
            entries = {e["i"] for e in await store.query("crash.log", limit=10**9)}
            counts: list[int] = []
            for w in range(WRITERS):
                sets, appends, flushed = _parse_acks(acks[w], counts)
                assert sets, f"writer {w} acknowledged nothing before the kill"
                lost = [i for i in sets if await store.get("crash", f"k{i}") != i]
                lost_entries = [i for i in appends if i not in entries]
                if mode == "sync":
                    assert lost == [], (w, lost[:5])
                    assert lost_entries == [], (w, lost_entries[:5])
                elif mode == "journal":
                    assert set(lost) <= set(sets[-YIELD_EVERY:]), (w, lost[:5])
                else:
                    assert all(i > flushed for i in lost), (w, lost[:5], flushed)
                if mode != "sync":
                    assert set(lost_entries) <= set(appends[-YIELD_EVERY:]), (w, lost_entries)
                lost_set = set(lost)
                kept.update(i for i in sets[-500:] if i not in lost_set)
            for i in kept:
                assert await store.get("crash", f"k{i}") == i, i
            # incr writes its record before it returns: an acknowledged count is never lost
            total = await store.get("crash", "shared") or 0
            assert total >= max(counts, default=0)
            assert total >= top_count
            assert len(set(counts)) == len(counts), "two increments returned the same value"
            top_count = total
        finally:
            await store.close()
        assert (await check_directory(str(data))).ok
