"""There is one way to put a FileStore key, ``airstore._kvput.put``: its two implementations
(Python, and C bound to it) are chosen at import and leave the same state; the contract suite
runs FileStore on both (issue 30, section 1)."""

from __future__ import annotations

import ast
import contextlib
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import airstore
from airstore import FileStore, InvalidKeyError, InvalidValueError, _accel, _kvput
from airstore._kvspace import KVSpace
from airstore.settings import store_settings
from tests.airstore.backends import BACKENDS, FakeClock

ROOT = Path(__file__).resolve().parents[2]
AIRSTORE = Path(airstore.__file__).parent
NATIVE = _kvput.native_put is not None
needs_native = pytest.mark.skipif(not NATIVE, reason="AIR_SPEEDUPS=off in this environment")


def _space(root: Path, clock: FakeClock | None = None) -> KVSpace:
    return KVSpace(str(root), "ns", read_only=False, clock=clock or FakeClock(), findings=[])


def _names(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def test_the_speedups_when_built_are_the_put_chosen_at_import() -> None:
    if store_settings().speedups == "off":
        assert _kvput.put is _kvput.python_put
        return
    assert NATIVE, "the C speedups are not built: run `make install`"
    assert _kvput.put is _kvput.native_put
    assert type(_kvput.native_put).__name__ == "builtin_function_or_method"  # C, no frame
    with _accel.disabled():
        assert _kvput.put is _kvput.python_put
    assert _kvput.put is _kvput.native_put


def test_without_the_speedups_put_is_the_python_implementation() -> None:
    code = "from airstore import _kvput as k; print(k.put is k.python_put, k.native_put)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "AIR_SPEEDUPS": "off"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == ["True", "None"]


def test_the_contract_suite_runs_filestore_on_both_implementations() -> None:
    rows = {b.name: b for b in BACKENDS}
    assert not rows["file-journal"].pure
    assert rows["file-journal-py"].pure  # run inside _accel.disabled() (conftest)


def test_no_other_code_puts_a_key() -> None:
    """``KVSpace.put`` and the copy inlined in ``FileKeys.set`` are gone; only ``_kvput`` calls
    the C kernel, and the key-value part writes no record or value itself."""
    assert not hasattr(KVSpace, "put")
    for path in sorted(AIRSTORE.glob("*.py")):
        if path.name in ("_kvput.py", "_accel.py"):
            continue
        assert "file_put" not in _names(ast.parse(path.read_text())), path.name
    tree = ast.parse((AIRSTORE / "_filekv.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                assert not (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Attribute)
                    and target.value.attr in ("items", "entries", "expires")
                ), ast.unparse(node)
                assert not (isinstance(node, ast.AugAssign) and "pending" in _names(target)), (
                    ast.unparse(node)
                )
    calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert "_kvput.put" in calls


ascii_text = st.text(st.characters(max_codepoint=127), max_size=8)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | ascii_text
    | st.text(max_size=4)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(ascii_text, inner, max_size=3)
        | st.builds(tuple, st.lists(inner, max_size=2))
    ),
    max_leaves=12,
)
keys = ascii_text | st.text(max_size=3) | st.integers()
expiries = st.none() | st.floats(min_value=1.0, max_value=1e10)


def _put(space: KVSpace, impl: Any, key: Any, value: Any, exp: float | None) -> type | None:
    try:
        impl(space, key, value, exp)
    except (InvalidKeyError, InvalidValueError) as exc:
        return type(exc)
    return None


def _state(space: KVSpace) -> tuple[Any, ...]:
    return (
        orjson.dumps(space.items, option=orjson.OPT_NON_STR_KEYS),  # values as JSON
        {k: orjson.loads(v) for k, v in space.entries.items()},  # floats' text may differ
        [orjson.loads(line) for line in bytes(space.journal.pending).splitlines()],
        dict(space.expires),
    )


@needs_native
@settings(max_examples=400, deadline=None)
@given(
    first=st.tuples(keys, values, expiries),
    second=st.tuples(keys, values, expiries),
)
def test_both_implementations_leave_the_same_state_or_raise_the_same_error(
    tmp_path_factory: pytest.TempPathFactory,
    first: tuple[Any, Any, float | None],
    second: tuple[Any, Any, float | None],
) -> None:
    root = tmp_path_factory.getbasetemp()
    native, python = _space(root), _space(root)
    for key, value, exp in (first, second, (first[0], second[1], None)):
        assert _put(native, _kvput.native_put, key, value, exp) == _put(
            python, _kvput.python_put, key, value, exp
        )
        assert _state(native) == _state(python)


