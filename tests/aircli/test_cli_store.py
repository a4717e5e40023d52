"""``air store check`` / ``air store stats`` on real data directories."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from aircli import main
from airstore import FileStore


def _fill(data: Path) -> None:
    async def go() -> None:
        async with FileStore(data) as store:
            for i in range(3):
                await store.set("users", f"u{i}", {"n": i})
            for i in range(7):
                await store.append("meter.calls", {"tool": "t", "i": i})

    asyncio.run(go())


def _url(data: Path) -> str:
    return f"file://{data}"


def test_check_of_a_healthy_store_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tmp_path)
    assert main(["store", "check", "--store", _url(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "users: ok" in out
    assert "meter.calls: ok" in out
    assert "7 log entries" in out
    assert "result: ok" in out


def test_check_reports_each_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tmp_path)
    log = tmp_path / "meter.calls.log.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines.insert(3, b"not json at all")
    log.write_bytes(b"\n".join(lines) + b'{"torn":')
    (tmp_path / "users.json").write_bytes(b'{"format": 1, "items": {"u0": [')
    assert main(["store", "check", "--store", _url(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"corrupt_line: {log}:4" in out
    assert f"torn_tail: {log}:" in out
    assert "corrupt_snapshot" in out
    assert "1 torn tails, 1 corrupt lines" in out
    assert "3 problem(s) found" in out
    assert (tmp_path / "users.json").exists()  # check never moves or repairs anything


def test_check_runs_beside_a_live_writer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tmp_path)

    async def with_writer() -> None:
        async with FileStore(tmp_path) as writer:
            await writer.set("users", "u9", 9)
            await writer.flush()
            code = await asyncio.to_thread(main, ["store", "check", "--store", _url(tmp_path)])
            assert code == 0

    asyncio.run(with_writer())
    assert "result: ok" in capsys.readouterr().out


def test_stats_counts_keys_entries_and_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tmp_path)
    assert main(["store", "stats", "--store", _url(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    users = next(line.split() for line in lines if line.strip().startswith("users"))
    calls = next(line.split() for line in lines if line.strip().startswith("meter.calls"))
    assert users[1:3] == ["3", "0"]
    assert calls[1:3] == ["0", "7"]
    assert "2 namespaces" in lines[-1]


def test_stats_groups_numbered_internal_namespaces_unless_asked_for_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(tmp_path)

    async def rollups() -> None:
        async with FileStore(tmp_path) as store:
            for hour in range(498880, 498885):
                await store.set(f"meter.rollups.{hour}", "m:1", {"calls": hour})

    asyncio.run(rollups())
    assert main(["store", "stats", "--store", _url(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not [line for line in lines if "meter.rollups.4988" in line]
    (family,) = [line for line in lines if "meter.rollups.*" in line]
    assert family.split()[:5] == ["meter.rollups.*", "(5", "namespaces)", "5", "0"]
    assert "7 namespaces" in lines[-2]
    assert "--all lists each" in lines[-1]

    assert main(["store", "stats", "--all", "--store", _url(tmp_path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len([line for line in listed if "meter.rollups.4988" in line]) == 5
    assert "meter.rollups.*" not in "\n".join(listed)


def test_non_file_store_and_missing_dir_have_nothing_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "check", "--store", "memory://"]) == 0
    assert main(["store", "stats", "--store", _url(tmp_path / "absent")]) == 0
    out = capsys.readouterr().out
    assert "only file stores" in out
    assert "no data directory" in out


def test_air_store_check_as_a_process(tmp_path: Path) -> None:
    _fill(tmp_path)
    (tmp_path / "users.json").write_bytes(b"\x00garbage")
    result = subprocess.run(
        [sys.executable, "-m", "aircli", "store", "check", "--store", _url(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "corrupt_snapshot" in result.stdout
