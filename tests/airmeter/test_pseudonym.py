"""The caller's subject in meter records: a keyed pseudonym, one key per store."""

from __future__ import annotations

from pathlib import Path

from airmeter.pseudonym import KEYS_NAMESPACE, PROCESS_KEY, pseudonym, subject_key
from airmeter.settings import raw_subject_setting
from airstore import FileStore, MemoryStore


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
