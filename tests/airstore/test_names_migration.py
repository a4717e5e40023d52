"""A data directory of format 3 (files named by the namespace itself) opens in this release: a
reader reads it as it is, a writer moves it to format 4's file names (``airstore._migrate``),
losing nothing even when killed mid-move; releases of the two formats never write beside each
other.

``fixtures/datadir-v3-names`` was written by the format-3 release
(``fixtures/make_names_datadir.py``, left the way a crash leaves it): names that differ only in
case, Windows device names, a trailing dot, a 128-letter upper-case name, two writer slots,
rotated and compressed segments, retention caps, a snapshot kept aside as corrupt.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from airstore import CorruptDataError, FileStore, StoreLockedError, UnsupportedFormatError
from airstore._filenames import discover
from airstore._format import FORMAT
from airstore._migrate import moves
from airstore._names import decode, is_device_stem
from airstore._recovery import check_directory
from airstore._retention import read_retention

FIXTURE = Path(__file__).with_name("fixtures") / "datadir-v3-names"
REPO = Path(__file__).resolve().parents[2]
FORMAT_3_COMMIT = "32f4506a50259652ec33e21e753c1fd54713d47d"
"""The last commit of the format-3 release: the earlier release the cross-release tests run."""

KV_NAMES = [
    "Calls", "calls", "CALLS", "con", "aux.txt", "Com3.log", "LPT1", "nul", "trail.", "trail",
    "N" * 128,
]  # fmt: skip
LOG_NAMES = ["Calls", "calls", "trail.", "aux.txt"]


async def _content(store: FileStore) -> dict[str, Any]:
    """Everything the fixture holds, as a store reads it."""
    kv = {ns: dict(await store.entries(ns)) for ns in KV_NAMES}
    logs = {}
    for ns in LOG_NAMES:
        entries = await store.query(ns, limit=1000)
        logs[ns] = sorted((e["w"], e["i"], e["ns"]) for e in entries)
    return {"kv": kv, "logs": logs}


def _expected() -> dict[str, Any]:
    kv: dict[str, Any] = {}
    for ns in KV_NAMES:
        doc = orjson.loads((FIXTURE / f"{ns}.json").read_bytes())["items"][0][1]
        kv[ns] = {"snap": doc, "journal": doc}
    kv["Calls"]["second"] = 2
    logs = {ns: sorted((w, i, ns) for w in (0, 1) for i in range(21)) for ns in LOG_NAMES}
    return {"kv": kv, "logs": logs}


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def _marker(root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads((root / ".airstore").read_bytes())
    return doc


def _assert_moved(root: Path) -> None:
    """Every file is named as format 4 names it, and the marker says the move is done."""
    assert _marker(root) == {"airstore": "datadir", "format": FORMAT}
    assert moves(str(root)) == []
    names = os.listdir(root)
    assert len({n.casefold() for n in names}) == len(names)
    for name in names:
        assert not is_device_stem(name), name
        stem = name.split(".json.corrupt-")[0]  # the time stamp says T and Z
        assert stem == stem.lower() or name.startswith("."), name
    assert sorted(discover(str(root))) == sorted({*KV_NAMES, *LOG_NAMES, "Bad"})
    assert decode("+calls") == "Calls"
    assert (root / "+calls.log.s1.jsonl").exists()  # writer slot 1's files moved too
    assert [p for p in names if p.startswith("+bad.json.corrupt-")]  # the kept-aside snapshot


async def _assert_checked(root: Path) -> None:
    """``air store check`` sees every namespace, under either name, and the one finding."""
    report = await check_directory(str(root))
    assert sorted(ns.namespace for ns in report.namespaces) == sorted(
        {*KV_NAMES, *LOG_NAMES, "Bad"}
    )
    assert [(f.kind, f.namespace) for f in report.findings] == [("snapshot_kept_aside", "Bad")]


def test_the_fixture_is_what_the_format_3_release_wrote() -> None:
    assert _marker(FIXTURE) == {"airstore": "datadir", "format": 3}
    assert {old for old, _ in moves(str(FIXTURE))} >= {
        "Calls.json", "Calls.log.s1.00000001.jsonl.gz", "Calls.retention.json", "con.json",
        "aux.txt.log.jsonl", "trail..journal.jsonl", "Bad.json.corrupt-20261207T015630Z",
    }  # fmt: skip


async def test_a_reader_reads_a_format_3_directory_as_it_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    before = _files(data)
    async with FileStore(data, read_only=True) as reader:
        assert await _content(reader) == _expected()
    assert sorted(discover(str(data))) == sorted({*KV_NAMES, *LOG_NAMES, "Bad"})
    await _assert_checked(data)
    assert _files(data) == before


async def test_a_writer_moves_a_format_3_directory_to_the_new_names_losing_nothing(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    async with FileStore(data, handle_sigterm=False) as store:
        assert await _content(store) == _expected()
        await store.set("Calls", "after", 1)
        await store.append("Calls", {"w": 9, "i": 99, "ns": "Calls"})
        await store.set("calls", "after", 2)
    _assert_moved(data)
    caps = read_retention(str(data), "Calls")
    assert caps is not None
    assert caps.max_bytes == 1 << 30
    expected = _expected()
    expected["kv"]["Calls"]["after"] = 1
    expected["kv"]["calls"]["after"] = 2
    expected["logs"]["Calls"] = sorted([*expected["logs"]["Calls"], (9, 99, "Calls")])
    async with FileStore(data, read_only=True) as reader:
        assert await _content(reader) == expected
    await _assert_checked(data)


_WRITE_CALLS = """
import asyncio, sys
from airstore import FileStore
async def main():
    async with FileStore(sys.argv[1], handle_sigterm=False) as store:
        await store.set("Calls", "moved", 5)
        await store.append("Calls", {"w": 9, "i": 99, "ns": "Calls"})