@needs_native
def test_the_c_put_hands_what_it_declines_to_the_python_put(tmp_path: Path) -> None:
    assert _kvput.native_put is not None
    space = _space(tmp_path)
    _kvput.native_put(space, "t", (1, 2), None)  # a tuple: Python's, stored as the list
    _kvput.native_put(space, "x", 1e-05, 2e9)  # an expiry: Python's
    _kvput.native_put(space, "c", 1e-05, None)  # C's: repr's float form
    assert space.entries == {
        "t": b'["t",[1,2]]\n',
        "x": b'["x",0.00001,2000000000.0]\n',
        "c": b'["c",1e-05]\n',
    }
    assert space.expires == {"x": 2e9}
    with pytest.raises(InvalidValueError):
        _kvput.native_put(space, "bad", [math.nan], None)
    with pytest.raises(InvalidKeyError):
        _kvput.native_put(space, "", 1, None)
    with pytest.raises(TypeError):
        _kvput.native_put(space, "k", 1)  # type: ignore[call-arg]
    assert list(space.items) == ["t", "x", "c"]


async def test_a_set_and_an_incr_go_through_the_put_chosen(tmp_path: Path) -> None:
    """Through FileStore, with the speedups on and off: the float form in the record says
    which implementation wrote it (C: ``1e-05``; Python, orjson: ``0.00001``)."""
    forms = {}
    for pure in (False, True) if NATIVE else (True,):
        path = tmp_path / f"p{pure:d}"
        with _accel.disabled() if pure else contextlib.nullcontext():
            async with FileStore(path) as store:
                await store.set("ns", "f", 1e-05)
                assert await store.incr("ns", "n", 2) == 2
                space = store._spaces["ns"]
                forms[pure] = space.entries["f"]
                assert space.entries["n"] == b'["n",2]\n'
    assert forms[True] == b'["f",0.00001]\n'
    if NATIVE:
        assert forms[False] == b'["f",1e-05]\n'


def test_an_out_of_date_build_of_the_speedups_runs_the_python_put_or_fails_on_require() -> None:
    """An editable install not rebuilt since ``_speedups.c`` changed leaves a module without
    ``bind_put``: airstore imports and runs the Python paths (saying so), or refuses under
    ``AIR_SPEEDUPS=require``."""
    stale = (
        "import sys, types; old = types.ModuleType('airstore._speedups'); "
        "old.__file__ = 'old.so'; old.file_put = old.mem_put = print; "
        "sys.modules['airstore._speedups'] = old; "
        "from airstore import _accel, _kvput; "
        "print(_accel.speedups, _kvput.put is _kvput.python_put)"
    )

    def run(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", stale],
            cwd=ROOT,
            env={**os.environ, "AIR_SPEEDUPS": mode},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    auto = run("auto")
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.split() == ["None", "True"]
    assert "out of date" in auto.stderr
    required = run("require")
    assert required.returncode != 0
    assert "AIR_SPEEDUPS=require, but airstore's C speedups are out of date" in required.stderr


async def test_a_bad_key_or_value_is_named_before_a_bad_ttl(tmp_path: Path) -> None:
    """As before the one put: the key, then the value, then the TTL; nothing is stored."""
    async with FileStore(tmp_path) as store:
        with pytest.raises(InvalidKeyError):
            await store.set("ns", "", 1, ttl=-1)
        with pytest.raises(InvalidValueError):
            await store.set("ns", "k", math.nan, ttl=-1)
        with pytest.raises(airstore.InvalidArgumentError):
            await store.set("ns", "k", 1, ttl=-1)
        assert await store.list("ns") == []


async def test_an_incr_forgets_keys_expired_meanwhile(tmp_path: Path) -> None:
    clock = FakeClock()
    async with FileStore(tmp_path, clock=clock) as store:
        await store.set("ns", "old", 1, ttl=5)
        clock.advance(10)
        assert await store.incr("ns", "n") == 1
        assert "old" not in store._spaces["ns"].items
