"""Counting the tokens a tool adds to a model's context: its definition and its results.

Exact counts come from ``bpe-openai`` (the ``air-mcp[tokens]`` extra; its vocabularies ship
inside the package, no download) with the ``o200k_base`` encoding. Without it, counts are an
estimate, and say so: :attr:`TokenCounter.exact` is false and the name is ``"estimate"``
(one token per 4 bytes of UTF-8, rounded up: the usual rule of thumb for English and JSON,
within about 25 % of ``o200k_base`` on tool definitions and results; see docs/metering.md).

Counting runs off the call path: in the meter's delivery task, the exact tokenizer on a worker
thread. Loading its Rust tokenizer alone takes ~0.05 s of CPU (the package's Python side,
never imported here, would add 0.35 s); it is loaded on a daemon thread too.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import orjson

if TYPE_CHECKING:
    from airmeter.settings import TokenMode

__all__ = [
    "ESTIMATE",
    "EXACT_ENCODING",
    "BpeCounter",
    "EstimateCounter",
    "TokenCounter",
    "TokenCounting",
    "context_text",
    "count_all",
    "counting_for",
    "definition_text",
    "load_counter",
    "shared_counting",
]

logger = logging.getLogger(__name__)

ESTIMATE: Final = "estimate"
"""The name of the estimating counter."""
EXACT_ENCODING: Final = "o200k_base"
"""The encoding exact counts use."""
_BYTES_PER_TOKEN: Final = 4
_PIECE: Final = 50_000


class _Encoder(Protocol):
    """bpe-openai's Rust tokenizer (``PyTokenizer``), as far as counting uses it."""

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (special-token text as ordinary text)."""


class TokenCounter(Protocol):
    """Counts the tokens of texts."""

    @property
    def name(self) -> str:
        """``"o200k_base"``, or ``"estimate"``."""

    @property
    def exact(self) -> bool:
        """Whether counts are a real tokenizer's."""

    def count(self, text: str) -> int:
        """Tokens of one text."""


class EstimateCounter:
    """An estimate: one token per 4 bytes of UTF-8, rounded up (``exact`` is false)."""

    name: Final = ESTIMATE
    exact: Final = False

    def count(self, text: str) -> int:
        """The estimated tokens of ``text``."""
        size = len(text) if text.isascii() else len(text.encode("utf-8", "replace"))
        return math.ceil(size / _BYTES_PER_TOKEN)


