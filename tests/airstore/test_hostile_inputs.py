"""Hostile inputs on every backend: a rejected call is a typed AirstoreError and changes
nothing; what was acknowledged survives a SIGKILL (issue 12, item 1)."""

from __future__ import annotations

import asyncio
import math
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import airstore
from airstore import (
    AirstoreError,
    FileStore,
    InvalidArgumentError,
    InvalidKeyError,
    Store,
    create_storage,
)
from tests.airstore.backends import BACKENDS, Backend, FakeClock
from tests.airstore.hostile_proc import apply

PROC = Path(__file__).with_name("hostile_proc.py")

# -- the input space -----------------------------------------------------------------------------
SURROGATES = st.sampled_from(["\ud800", "a\udfff", "\ud83d", "x\udc00y"])
GOOD_NS = st.sampled_from(["ns", "other.ns"])
BAD_NS = st.one_of(
    st.sampled_from(["", "..", "a/b", ".hidden", "x" * 129, "ns\ud800"]),
    SURROGATES,
    st.integers(),
    st.none(),
)
NAMESPACES = st.one_of(GOOD_NS, GOOD_NS, GOOD_NS, BAD_NS)
GOOD_KEYS = st.one_of(st.sampled_from(["a", "b", "ü", "user:1"]), st.text(min_size=1, max_size=4))
BAD_KEYS = st.one_of(
    SURROGATES,
    st.just(""),
    st.just("k" * 1025),
    st.integers(),
    st.none(),
    st.binary(max_size=3),
    st.tuples(st.integers()),
)
KEYS = st.one_of(GOOD_KEYS, GOOD_KEYS, BAD_KEYS)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


BAD_VALUES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 2**64, -(2**63) - 1, 10**30]),
    SURROGATES,
    st.builds(lambda s: {"k": s}, SURROGATES),
    st.builds(lambda s: {s: 1}, SURROGATES),
    st.just({1: "int key"}),
    st.just({"x": [1, math.nan]}),
    st.just(_deep(300)),
    st.just(b"bytes"),
    st.just({1, 2}),
)
VALUES = st.one_of(JSON, JSON, BAD_VALUES)
GOOD_TTLS = st.sampled_from([None, None, 3600.0, 86_400])
BAD_TTLS = st.sampled_from([math.nan, math.inf, -math.inf, -1, 0, 1e308, 10**400, "10", True])
TTLS = st.one_of(GOOD_TTLS, GOOD_TTLS, BAD_TTLS)
STEPS = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from([2**53 - 1, -(2**53) + 1, 2**53, 2**64, True, 1.5, "1", None]),
)
ENTRIES = st.one_of(
    st.dictionaries(st.text(max_size=4), JSON, max_size=3),
    st.dictionaries(st.text(max_size=4), JSON, max_size=3),
    st.builds(lambda v: {"v": v}, BAD_VALUES),
    st.builds(lambda s: {s: 1}, SURROGATES),
    st.sampled_from([["not", "a", "dict"], "text", None, {"_ts": 2**70}]),
)
OPS = st.one_of(
    st.tuples(st.just("set"), NAMESPACES, KEYS, VALUES, TTLS),
    st.tuples(st.just("delete"), NAMESPACES, KEYS),
    st.tuples(st.just("incr"), NAMESPACES, KEYS, STEPS, TTLS),
    st.tuples(st.just("append"), NAMESPACES, ENTRIES),
    st.tuples(st.just("append_many"), NAMESPACES, st.lists(ENTRIES, max_size=3)),
)


# -- the model of what an acknowledged sequence leaves -------------------------------------------
class Model:
    def __init__(self) -> None:
        self.kv: dict[tuple[str, str], Any] = {}
        self.logs: dict[str, list[dict[str, Any]]] = {}

    def take(self, op: tuple[Any, ...], outcome: tuple[str, Any]) -> None:
        """Fold an acknowledged op in; check what it returned."""
        status, result = outcome
        if status == "err":
            error = getattr(airstore, result, None)
            assert isinstance(error, type), result
            assert issubclass(error, AirstoreError), result
            return
        kind, ns, *args = op
        if kind == "set":
            self.kv[ns, args[0]] = args[1]
        elif kind == "delete":
            assert result is ((ns, args[0]) in self.kv)
            self.kv.pop((ns, args[0]), None)
        elif kind == "incr":
            assert result == self.kv.get((ns, args[0]), 0) + args[1]
            self.kv[ns, args[0]] = result
        elif kind == "append":
            self.logs.setdefault(ns, []).append(result)
        else:
            self.logs.setdefault(ns, []).extend(result)

    async def check(self, store: Store) -> None:
        for (ns, key), value in self.kv.items():
            assert await store.get(ns, key) == value, (ns, key)
        for ns in {ns for ns, _ in self.kv}:
            assert sorted(await store.list(ns)) == sorted(k for n, k in self.kv if n == ns)
        for ns, entries in self.logs.items():
            got = await store.query(ns, limit=10_000)
            assert got == entries[::-1] or _same_ts_groups(got, entries), ns


