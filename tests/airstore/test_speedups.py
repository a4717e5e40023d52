"""airstore's C speedups (``airstore/_speedups.c``) take only what the Python path would take the
same way, write the same journal line, and change nothing when they decline.

The contract suite runs every backend test twice for MemoryStore and FileStore (rows ``memory``
and ``memory-py``, ``file-journal`` and ``file-journal-py``), so both paths keep the Store
contract; these tests pin the extension itself against orjson, the Python path's encoder.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airstore import FileStore, InvalidKeyError, InvalidValueError, MemoryStore, _accel
from airstore._validate import JSON_OPTS, MAX_KEY_LENGTH, encode_value
from airstore.settings import store_settings
from tests.airstore.backends import FakeClock

ROOT = Path(__file__).resolve().parents[2]

if store_settings().speedups != "off":
    from airstore import _speedups as native
else:  # pragma: no cover - AIR_SPEEDUPS=off: only the opt-out is tested
    native = None  # type: ignore[assignment]

needs_native = pytest.mark.skipif(native is None, reason="AIR_SPEEDUPS=off in this environment")


class Text(str):
    pass


class Number(int):
    pass


class Mapping(dict):  # type: ignore[type-arg]
    pass


def _same(a: Any, b: Any) -> bool:
    """Equal with the same JSON types all the way down (1 and 1.0 differ, True and 1 differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def _path(pure: bool) -> contextlib.AbstractContextManager[None]:
    """The Python path of set (the C speedups off) when ``pure``, else the default one."""
    return _accel.disabled() if pure else contextlib.nullcontext()


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(map(_has_float, value.values()))
    if isinstance(value, (list, tuple)):
        return any(map(_has_float, value))
    return False


def _python_accepts(value: Any) -> bool:
    try:
        encode_value("ns", "k", value)
    except InvalidValueError:
        return False
    return True


ascii_text = st.text(st.characters(max_codepoint=127), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | ascii_text
    | st.text(max_size=6)  # non-ASCII and lone surrogates: the Python path's to decide
    | st.builds(Text, ascii_text)
    | st.builds(Number, st.integers(-5, 5))
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(ascii_text | st.text(max_size=3), inner, max_size=4)
        | st.builds(tuple, st.lists(inner, max_size=3))
        | st.builds(Mapping, st.dictionaries(ascii_text, inner, max_size=2))
    ),
    max_leaves=20,
)
keys = ascii_text | st.text(max_size=4) | st.builds(Text, ascii_text) | st.integers()


def test_the_speedups_are_built_here_and_used_unless_turned_off() -> None:
    """``make install`` compiles the extension (AIR_SPEEDUPS=require); a test run against an
    install without it would test only half of what a wheel ships."""
    if store_settings().speedups == "off":
        assert _accel.speedups is None
        assert _accel.file_put is None
        assert _accel.mem_put is None
        return
    assert _accel.speedups is native, "the C speedups are not built: run `make install`"
    assert _accel.file_put is native.file_put
    assert _accel.mem_put is native.mem_put


@needs_native
@settings(max_examples=800, deadline=None)
@given(key=keys, value=values)
def test_a_line_is_written_only_for_what_the_python_path_takes_and_reads_back_the_same(
    key: Any, value: Any
) -> None:
    line = native.record(key, value)
    if line is None:
        return  # declined: the Python path decides (encodes it, or raises the typed error)
    assert type(key) is str
    assert key.isascii()
    assert key
    assert _python_accepts(value)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1  # one journal line, whatever the strings hold
    back = orjson.loads(line)
    assert _same(back, [key, value])
    if not _has_float(value):  # floats: repr's form ("1e-05"); orjson's differs ("0.00001")
        assert line == orjson.dumps([key, value], option=JSON_OPTS) + b"\n"


@needs_native
@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        [1, {"x": math.nan}],
        2**63,
        -(2**63) - 1,
        "café",
        "\udc80",
        Text("x"),
        Number(3),
        Mapping(a=1),
        OrderedDict(a=1),
        (1, 2),
        {1: "int key"},
        {"é": 1},
        b"bytes",
        {1, 2},
        object(),
    ],
    ids=lambda value: type(value).__name__ if type(value) is object else repr(value),
)
def test_what_is_not_plain_ascii_json_is_declined(value: Any) -> None:
    assert native.record("k", value) is None


