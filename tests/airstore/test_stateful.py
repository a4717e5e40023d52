"""Any Store against a plain-dict model, driven by hypothesis (one machine per backend row)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from airstore import Store
from tests.airstore.backends import BACKENDS, Backend, FakeClock

KEYS = st.sampled_from(["a", "b", "c", "user:1", "user:2", "x"])
NAMESPACES = st.sampled_from(["ns", "other"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def machine_for(backend: Backend) -> type[RuleBasedStateMachine]:
    class StoreMachine(RuleBasedStateMachine):
        """Model: {ns: {key: (value, expire_at)}} and {ns: [entries]}."""

        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.tmp = tempfile.TemporaryDirectory()
            self.clock = FakeClock()
            self.store: Store = self.run(backend.open(Path(self.tmp.name), self.clock))
            self.kv: dict[str, dict[str, tuple[Any, float | None]]] = {}
            self.logs: dict[str, list[dict[str, Any]]] = {}

        def run(self, coro: Any) -> Any:
            return self.loop.run_until_complete(coro)

        def live(self, ns: str) -> dict[str, Any]:
            now = self.clock.now
            return {k: v for k, (v, exp) in self.kv.get(ns, {}).items() if exp is None or exp > now}

        # Store-clock seconds, scaled up: RedisStore also bounds TTLs in real time (SET … PX),
        # and a slow run must not see Redis expire a key the fake clock still keeps.
        @rule(ns=NAMESPACES, key=KEYS, value=JSON, ttl=st.none() | st.sampled_from([100.0, 500.0]))
        def set(self, ns: str, key: str, value: Any, ttl: float | None) -> None:
            self.run(self.store.set(ns, key, value, ttl=ttl))
            exp = None if ttl is None else self.clock.now + ttl
            self.kv.setdefault(ns, {})[key] = (value, exp)

        @rule(ns=NAMESPACES, key=KEYS)
        def get(self, ns: str, key: str) -> None:
            assert self.run(self.store.get(ns, key)) == self.live(ns).get(key)

        @rule(ns=NAMESPACES, key=KEYS)
        def delete(self, ns: str, key: str) -> None:
            existed = key in self.live(ns)
            self.kv.get(ns, {}).pop(key, None)
            assert self.run(self.store.delete(ns, key)) is existed

        @rule(ns=NAMESPACES, tool=st.sampled_from(["a", "b"]), n=st.integers(0, 9))
        def append(self, ns: str, tool: str, n: int) -> None:
            stored = self.run(self.store.append(ns + ".log", {"tool": tool, "n": n}))
            assert stored["_ts"] == int(self.clock.now * 1000)
            self.logs.setdefault(ns, []).append(stored)

        @rule(seconds=st.sampled_from([50.0, 200.0, 600.0]))
        def advance(self, seconds: float) -> None:
            self.clock.advance(seconds)

        @rule(ns=NAMESPACES, prefix=st.sampled_from(["", "user:", "z"]))
        def listing(self, ns: str, prefix: str) -> None:
            want = sorted((k, v) for k, v in self.live(ns).items() if k.startswith(prefix))
            assert self.run(self.store.entries(ns, prefix)) == want
            assert self.run(self.store.list(ns, prefix)) == [k for k, _ in want]

        @rule(
            ns=NAMESPACES,
            limit=st.integers(0, 5),
            offset=st.integers(0, 3),
            tool=st.none() | st.sampled_from(["a", "b"]),
            since=st.none() | st.integers(-1_300_000, 50_000),
            until=st.none() | st.integers(-1_300_000, 50_000),
        )
        def query(
            self,
            ns: str,
            limit: int,
            offset: int,
            tool: str | None,
            since: int | None,
            until: int | None,
        ) -> None:
            # time bounds are drawn relative to now (ms), so they cut through the recent log
            now_ms = int(self.clock.now * 1000)
            lo = None if since is None else now_ms + since
            hi = None if until is None else now_ms + until
            flt = None if tool is None else {"tool": tool}
            want = [
                e
                for e in reversed(self.logs.get(ns, []))
                if (flt is None or e["tool"] == tool)
                and (lo is None or e["_ts"] >= lo)
                and (hi is None or e["_ts"] < hi)
            ]
            got = self.run(
                self.store.query(
                    ns + ".log", limit=limit, offset=offset, since=lo, until=hi, filter=flt
                )
            )
            assert got == want[offset : offset + limit]

        @precondition(lambda self: backend.persistent)
        @rule()
        def reopen(self) -> None:
            self.run(self.store.close())
            self.store = self.run(backend.open(Path(self.tmp.name), self.clock))

        @rule()
        def flush(self) -> None:
            self.run(self.store.flush())

        @invariant()
        def keys_match(self) -> None:
            for ns in ("ns", "other"):
                assert self.run(self.store.list(ns)) == sorted(self.live(ns))

        def teardown(self) -> None:
            try:
                self.run(self.store.close())
            finally:
                self.loop.close()
                self.tmp.cleanup()

    return StoreMachine


@pytest.mark.parametrize("backend", [pytest.param(b, id=b.name, marks=b.marks) for b in BACKENDS])
def test_store_behaves_like_a_dict_model(backend: Backend) -> None:
    machine = machine_for(backend)
    machine.TestCase.settings = settings(
        max_examples=25,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    machine.TestCase().runTest()