def _same_ts_groups(got: list[dict[str, Any]], entries: list[dict[str, Any]]) -> bool:
    """Entries with equal ``_ts`` may come back in either order (merged per _ts)."""

    def key(e: dict[str, Any]) -> tuple[int, bytes]:
        return (-e["_ts"], pickle.dumps(sorted(e.items(), key=repr)))

    return sorted(got, key=key) == sorted(entries, key=key)


async def _unchanged_after_refusal(store: Store, model: Model, op: tuple[Any, ...]) -> None:
    """A refused set/delete/incr left the key as the model has it."""
    kind, ns, *args = op
    if kind in ("set", "delete", "incr") and isinstance(ns, str) and isinstance(args[0], str):
        try:
            value = await store.get(ns, args[0])
        except (InvalidKeyError, airstore.InvalidNamespaceError):
            return
        assert value == model.kv.get((ns, args[0])), op


# -- in-process, every backend -------------------------------------------------------------------
def _run_in_process(backend: Backend, tmp: Path, ops: list[tuple[Any, ...]]) -> None:
    async def go() -> None:
        store = await backend.open(tmp, FakeClock())
        model = Model()
        try:
            for op in ops:
                outcome = await apply(store, op)
                model.take(op, outcome)
                if outcome[0] == "err":
                    await _unchanged_after_refusal(store, model, op)
            await model.check(store)
        finally:
            await store.close()
        if backend.persistent:
            store = await backend.open(tmp, FakeClock())
            try:
                await model.check(store)
            finally:
                await store.close()

    asyncio.run(go())


@pytest.mark.parametrize("backend", [pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
def test_hostile_inputs_are_refused_typed_and_change_nothing(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> None:
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(ops=st.lists(OPS, min_size=1, max_size=12))
    def run(ops: list[tuple[Any, ...]]) -> None:
        _run_in_process(backend, tmp_path_factory.mktemp("hostile"), ops)

    run()


# -- in a real process, SIGKILLed ----------------------------------------------------------------
def _run_and_kill(url: str, durability: str, ops: list[tuple[Any, ...]]) -> list[Any]:
    proc = subprocess.Popen(
        [sys.executable, str(PROC)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        proc.stdin.write(pickle.dumps((url, durability, ops)))
        proc.stdin.close()
        head = proc.stdout.read(8)
        assert len(head) == 8, proc.stderr.read().decode() if proc.stderr else ""
        outcomes: list[Any] = pickle.loads(proc.stdout.read(int.from_bytes(head, "big")))
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return outcomes


PERSISTENT = [
    pytest.param("file", "journal", id="file-journal"),
    pytest.param("file", "snapshot", id="file-snapshot"),
    pytest.param("file", "sync", id="file-sync"),
    pytest.param("sqlite", "", id="sqlite"),
    pytest.param("redis", "", id="redis", marks=pytest.mark.redis),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "durability"), PERSISTENT)
def test_acknowledged_writes_of_a_hostile_sequence_survive_sigkill(
    kind: str, durability: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rows: dict[str, Backend] = {}
    for row in BACKENDS:  # the first row of each kind: a local directory for "file"
        rows.setdefault(row.name.split("-")[0], row)

    @settings(
        max_examples=5,  # each example is a real process
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(ops=st.lists(OPS, min_size=1, max_size=15))
    def run(ops: list[tuple[Any, ...]]) -> None:
        tmp = tmp_path_factory.mktemp("killed")
        url = rows[kind].url(tmp)
        outcomes = _run_and_kill(url, durability, ops)
        model = Model()
        for op, outcome in zip(ops, outcomes, strict=True):
            model.take(op, outcome)

        async def reopen() -> None:
            if kind == "file":
                store: Store = FileStore(tmp / "data", durability=durability)  # type: ignore[arg-type]
                await store.init()
            else:
                store = await create_storage(url)
            try:
                await model.check(store)
            finally:
                await store.close()

        asyncio.run(reopen())

    run()


# -- issue 12's exact sequence -------------------------------------------------------------------
@pytest.mark.parametrize("durability", ["journal", "sync"])
def test_a_rejected_write_never_poisons_the_next_acknowledged_one(
    tmp_path: Path, durability: str
) -> None:
    url = f"file://{tmp_path / 'data'}"
    ops = [
        ("set", "ns", "a", 1, None),
        ("set", "ns", "\ud800", 1, None),
        ("set", "ns", "b", 2, None),
        ("set", "ns", "c", 3, math.inf),
        ("set", "ns", "d", 4, None),
    ]
    outcomes = _run_and_kill(url, durability, ops)  # SIGKILL long before any snapshot
    assert [o[0] for o in outcomes] == ["ok", "err", "ok", "err", "ok"]
    assert outcomes[1][1] == InvalidKeyError.__name__
    assert outcomes[3][1] == InvalidArgumentError.__name__

    async def reopen() -> None:
        async with FileStore(tmp_path / "data") as store:
            assert await store.entries("ns") == [("a", 1), ("b", 2), ("d", 4)]
            assert store.recovery == []
        async with FileStore(tmp_path / "data") as again:  # closed cleanly, reopens, unlocked
            assert await again.get("ns", "b") == 2

    asyncio.run(reopen())