asyncio.run(main())
"""


async def test_a_reader_open_while_another_process_moves_the_directory_keeps_reading(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    expected = _expected()
    async with FileStore(data, read_only=True) as reader:
        assert await _content(reader) == expected  # every namespace loaded by its old names
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _WRITE_CALLS, str(data), cwd=REPO
        )
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        _assert_moved(data)  # and the writer compacted Calls at its close
        expected["kv"]["Calls"]["moved"] = 5
        expected["logs"]["Calls"] = sorted([*expected["logs"]["Calls"], (9, 99, "Calls")])
        assert await _content(reader) == expected
        assert reader.recovery == []


_RACER = """
import asyncio, sys
from airstore import FileStore
sys.stdin.read()  # every racer starts at once, when the test closes their stdin
async def main():
    async with FileStore(sys.argv[1], handle_sigterm=False) as store:
        await store.set("Calls", "racer-" + sys.argv[2], int(sys.argv[2]))
asyncio.run(main())
"""


async def test_writers_of_this_release_opening_an_earlier_directory_at_once_all_get_in(
    tmp_path: Path,
) -> None:
    """One moves the directory, the others wait for the move (``.lock`` exclusive) and open."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    racers = [
        await asyncio.create_subprocess_exec(
            *(sys.executable, "-c", _RACER, str(data), str(i)), stdin=subprocess.PIPE, cwd=REPO
        )
        for i in range(4)
    ]
    for proc in racers:
        assert proc.stdin is not None
        proc.stdin.close()
    for proc in racers:
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    _assert_moved(data)
    expected = _expected()
    expected["kv"]["Calls"].update({f"racer-{i}": i for i in range(4)})
    async with FileStore(data, read_only=True) as reader:
        assert await _content(reader) == expected


_MOVER = """
import asyncio, sys
from airstore import FileStore, _migrate
stop_at = int(sys.argv[2])
count = [0]
real_rename, real_fsync_dir = _migrate._rename, _migrate.fsync_dir

def hang():
    print("killed here", flush=True)
    sys.stdin.read()  # until killed

def rename(src, dst):
    if count[0] == stop_at:
        hang()
    count[0] += 1
    real_rename(src, dst)

def fsync_dir(root):
    hang()  # every file renamed, the marker not yet final

_migrate._rename = rename
if stop_at < 0:
    _migrate.fsync_dir = fsync_dir

async def main():
    await FileStore(sys.argv[1], handle_sigterm=False).init()
    print("not killed", flush=True)

asyncio.run(main())
"""


@pytest.mark.parametrize("stop_at", [0, 1, 9, 23, 40, -1])
async def test_a_writer_killed_mid_move_loses_nothing(tmp_path: Path, stop_at: int) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    assert len(moves(str(data))) == 41
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", _MOVER, str(data), str(stop_at)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line == b"killed here\n"
    proc.kill()  # SIGKILL
    await asyncio.wait_for(proc.wait(), 60)
    proc.stdin.close()
    assert _marker(data)["moving"] == 3  # an earlier release refuses it from here on
    async with FileStore(data, read_only=True) as reader:  # reads both names meanwhile
        assert await _content(reader) == _expected()
    async with FileStore(data, handle_sigterm=False) as store:  # finishes the move
        assert await _content(store) == _expected()
    _assert_moved(data)
    async with FileStore(data, read_only=True) as reader:
        assert await _content(reader) == _expected()
    await _assert_checked(data)


