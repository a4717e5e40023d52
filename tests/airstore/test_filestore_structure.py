"""FileStore's structure: a key-value part and a log part composed over one directory state,
not mixins sharing attributes by convention (issue 30, section 1)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import airstore
from airstore import FileStore
from airstore._dirstate import DirState
from airstore._filekv import FileKeys
from airstore._filelog import FileLogs
from airstore._inspect import Inspection
from airstore._lifecycle import StoreBase
from airstore._persist import Persister

AIRSTORE = Path(airstore.__file__).parent


def _airstore_classes(cls: type) -> list[type]:
    return [c for c in cls.__mro__ if c.__module__.split(".")[0] == "airstore"]


def test_filestore_has_no_airstore_base_but_the_stateless_store_base() -> None:
    assert _airstore_classes(FileStore) == [FileStore, StoreBase]
    # StoreBase is the async-with plumbing every backend shares: no state, nothing assumed
    assert "__init__" not in vars(StoreBase)
    assert not getattr(StoreBase, "__annotations__", {})


def test_the_parts_are_plain_classes_with_their_own_constructor() -> None:
    for part in (FileKeys, FileLogs, Inspection, DirState):
        assert part.__bases__ == (object,), part
        assert "__init__" in vars(part), part
        # no attribute declared for someone else to set (the mixins' convention)
        assert not {
            name for name in getattr(part, "__annotations__", {}) if name.startswith("_")
        }, part


def test_the_parts_share_one_directory_state_and_nothing_else(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    state = store._dir
    assert type(state) is DirState
    assert store._kv._dir is state
    assert store._log._dir is state
    assert store._inspection._dir is state
    assert store._inspection._keys is store._kv
    # the hot operations are the parts' own methods, bound on the instance
    assert store.set == store._kv.set
    assert store.get == store._kv.get
    assert store.append == store._log.append
    # each part holds the state and its own files, no other part
    assert set(vars(store._kv)) == {"_dir", "spaces", "loading"}
    assert set(vars(store._log)) == {"_dir", "logs"}


async def test_the_persister_writes_the_parts_own_namespaces_and_logs(tmp_path: Path) -> None:
    async with FileStore(tmp_path) as store:
        await store.set("ns", "k", 1)
        await store.append("log", {"a": 1})
        persist = store._dir.persist
        assert persist is not None
        assert persist.spaces is store._kv.spaces
        assert persist.logs is store._log.logs
        assert list(persist.spaces) == ["ns"]
        assert list(persist.logs) == ["log"]
        # the persister holds its disk-full handling over the same namespaces and logs
        assert _airstore_classes(type(persist)) == [Persister]
        assert type(persist.disk).__bases__ == (object,)
        assert persist.disk.spaces is store._kv.spaces
        assert persist.disk.logs is store._log.logs


def test_no_module_of_filestore_declares_attributes_for_another_to_set() -> None:
    """The mixins said so in their docstrings ("relies on the attributes FileStore sets")."""
    for name in (
        "file.py",
        "_dirstate.py",
        "_filekv.py",
        "_filelog.py",
        "_inspect.py",
        "_persist.py",
        "_diskfull.py",
    ):
        text = (AIRSTORE / name).read_text()
        assert "relies on the attributes" not in text, name
        assert "Mixed into" not in text, name
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):  # a base is StoreBase or a Protocol, no mixin
                bases = {ast.unparse(b) for b in node.bases}
                assert bases <= {"StoreBase", "Protocol"}, (name, node.name, bases)


def test_every_store_operation_of_filestore_is_its_parts() -> None:
    """FileStore's data operations are its parts' coroutines, handed back as they are."""
    for name, part in (
        ("set", FileKeys),
        ("get", FileKeys),
        ("incr", FileKeys),
        ("delete", FileKeys),
        ("list", FileKeys),
        ("entries", FileKeys),
        ("append", FileLogs),
        ("append_many", FileLogs),
        ("query", FileLogs),
        ("set_log_retention", FileLogs),
        ("check", Inspection),
        ("stats", Inspection),
    ):
        assert inspect.iscoroutinefunction(getattr(part, name)), name
        ours = inspect.signature(getattr(FileStore, name))
        theirs = inspect.signature(getattr(part, name))
        assert list(ours.parameters) == list(theirs.parameters), name


async def test_a_subclass_override_of_a_hot_operation_runs(tmp_path: Path) -> None:
    seen: list[str] = []

    class Audited(FileStore):
        async def set(self, ns: str, key: str, value: Any, ttl: float | None = None) -> None:
            seen.append(key)
            await super().set(ns, key, value, ttl)

        async def append(self, ns: str, entry: Any) -> Any:
            seen.append(f"log:{ns}")
            return await super().append(ns, entry)

    async with Audited(tmp_path / "data", handle_sigterm=False) as store:
        await store.set("ns", "k", 1)
        await store.append("calls", {"a": 1})
        assert await store.get("ns", "k") == 1
    assert seen == ["k", "log:calls"]
