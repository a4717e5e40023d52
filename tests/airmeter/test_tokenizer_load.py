"""The exact counter loads bpe-openai's Rust tokenizer alone (the package's ``__init__`` builds
Python tables of three vocabularies, ~0.35 s of CPU in every metered process, that counting
never reads), counts exactly as the package's public API does, and still falls back: to the
public API where the module is not found, to the estimate where bpe-openai is missing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import subprocess
import sys
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airmeter import tokens
from airmeter.tokens import BpeCounter, load_counter

bpe_openai = pytest.importorskip("bpe_openai", reason="the tokens extra is not installed")
PUBLIC = bpe_openai.get_encoding("o200k_base")  # the package's own API: the reference


def _public_count(text: str) -> int:
    return len(PUBLIC.encode_ordinary(text))


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_fresh_process_counts_without_running_the_packages_init() -> None:
    said = _run(
        "import sys\n"
        "from airmeter.tokens import BpeCounter\n"
        "counter = BpeCounter()\n"
        "TEXT = 'Weather in Oslo: sunny, 21 degrees. <|endoftext|>'\n"
        "mine = counter.count(TEXT)\n"
        "print(sorted(m for m in sys.modules if m.startswith('bpe_openai')))\n"
        "import bpe_openai  # the public API afterwards, in the same process\n"
        "enc = bpe_openai.get_encoding('o200k_base')\n"
        "print(mine, len(enc.encode_ordinary(TEXT)))\n"
    )
    loaded, counts = said.splitlines()
    assert loaded == "['bpe_openai._bindings']"  # neither the package nor its tables
    mine, public = counts.split()
    assert mine == public


texts = st.text(st.characters(codec=None), max_size=400) | st.sampled_from([
    "", " ", "\n\n", "<|endoftext|>", "<|endofprompt|> x", "naïve café 東京 🚀🚀", "\ud800 lone",
    "a" * 3000, '{"type": "object", "properties": {"q": {"type": "string"}}}',
])  # fmt: skip


@given(texts)
def test_counts_equal_the_public_apis(text: str) -> None:
    assert BpeCounter().count(text) == _public_count(text)  # (the API cleans text itself)


def test_a_long_text_is_counted_in_pieces_cut_at_whitespace_as_before() -> None:
    text = " ".join(f"word{i} naïve" for i in range(30_000))  # ~390 k characters
    counter = BpeCounter()
    pieces, start = [], 0
    while start < len(text):  # the cut as BpeCounter.count documents it
        end = min(len(text), start + tokens._PIECE)
        if end < len(text):
            end = text.rfind(" ", start + tokens._PIECE // 2, end)
        pieces.append(text[start:end])
        start = end
    assert counter.count(text) == sum(_public_count(p) for p in pieces)


def test_where_the_module_is_not_found_the_public_api_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "_rust_tokenizer", lambda encoding: None)
    counter = BpeCounter()
    text = "Today's weather in a city, 東京 🚀"
    assert counter.count(text) == _public_count(text)
    assert counter.exact
    assert counter.name == "o200k_base"


def test_without_bpe_openai_the_counter_is_the_estimate() -> None:
    said = _run(
        "import importlib.abc, sys\n"
        "class _Blocker(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'bpe_openai':\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Blocker())\n"
        "from airmeter.tokens import load_counter\n"
        "print(load_counter().name)\n"
    )
    assert said.strip() == "estimate"
    assert load_counter().name == "o200k_base"  # here, where it is installed


def test_preload_never_waits_for_a_load_already_under_way() -> None:
    """``ready()`` may be loading on a worker thread (holding the load's lock through the
    start-up grace and the build) when a meter on the event loop calls ``preload()``: that
    call returns at once instead of blocking the loop until the load ends."""
    counting = tokens.TokenCounting()
    with counting._lock:  # a load under way
        caller = threading.Thread(target=counting.preload)
        caller.start()
        caller.join(timeout=30)
        assert not caller.is_alive(), "preload() waited for the load's lock"
    assert (counting._thread is not None) or counting.counter is not None


def test_waiting_for_the_counter_holds_no_worker_thread() -> None:
    """``ready()`` waits on the loop: a cancelled wait (a server stopping) leaves no executor
    job that the loop's shutdown would wait for (it waited out the start-up grace and the build
    on a worker thread, delaying every short session's exit)."""
    submitted: list[object] = []

    class Recording(concurrent.futures.ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(fn)
            return super().submit(fn, *args, **kwargs)

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(Recording(max_workers=1))
        counting = tokens.TokenCounting()
        waiting = asyncio.ensure_future(counting.ready())
        await asyncio.sleep(0.05)
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        assert counting._thread is not None  # the load goes on, on its daemon thread
        assert (await counting.ready()).exact

    asyncio.run(main())
    assert submitted == []
