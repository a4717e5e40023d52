"""Namespace names map to file names that are distinct and valid on every file system: names
that differ only in case, Windows' device names and a trailing dot (``airstore._names``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from airstore import FileStore
from airstore._filenames import discover
from airstore._names import MAX_STEM, RESERVED, decode, encode, is_device_stem
from airstore._validate import is_namespace

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
_DEVICES = sorted(RESERVED)


@st.composite
def namespaces(draw: st.DrawFn) -> str:
    """Valid namespaces, weighted towards the hard cases: device names, case, trailing dots,
    the longest names."""
    kind = draw(st.sampled_from(["any", "device", "long"]))
    if kind == "device":
        dev = draw(st.sampled_from(_DEVICES))
        dev = "".join(c.upper() if draw(st.booleans()) else c for c in dev)
        tail = draw(st.sampled_from(["", ".", ".txt", ".Log", ".x.", "x", "-1"]))
        ns = dev + tail
    elif kind == "long":
        ns = draw(st.text(alphabet="Aa", min_size=100, max_size=128))
    else:
        first = draw(st.sampled_from(_ALPHABET[:62]))
        ns = first + draw(st.text(alphabet=_ALPHABET, max_size=127))
    ns = ns[:128]
    assume(is_namespace(ns))
    return ns


@settings(max_examples=800, deadline=None)
@given(namespaces(), namespaces())
def test_the_encoding_is_one_to_one_even_without_case(a: str, b: str) -> None:
    assert decode(encode(a)) == a
    if a != b:
        assert encode(a).casefold() != encode(b).casefold()


@settings(max_examples=800, deadline=None)
@given(namespaces())
def test_a_stem_is_safe_on_every_file_system(ns: str) -> None:
    stem = encode(ns)
    assert stem == stem.lower()  # so case-insensitive file systems keep names apart
    assert not is_device_stem(stem)
    assert not stem.endswith((".", " "))
    assert set(stem) <= set("abcdefghijklmnopqrstuvwxyz0123456789._-+")
    # the longest file of a namespace (a temp file of a compressed segment of slot 4095)
    longest = stem + ".log.s4095.00000001.jsonl.gz.tmp-4194304-4611686018427387904"
    assert len(longest.encode()) <= 255
    if ns == ns.lower() and not is_device_stem(ns) and not ns.endswith("."):
        assert stem == ns  # most names are their own file names


@pytest.mark.parametrize(
    ("ns", "stem"),
    [
        ("meter.calls", "meter.calls"),
        ("Calls", "+calls"),
        ("calls", "calls"),
        ("CALLS", "+c+a+l+l+s"),
        ("con", "con+_"),
        ("CON", "+c+o+n"),
        ("aux.txt", "aux+_.txt"),
        ("nul", "nul+_"),
        ("LPT1", "+l+p+t1"),
        ("lpt1.x.y", "lpt1+_.x.y"),
        ("Com3.log", "+com3.log"),
        ("console", "console"),
        ("trail.", "trail.+_"),
        ("trail", "trail"),
    ],
)
def test_the_hard_names_get_these_stems(ns: str, stem: str) -> None:
    assert encode(ns) == stem
    assert decode(stem) == ns


def test_a_long_upper_case_name_keeps_its_file_names_short() -> None:
    ns = "N" * 128
    stem = encode(ns)
    assert len(stem) <= MAX_STEM + 44
    assert stem.startswith("n" * 128 + "+")
    assert decode(stem) == ns


@pytest.mark.parametrize(
    "stem",
    [
        *("Calls", "con", "aux.txt", "trail.", "+", "a+", "a+B", "a+1x", "+c+o+n+_", "ab+4"),
        "n" * 128 + "+0",
    ],
)
def test_a_stem_no_namespace_has_is_refused(stem: str) -> None:
    assert decode(stem) is None


async def test_names_that_differ_only_in_case_keep_their_own_files(tmp_path: Path) -> None:
    names = ["Calls", "calls", "CALLS", "con", "Con", "aux.txt", "trail.", "trail", "N" * 128]
    async with FileStore(tmp_path, handle_sigterm=False) as store:
        for ns in names:
            await store.set(ns, "k", ns)
            await store.append(ns, {"ns": ns})
    files = os.listdir(tmp_path)
    assert len({f.casefold() for f in files}) == len(files)
    assert not any(is_device_stem(f) or f.endswith(".") for f in files)
    assert sorted(discover(str(tmp_path))) == sorted(names)
    async with FileStore(tmp_path, read_only=True) as reader:
        for ns in names:
            assert await reader.get(ns, "k") == ns
            assert [e["ns"] for e in await reader.query(ns)] == [ns]
