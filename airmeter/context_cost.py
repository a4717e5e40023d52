"""Context cost: the tokens each tool's definition and results add to a model's context.

A metered server records its tools' definitions (as ``tools/list`` sends them, ``_meta``
excluded) once they are known, counted off the call path, under the key
``definitions:{server}`` of :data:`CONTEXT_NAMESPACE`; each call's ``result_tokens`` go into
the rollups (sum, count, histogram). :func:`context_report` joins the two per server and tool.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from airmeter.buckets import Bound, to_ms
from airmeter.errors import MeterConfigError
from airmeter.histogram import merge_into, percentiles
from airmeter.rollup_reader import RollupReader
from airmeter.tokens import TokenCounter, definition_text, load_counter
from airstore.types import Store

__all__ = [
    "CONTEXT_NAMESPACE",
    "DEFAULT_DEFINITION_TOKEN_BUDGET",
    "ContextReport",
    "ToolContextCost",
    "context_report",
    "definition_tokens",
    "oversized_definitions",
    "store_definitions",
]

CONTEXT_NAMESPACE: Final = "meter.context"
"""Key ``definitions:{server}``: that server's definition token counts."""
DEFAULT_DEFINITION_TOKEN_BUDGET: Final = 1_000
"""A tool definition above this many tokens gets a warning from ``air check``."""
_PREFIX: Final = "definitions:"


def definition_tokens(
    definitions: Iterable[Mapping[str, Any]], counter: TokenCounter | None = None
) -> dict[str, int]:
    """Tokens of each tool definition as sent in ``tools/list`` (``_meta`` excluded).

    Args:
        definitions: ``tools/list`` entries (each with a ``name``).
        counter: how to count; by default the best available (blocking: loads the tokenizer).

    Returns:
        Tokens by tool name.
    """
    counter = counter or load_counter()
    return {str(d.get("name", "")): counter.count(definition_text(d)) for d in definitions}


def oversized_definitions(
    definitions: Iterable[Mapping[str, Any]],
    *,
    budget: int = DEFAULT_DEFINITION_TOKEN_BUDGET,
    counter: TokenCounter | None = None,
) -> list[tuple[str, int]]:
    """The tools whose definition is above ``budget`` tokens, largest first (for ``air check``).

    Args:
        definitions: ``tools/list`` entries.
        budget: the most tokens a definition may take.
        counter: how to count (the best available by default).

    Returns:
        ``(tool, tokens)`` pairs.
    """
    counts = definition_tokens(definitions, counter)
    return sorted(((n, t) for n, t in counts.items() if t > budget), key=lambda nt: -nt[1])


async def store_definitions(
    store: Store, server: str, counts: Mapping[str, int], counter: TokenCounter
) -> None:
    """Keep one server's definition token counts in the store.

    Raises:
        airstore.AirstoreError: the store refused the write.
    """
    doc = {"server": server, "tokenizer": counter.name, "exact": counter.exact,
           "tools": dict(counts), "updated_ms": int(time.time() * 1000)}  # fmt: skip
    await store.set(CONTEXT_NAMESPACE, f"{_PREFIX}{server}", doc)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContextCost:
    """One tool of one server: its definition's tokens and its results' (p50/p95 within 1.5 %)."""

    server: str
    tool: str
    definition_tokens: int | None
    result_tokens_p50: float | None
    result_tokens_p95: float | None
    result_tokens_total: int
    results_counted: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextReport:
    """What tools cost in context tokens; ``exact`` is false when any count is an estimate."""

    tokenizer: str
    exact: bool
    definition_tokens_total: int
    tools: tuple[ToolContextCost, ...]

    def to_dict(self) -> dict[str, Any]:
        """The ``"context"`` block of ``air meter report --format json``."""
        return {
            "tokenizer": self.tokenizer,
            "exact": self.exact,
            "definition_tokens_total": self.definition_tokens_total,
            "tools": {
                f"{t.server}/{t.tool}": {
                    "definition_tokens": t.definition_tokens,
                    "result_tokens_p50": t.result_tokens_p50,
                    "result_tokens_p95": t.result_tokens_p95,
                    "result_tokens_total": t.result_tokens_total,
                }
                for t in self.tools
            },
        }


class _Results:
    __slots__ = ("calls", "hist", "total")

    def __init__(self) -> None:
        self.calls = 0
        self.total = 0
        self.hist: dict[int, int] = {}


async def context_report(
    store: Store,
    *,
    since: Bound = None,
    until: Bound = None,
    server: str | None = None,
    reader: RollupReader | None = None,
) -> ContextReport:
    """Definition and result tokens per server and tool (results within ``[since, until)``).

    ``reader``: a :class:`~airmeter.RollupReader` of ``store`` to read the rollups through
    (its cache makes a repeated report cheap); by default a fresh one.

    Raises:
        MeterConfigError: a bad bound, or a reader of another store.
        airstore.AirstoreError: the store cannot be read.
    """
    now = int(time.time() * 1000)
    if reader is not None and reader.store is not store:
        raise MeterConfigError("the reader given reads another store")
    reader = reader if reader is not None else RollupReader(store)
    groups = await reader.load_groups(since_ms=to_ms(since, now), until_ms=to_ms(until, now))
    results: dict[tuple[str, str], _Results] = {}
    for _, rows in groups:
        for row in rows:
            if not row.result_token_calls or (server is not None and row.server != server):
                continue
            acc = results.get((row.server, row.tool))
            if acc is None:
                acc = results[(row.server, row.tool)] = _Results()
            acc.calls += row.result_token_calls
            acc.total += row.result_tokens
            merge_into(acc.hist, row.token_hist)
    docs = [doc for _, doc in await store.entries(CONTEXT_NAMESPACE, _PREFIX)
            if isinstance(doc, Mapping)]  # fmt: skip
    definitions: dict[tuple[str, str], int] = {}
    names: set[str] = set()
    exact = bool(docs)
    for doc in docs:
        srv = str(doc.get("server", ""))
        if server is not None and srv != server:
            continue
        names.add(str(doc.get("tokenizer", "")))
        exact = exact and doc.get("exact") is True
        tools = doc.get("tools")
        if isinstance(tools, Mapping):
            for tool, n in tools.items():
                if isinstance(n, int):
                    definitions[(srv, str(tool))] = n
    return _report(definitions, results, names, exact)


def _report(
    definitions: Mapping[tuple[str, str], int],
    results: Mapping[tuple[str, str], _Results],
    names: set[str],
    exact: bool,
) -> ContextReport:
    rows: list[ToolContextCost] = []
    for key in sorted(set(definitions) | set(results)):
        acc = results.get(key)
        p50, p95 = percentiles(acc.hist, (50.0, 95.0)) if acc is not None else (None, None)
        rows.append(ToolContextCost(
            server=key[0], tool=key[1], definition_tokens=definitions.get(key),
            result_tokens_p50=None if p50 is None else round(p50, 1),
            result_tokens_p95=None if p95 is None else round(p95, 1),
            result_tokens_total=acc.total if acc is not None else 0,
            results_counted=acc.calls if acc is not None else 0,
        ))  # fmt: skip
    tokenizer = ", ".join(sorted(n for n in names if n)) or "none"
    return ContextReport(
        tokenizer=tokenizer, exact=exact, definition_tokens_total=sum(definitions.values()),
        tools=tuple(rows),
    )  # fmt: skip