class BpeCounter:
    """Exact counts with ``bpe-openai``'s ``o200k_base`` (load it off the call path).

    It counts with the package's Rust tokenizer, loaded alone (:func:`_rust_tokenizer`): the
    package's Python side builds tables of three vocabularies when it is imported (~0.35 s of
    CPU in every metered process) that counting never reads. Where that module is not found
    as expected (another bpe-openai layout), the package's public API counts instead.

    Raises:
        ImportError: ``bpe-openai`` is not installed.
    """

    exact: Final = True

    def __init__(self, encoding: str = EXACT_ENCODING) -> None:
        backend = _rust_tokenizer(encoding)
        if backend is None:
            import bpe_openai  # the public API: the same counts, the tables built

            self._encode = bpe_openai.get_encoding(encoding).encode_ordinary
        else:
            self._encode = backend.encode
        self.name = encoding

    def count(self, text: str) -> int:
        """The tokens of ``text`` (special-token text counts as ordinary text); a long text is
        counted in pieces cut at whitespace (the tokenizer refuses very long inputs)."""
        if len(text) <= _PIECE:
            return len(self._encode(_utf8_safe(text)))
        total, start = 0, 0
        while start < len(text):
            end = min(len(text), start + _PIECE)
            if end < len(text):
                cut = max(text.rfind(" ", start + _PIECE // 2, end),
                          text.rfind("\n", start + _PIECE // 2, end))  # fmt: skip
                end = cut if cut > start else end
            total += len(self._encode(_utf8_safe(text[start:end])))
            start = end
        return total


def _utf8_safe(text: str) -> str:
    """``text`` with lone surrogates (no UTF-8 for them) replaced, as bpe-openai's API does."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


_BINDINGS: Final = "bpe_openai._bindings"
"""bpe-openai's compiled tokenizer module (``tokenizer_for_encoding(name).encode(text)``)."""


def _rust_tokenizer(encoding: str) -> _Encoder | None:
    """bpe-openai's Rust tokenizer for ``encoding``, its compiled module loaded without the
    package's ``__init__``; ``None`` when bpe-openai is installed but that module is not where
    this release keeps it (the caller then uses the public API).

    The module is registered under its own name, so a later ``import bpe_openai`` (the public
    API, in this process) finds it loaded instead of initialising it a second time.

    Raises:
        ImportError: ``bpe-openai`` is not installed.
    """
    import importlib.machinery
    import importlib.util
    import sys
    from pathlib import Path

    module = sys.modules.get(_BINDINGS)
    if module is None:
        package = importlib.util.find_spec("bpe_openai")  # finds it; runs none of its code
        if package is None:
            raise ImportError("bpe-openai is not installed")
        found = [
            Path(folder) / f"_bindings{suffix}"
            for folder in package.submodule_search_locations or ()
            for suffix in importlib.machinery.EXTENSION_SUFFIXES
        ]
        path = next((str(p) for p in found if p.is_file()), None)
        if path is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(_BINDINGS, path)
        spec = importlib.util.spec_from_file_location(_BINDINGS, path, loader=loader)
        if spec is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_BINDINGS] = module
        try:
            loader.exec_module(module)
        except BaseException:
            del sys.modules[_BINDINGS]
            raise
    try:
        make = module.tokenizer_for_encoding
    except AttributeError:  # another layout
        return None
    encoder: _Encoder = make(encoding)
    return encoder


def load_counter(*, exact: bool = True) -> TokenCounter:
    """The best counter available: :class:`BpeCounter` when ``exact`` and ``bpe-openai`` is
    installed, else :class:`EstimateCounter`. Blocking (call it on a worker thread)."""
    if exact:
        try:
            return BpeCounter()
        except ImportError:
            logger.info("airmeter: bpe-openai is not installed; token counts are estimates")
        except Exception:  # a broken install must not stop metering
            logger.exception("airmeter: loading the tokenizer failed; token counts are estimates")
    return EstimateCounter()


def definition_text(definition: Mapping[str, Any]) -> str:
    """The JSON a tool's ``tools/list`` entry adds to a model's context (``_meta`` excluded:
    it never reaches the model)."""
    sent = {k: v for k, v in definition.items() if k != "_meta"}
    return orjson.dumps(sent, default=str).decode()


def _dumps(value: Any, option: int = 0) -> str:
    """``value`` as JSON text; dict keys that are not strings (``{1: "a"}``) as they are sent
    (``{"1": "a"}``): with ``OPT_NON_STR_KEYS``, which doubles the cost, only when needed."""
    try:
        return orjson.dumps(value, default=str, option=option).decode()
    except TypeError:
        return orjson.dumps(value, default=str, option=option | orjson.OPT_NON_STR_KEYS).decode()


def _blocks_text(blocks: Sequence[Any]) -> str:
    parts = []
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:  # images, resources, links: their JSON is what a client passes on
            parts.append(_dumps(block))
    return "\n".join(parts)


def context_text(result: Any) -> str:
    """The text a tool result adds to a model's context: the text of its content blocks (a
    ``CallToolResult``), the text itself, or a structured value's JSON (as aircore sends it,
    indented; dict keys that are not strings become their JSON text, as aircore sends them)."""
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping):
        content = result.get("content")
        if isinstance(content, list):
            return _blocks_text(content)
        text = result.get("text")
        if isinstance(text, str) and len(result) == 1:
            return text
    return _dumps(result, orjson.OPT_INDENT_2)


def count_all(counter: TokenCounter, texts: Sequence[str]) -> list[int | None]:
    """Tokens of each text, ``None`` where counting failed (blocking; the meter runs it on a
    worker thread)."""
    out: list[int | None] = []
    for text in texts:
        try:
            out.append(counter.count(text))
        except Exception:  # one bad text costs its count only
            logger.exception("airmeter: counting tokens failed")
            out.append(None)
    return out


class TokenCounting:
    """The counter a meter uses, loaded once, in the background, never on a call path.

    Loading the exact tokenizer takes ~0.05 s of CPU (:class:`BpeCounter`; it was 0.4 s while
    the whole package loaded), still not on a call path: it starts on a daemon thread
    (:meth:`preload`) and records built before it is ready carry no count: delivery never
    waits for it.

    Args:
        exact: use the exact tokenizer when it is installed (else always the estimate).
    """

    def __init__(self, *, exact: bool = True) -> None:
        self._exact = exact
        self._counter: TokenCounter | None = None if exact else EstimateCounter()
        self._lock = threading.Lock()  # held while loading (up to START_GRACE_S + the build)
        self._starting = threading.Lock()  # only to start the thread: preload never waits
        self._thread: threading.Thread | None = None
        self._not_before = 0.0  # (monotonic) when the loader may build the tokenizer

    @property
    def counter(self) -> TokenCounter | None:
        """The counter once loaded, else ``None``."""
        return self._counter

    def preload(self) -> None:
        """Start loading the counter on a daemon thread (once; never blocks): the tokenizer is
        built :data:`START_GRACE_S` after the first call (a server's start-up first)."""
        if self._counter is not None or self._thread is not None:
            return
        with self._starting:
            if self._thread is None:
                self._not_before = time.monotonic() + START_GRACE_S
                self._thread = threading.Thread(
                    target=self._load, name="airmeter-tokenizer", daemon=True
                )
                self._thread.start()

    async def ready(self) -> TokenCounter:
        """The counter, waiting for it to load (for tests and tools; a meter never waits).

        It waits on the loop, not on a worker thread: a cancelled wait leaves nothing behind
        that the loop's shutdown (a server's exit) would wait for."""
        self.preload()
        while (counter := self._counter) is None:
            thread = self._thread
            if thread is not None and not thread.is_alive():  # it died: load here
                return await asyncio.to_thread(self._load)
            await asyncio.sleep(_READY_POLL_S)
        return counter

    def _load(self) -> TokenCounter:
        with self._lock:  # meters on several loops share one tokenizer, loaded once
            if self._counter is None:
                # (a server's start-up first: building the tokenizer holds the GIL ~50 ms)
                time.sleep(max(0.0, self._not_before - time.monotonic()))
                self._counter = load_counter(exact=self._exact)
            return self._counter


_READY_POLL_S: Final = 0.01
"""How often :meth:`TokenCounting.ready` looks whether the counter has loaded."""

START_GRACE_S: Final = 0.3
"""Seconds after loading starts (:meth:`TokenCounting.preload`, as its meter starts) before the
exact tokenizer is built. The build is one ~50 ms call that holds the GIL, and a server answers
``initialize`` about 0.2 s after it starts: built at once, it delayed that answer (the metered
demo server's spawn → ``initialize``, median: 205 → 266 ms). Records before it carry no count,
as they did while the whole package took 0.4 s to load."""

_SHARED: dict[bool, TokenCounting] = {}


def shared_counting(*, exact: bool = True) -> TokenCounting:
    """One :class:`TokenCounting` per process (the tokenizer is loaded once for every meter)."""
    found = _SHARED.get(exact)
    if found is None:
        found = _SHARED[exact] = TokenCounting(exact=exact)
    return found


def counting_for(mode: TokenMode | None = None) -> TokenCounting | None:
    """The process's counting for ``mode`` (``None``: ``$AIR_TOKENS``): ``None`` for ``"off"``.

    Raises:
        MeterConfigError: ``mode`` is not ``"exact"``, ``"estimate"`` or ``"off"``.
    """
    from airmeter.errors import MeterConfigError
    from airmeter.settings import token_mode

    mode = token_mode() if mode is None else mode
    if mode not in ("exact", "estimate", "off"):
        raise MeterConfigError(f"count_tokens must be 'exact', 'estimate' or 'off', got {mode!r}")
    return None if mode == "off" else shared_counting(exact=mode == "exact")
