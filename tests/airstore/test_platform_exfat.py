"""FileStore on a real exFAT volume (tests/airstore/exfat.py): case-insensitive, FUSE, as a
USB stick is; and the rule that makes FileStore safe there and on Windows: no file is replaced
or renamed while this process holds it open. (The store contract runs on the volume as the
``file-exfat`` row, the multi-writer suite by its ``exfat`` parameter.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airstore import FileStore, _platform
from tests.airstore.exfat import mounted_exfat

NAMES = ["Calls", "calls", "CON", "con", "aux.txt", "nul", "LPT1", "Com3.log", "trail.", "trail"]
"""Valid namespaces that differ only in case, Windows' reserved device names, a trailing dot."""


def _mount_type(point: Path) -> str:
    with open("/proc/mounts", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            if fields[1] == str(point):
                return fields[2]
    return ""


def test_the_volume_is_exfat_through_fuse_and_case_insensitive(exfat_volume: Path) -> None:
    assert _mount_type(exfat_volume) == "fuseblk"
    probe = exfat_volume / "Probe-Case"
    probe.write_bytes(b"x")
    try:
        assert (exfat_volume / "probe-case").read_bytes() == b"x"  # one file, two spellings
    finally:
        probe.unlink()


async def test_every_valid_name_keeps_its_own_data_on_exfat(tmp_path: Path) -> None:
    # A volume of its own: two spellings of one file open at once make exfat-fuse drop the
    # whole volume (ENOTCONN), which must not take the session's volume with it.
    with mounted_exfat(tmp_path) as volume:
        root = volume / "data"
        async with FileStore(root) as store:
            for i, name in enumerate(NAMES):
                await store.set(name, "k", i)
                await store.append(name, {"i": i})
        async with FileStore(root) as store:
            for i, name in enumerate(NAMES):
                assert await store.get(name, "k") == i, name
                assert [e["i"] for e in await store.query(name)] == [i], name


def _open_paths() -> set[str]:
    paths = set()
    for fd in os.listdir("/proc/self/fd"):
        with_link = f"/proc/self/fd/{fd}"
        try:
            paths.add(os.path.realpath(os.readlink(with_link)))
        except OSError:
            continue
    return paths


async def test_no_file_is_replaced_or_renamed_while_this_process_holds_it_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows refuses to replace a file open without share-delete; exfat-fuse has lost the
    volume over it. Compaction (snapshot + new journal) and log rotation go through it."""
    real = _platform.replace
    done: list[tuple[str, str]] = []

    def replace(src: str, dst: str) -> None:
        held = _open_paths()
        for path in (src, dst):
            assert os.path.realpath(path) not in held, f"{path} is open while replaced"
        real(src, dst)
        done.append((os.path.basename(src), os.path.basename(dst)))

    monkeypatch.setattr(_platform, "replace", replace)
    async with FileStore(tmp_path, max_log_bytes=4096) as store:
        for i in range(100):
            await store.set("ns", f"k{i}", i)
            await store.append("log", {"i": i, "pad": "x" * 100})
            if i % 10 == 9:
                await store.flush()
        await store._spaces["ns"].compact()  # the journal's switch, now
        await store.set("ns", "after", True)
    targets = {dst for _src, dst in done}
    assert "ns.journal.jsonl" in targets
    assert "ns.json" in targets
    assert any(dst.startswith("log.log.") and dst != "log.log.jsonl" for dst in targets)
    async with FileStore(tmp_path, read_only=True) as reader:
        assert await reader.get("ns", "after") is True
        assert await reader.get("ns", "k99") == 99
        assert len(await reader.query("log", limit=1000)) == 100