@needs_native
def test_nesting_past_64_levels_and_lines_past_the_buffer_are_declined() -> None:
    deep: Any = 1
    for _ in range(native.MAX_DEPTH):
        deep = [deep]
    assert native.record("k", deep) is not None
    assert native.record("k", [deep]) is None
    fits = "x" * (native.BUF_SIZE - 10)
    assert native.record("k", fits) == b'["k","' + fits.encode() + b'"]\n'
    assert native.record("k", fits + "xyz") is None
    assert native.record("k", "\x01" * (native.BUF_SIZE // 6)) is None  # escapes count


@needs_native
def test_every_ascii_character_is_escaped_as_orjson_escapes_it() -> None:
    text = "".join(map(chr, range(128)))
    assert native.record(text, text) == orjson.dumps([text, text]) + b"\n"


@needs_native
def test_int_edges_and_float_forms_read_back_exactly() -> None:
    for n in (0, -1, 2**63 - 1, -(2**63), 10**18):
        assert native.record("k", n) == b'["k",%d]\n' % n
    for f in (0.0, -0.0, 1.0, 100.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, 0.1 + 0.2):
        line = native.record("k", f)
        assert line is not None
        (_, back) = orjson.loads(line)
        assert type(back) is float
        assert back == f
        assert math.copysign(1, back) == math.copysign(1, f)


@needs_native
@settings(max_examples=300, deadline=None)
@given(key=keys, value=values)
def test_file_put_changes_nothing_when_it_declines_and_all_three_when_it_takes(
    key: Any, value: Any
) -> None:
    items: dict[str, Any] = {"old": 1}
    entries = {"old": b'["old",1]\n'}
    pending = bytearray(b'["old",1]\n')
    took = native.file_put(key, value, items, entries, {}, pending, MAX_KEY_LENGTH)
    line = native.record(key, value)
    if not took:
        assert line is None
        assert items == {"old": 1}
        assert entries == {"old": b'["old",1]\n'}
        assert pending == b'["old",1]\n'
        return
    assert line is not None
    assert items[key] is value  # the object itself, as the Python path keeps it
    assert entries[key] == line
    assert pending == b'["old",1]\n' + line


@needs_native
def test_file_put_drops_the_keys_own_expiry_only_and_leaves_long_keys_to_python() -> None:
    items: dict[str, Any] = {}
    entries: dict[str, bytes] = {}
    expires = {"k": 5.0, "other": 1.0}
    pending = bytearray()
    assert native.file_put("k", 1, items, entries, expires, pending, MAX_KEY_LENGTH)
    assert expires == {"other": 1.0}  # as the Python path's expires.pop(key, None)
    assert native.file_put("j", 2, items, entries, expires, pending, MAX_KEY_LENGTH)
    assert expires == {"other": 1.0}
    assert pending == b'["k",1]\n["j",2]\n'
    assert not native.file_put("k" * 11, 1, items, entries, {}, pending, 10)
    assert not native.file_put("", 1, items, entries, {}, pending, 10)
    assert native.file_put("k" * 10, 1, items, entries, {}, pending, 10)
    assert not native.mem_put("k" * 11, 1, items, 10)


async def test_a_ttl_key_set_again_without_ttl_loses_its_expiry_on_both_paths(
    tmp_path: Path,
) -> None:
    for pure in (False, True):
        with _path(pure):
            clock = FakeClock()
            store = FileStore(tmp_path / f"p{pure:d}", clock=clock)
            await store.init()
            await store.set("ns", "k", 1, ttl=10)
            await store.set("ns", "other", 1, ttl=10)
            await store.set("ns", "k", 2)
            clock.advance(60)
            assert await store.get("ns", "k") == 2, pure
            assert await store.get("ns", "other") is None
            await store.close()
            store = FileStore(tmp_path / f"p{pure:d}", clock=clock)
            await store.init()
            assert await store.list("ns") == ["k"]
            await store.close()


@needs_native
def test_a_pending_buffer_held_by_a_view_raises_and_stores_nothing() -> None:
    items: dict[str, Any] = {}
    entries: dict[str, bytes] = {}
    pending = bytearray(b"x")
    view = memoryview(pending)
    with pytest.raises(BufferError):
        native.file_put("k", 1, items, entries, {}, pending, MAX_KEY_LENGTH)
    view.release()
    assert items == {}
    assert entries == {}
    assert pending == b"x"


@needs_native
def test_wrong_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError):
        native.file_put("k", 1, {}, {}, {}, bytearray())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        native.file_put("k", 1, {}, {}, {}, b"not a bytearray", 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.mem_put("k", 1, [], 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.record("k")  # type: ignore[call-arg]


@needs_native
@settings(max_examples=300, deadline=None)
@given(key=keys, value=values)
def test_mem_put_takes_exactly_what_record_takes(key: Any, value: Any) -> None:
    items: dict[str, Any] = {}
    took = native.mem_put(key, value, items, MAX_KEY_LENGTH)
    assert took == (native.record(key, value) is not None)
    assert items == ({key: value} if took else {})


@needs_native
async def test_a_data_dir_written_by_either_path_reads_back_the_same(tmp_path: Path) -> None:
    """Reading does not depend on the path (only ``set`` has one): what each path writes, with
    the floats whose text differs between them (``1e-05`` against orjson's ``0.00001``), reads
    back as the same values, also after the snapshot a close writes."""
    data = {
        "plain": {"v": 1, "f": 1e16, "s": 'q"\\\n\t', "l": [None, True, False, -0.0]},
        "small": [1e-05, 2.5e-05, 1e-07, 1e-09, 0.0001, 123456789.125, 5e-324],
        "unicode": "café ☕",
        "subclass": Text("t"),
        "deep": [[[[{"x": [1.5]}]]]],
    }
    expected = {k: orjson.loads(orjson.dumps(v)) for k, v in data.items()}
    lines = {}
    for pure in (False, True):
        path = tmp_path / f"w{pure:d}"
        with _path(pure):
            store = FileStore(path)
            await store.init()
            for k, v in data.items():
                await store.set("ns", k, v)
            lines[pure] = dict(store._spaces["ns"].entries)  # the records each path wrote
            await store.close()
        for _reopen in range(2):  # the journal, then the snapshot the close wrote
            store = FileStore(path)
            await store.init()
            got = {k: await store.get("ns", k) for k in data}
            await store.close()
            assert all(_same(got[k], expected[k]) for k in data), (pure, got)
    assert lines[False]["small"] != lines[True]["small"]  # the float forms differ: both read
    assert lines[False]["plain"] == lines[True]["plain"]


@pytest.mark.parametrize("pure", [False, True], ids=["native", "python"])
async def test_both_paths_refuse_bad_input_with_the_same_typed_errors(
    pure: bool, tmp_path: Path
) -> None:
    with _path(pure):
        await _refuses_bad_input_and_keeps_what_it_had(tmp_path)


async def _refuses_bad_input_and_keeps_what_it_had(tmp_path: Path) -> None:
    file_store = FileStore(tmp_path / "data")
    await file_store.init()
    memory = MemoryStore()
    for store in (file_store, memory):
        await store.set("ns", "kept", {"v": 1})
        with pytest.raises(InvalidValueError):
            await store.set("ns", "bad", {"v": math.nan})
        with pytest.raises(InvalidValueError):
            await store.set("ns", "bad", {"v": {1, 2}})
        with pytest.raises(InvalidKeyError):
            await store.set("ns", "\udc80", 1)
        with pytest.raises(InvalidKeyError):
            await store.set("ns", "", 1)
        assert await store.list("ns") == ["kept"]
        assert await store.get("ns", "kept") == {"v": 1}
    await file_store.close()
    await memory.close()


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_air_speedups_off_runs_the_python_path_and_require_fails_without_the_module() -> None:
    show = "from airstore import _accel; print(_accel.speedups, _accel.file_put)"
    off = _python(show, AIR_SPEEDUPS="off")
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["None", "None"]
    missing = "import sys; sys.modules['airstore._speedups'] = None; import airstore"
    auto = _python(missing + "; from airstore import _accel; print(_accel.speedups)")
    assert auto.returncode == 0, auto.stderr
    assert auto.stdout.strip() == "None"
    required = _python(missing, AIR_SPEEDUPS="require")
    assert required.returncode != 0
    assert "AIR_SPEEDUPS=require" in required.stderr
    assert "apt-get install gcc python3-dev" in required.stderr
    typo = _python("import airstore", AIR_SPEEDUPS="requir")
    assert typo.returncode == 0, typo.stderr
    assert "AIR_SPEEDUPS='requir' is not auto, off or require: taken as auto" in typo.stderr
