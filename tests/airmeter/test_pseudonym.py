"""The caller's subject in meter records: a keyed pseudonym, one key per store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airmeter import pseudonym as pseudonym_module
from airmeter.errors import MeterConfigError
from airmeter.pseudonym import KEYS_NAMESPACE, PROCESS_KEY, pseudonym, subject_key
from airmeter.settings import raw_subject_setting
from airstore import FileStore, MemoryStore

_OPEN_AND_PRINT_KEY = """
import asyncio, sys
from airmeter.pseudonym import subject_key
from airstore import FileStore
async def main():
    sys.stdin.readline()  # every process is up: start together
    async with FileStore(sys.argv[1], handle_sigterm=False) as store:
        print((await subject_key(store)).hex(), flush=True)
asyncio.run(main())
"""


async def test_one_store_gives_one_key_and_every_opener_finds_it(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "data") as first:
        key = await subject_key(first)
        assert await subject_key(first) == key
    async with FileStore(tmp_path / "data") as again:  # another process, later
        assert await subject_key(again) == key
        assert len(await again.query(KEYS_NAMESPACE)) == 1  # made once


async def test_the_oldest_of_two_racing_keys_wins() -> None:
    store = MemoryStore()
    await store.init()
    await store.append(KEYS_NAMESPACE, {"kind": "subject", "key": "aa" * 32, "_ts": 1})
    await store.append(KEYS_NAMESPACE, {"kind": "subject", "key": "bb" * 32, "_ts": 2})
    await store.append(KEYS_NAMESPACE, {"kind": "subject", "key": "not hex", "_ts": 0})
    assert await subject_key(store) == bytes.fromhex("aa" * 32)
    await store.close()


async def test_a_store_that_refuses_writes_gives_the_process_key(tmp_path: Path) -> None:
    async with FileStore(tmp_path / "data") as store:
        await store.set("ns", "k", 1)
    async with FileStore(tmp_path / "data", read_only=True) as reader:
        assert await subject_key(reader) == PROCESS_KEY


def test_a_pseudonym_is_stable_keyed_and_hides_the_subject() -> None:
    key, other = b"k" * 32, b"o" * 32
    assert pseudonym(key, "alice") == pseudonym(key, "alice")
    assert pseudonym(key, "alice") != pseudonym(key, "bob")
    assert pseudonym(key, "alice") != pseudonym(other, "alice")
    assert "alice" not in pseudonym(key, "alice")


def test_raw_subjects_are_a_setting() -> None:
    assert raw_subject_setting({"AIR_METER_RAW_SUBJECT": "1"})
    assert not raw_subject_setting({})


def test_processes_starting_together_on_an_empty_store_agree_on_one_key(tmp_path: Path) -> None:
    """Five real processes open an empty FileStore at once: one key, the same for all."""
    data = str(tmp_path / "data")
    for round_ in range(2):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN_AND_PRINT_KEY, data],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(5)
        ]
        outs = [p.communicate("go\n", timeout=60)[0].strip() for p in procs]
        assert all(p.returncode == 0 for p in procs)
        assert len(set(outs)) == 1, outs
        assert len(outs[0]) == 64
        data = str(tmp_path / f"data{round_}")  # a fresh, empty store for the next round


async def test_a_key_from_the_environment_wins_and_nothing_is_written(tmp_path: Path) -> None:
    env = {"AIR_METER_SUBJECT_KEY": "ab" * 32}
    async with FileStore(tmp_path / "data") as store:
        assert await subject_key(store, env) == bytes.fromhex("ab" * 32)
        assert await store.query(KEYS_NAMESPACE) == []


@pytest.mark.parametrize("value", ["ab" * 31, "zz" * 32, "secret", "ab" * 33])
async def test_a_malformed_environment_key_is_refused(value: str) -> None:
    with pytest.raises(MeterConfigError, match="AIR_METER_SUBJECT_KEY must be 64 hex"):
        await subject_key(MemoryStore(), {"AIR_METER_SUBJECT_KEY": value})


async def test_an_elected_writer_that_died_is_replaced_after_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pseudonym_module, "WAIT_S", 0.1)
    store = MemoryStore()
    await store.init()
    await store.incr(KEYS_NAMESPACE, "subject.claim")  # elected, then gone before writing
    key = await subject_key(store)
    assert key != PROCESS_KEY
    assert await subject_key(store) == key
    await store.close()