def _earlier_release(tmp_path: Path) -> Path:
    """The format-3 release's airstore, from git."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", FORMAT_3_COMMIT, "airstore"],
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"the format-3 release is not in this checkout's git history: {exc}")
    old = tmp_path / "release-3"
    old.mkdir()
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    return old


_OLD_WRITER = """
import asyncio, sys
import airstore
from airstore import FileStore, _format
assert _format.FORMAT == 3, airstore.__file__

async def main():
    try:
        store = FileStore(sys.argv[1], handle_sigterm=False)
        await store.init()
    except Exception as exc:
        print(type(exc).__name__, flush=True)
        return
    await store.set("Calls", "old", 3)
    await store.flush()
    print("open", flush=True)
    sys.stdin.read()  # holds the directory until told
    await store.close()

asyncio.run(main())
"""


def _run_old(old: Path, data: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(old), "AIR_SPEEDUPS": "off"}
    return subprocess.Popen(
        [sys.executable, "-c", _OLD_WRITER, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=old,
    )


async def test_a_writer_of_the_earlier_release_and_this_one_never_share_a_directory(
    tmp_path: Path,
) -> None:
    old = _earlier_release(tmp_path)
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    with _run_old(old, data) as proc:  # a format-3 writer is open: this release refuses
        assert proc.stdout is not None
        assert proc.stdin is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
        assert line == b"open\n"
        before = _files(data)
        with pytest.raises(StoreLockedError) as info:
            await FileStore(data, handle_sigterm=False).init()
        assert info.value.pid == proc.pid
        assert _files(data) == before
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    async with FileStore(data, handle_sigterm=False) as store:  # moves it, keeping its write
        assert await store.get("Calls", "old") == 3
        with _run_old(old, data) as proc:  # the earlier release refuses the moved directory
            assert proc.stdout is not None
            out = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
            assert out == b"UnsupportedFormatError\n"
            assert proc.wait(timeout=60) == 0
    _assert_moved(data)


async def test_this_release_refuses_a_newer_directory_before_moving_anything(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    (data / ".airstore").write_bytes(b'{"airstore":"datadir","format":%d}\n' % (FORMAT + 1))
    before = _files(data)
    for read_only in (False, True):
        with pytest.raises(UnsupportedFormatError):
            await FileStore(data, read_only=read_only, handle_sigterm=False).init()
    assert _files(data) == before


async def test_a_move_that_finds_a_file_under_both_names_stops_and_names_them(
    tmp_path: Path,
) -> None:
    """A half-restored directory holding a file under its old and its new name: finishing the
    move would hide the old-named file's data for good, so the writer refuses, naming both, and
    the directory stays readable as it was; once the user keeps one, the move completes."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    old, new = next((o, n) for o, n in moves(str(data)) if o.endswith(".json") and o != n)
    shutil.copyfile(data / old, data / new)
    with pytest.raises(CorruptDataError) as caught:
        async with FileStore(data, handle_sigterm=False):
            pass
    assert str(data / old) in str(caught.value)
    assert str(data / new) in str(caught.value)
    assert (data / old).exists()
    assert (data / new).exists()
    assert "moving" in _marker(data)
    async with FileStore(data, read_only=True) as reader:
        assert (await _content(reader))["logs"] == _expected()["logs"]
    (data / new).unlink()
    async with FileStore(data, handle_sigterm=False) as store:
        assert await _content(store) == _expected()
    _assert_moved(data)


def test_a_format_4_marker_is_read_as_json_not_as_bytes(tmp_path: Path) -> None:
    """A format-4 marker with a space or a later key is format 4: its directory is not taken
    for an earlier one (old names honoured, an extra look-up per path, for good)."""
    from airstore._filenames import _legacy_marker

    for text in ('{"format": 4}', '{"format":4,"note":"x"}', '{\n  "format": 4\n}\n'):
        (tmp_path / ".airstore").write_text(text)
        assert not _legacy_marker(str(tmp_path)), text
    for text in ('{"format":3}', '{"format":4,"moving":3}', '{"form'):
        (tmp_path / ".airstore").write_text(text)
        assert _legacy_marker(str(tmp_path)), text


def test_the_legacy_roots_are_one_root_however_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airstore._filenames import _legacy_roots, namespace_of, use_legacy_names

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    use_legacy_names("./data", True)
    try:
        assert namespace_of(str(tmp_path / "data"), "Calls") == "Calls"  # an old-format name
        use_legacy_names(str(tmp_path / "data") + os.sep, False)
        assert namespace_of("data", "Calls") is None
        assert os.path.normcase(str(tmp_path / "data")) not in _legacy_roots
    finally:
        use_legacy_names("./data", False)
