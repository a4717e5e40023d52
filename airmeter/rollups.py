"""Per-minute rollups of call records: what snapshots read instead of the raw log.

A rollup row sums the calls of one minute for one ``(server, instance, tool, layer)``: counts,
errors by type, latency sum/max and a log-bucketed histogram, cost and tokens, and the context
tokens of the results (sum, count and a histogram like the latency one). A minute's rows
from one writer are stored as one JSON document under the key ``"{minute_ms:013d}:{writer}"`` in
the hour's namespace ``meter.rollups.{hour}`` (``hour = minute_ms // 3_600_000``), so several
processes writing one store never overwrite each other's rollups, and a writer rewrites only
the current hour's namespace (a reader re-reads only what changed). Each writer lists its hours
under the key ``"hours:{writer}"`` of :data:`ROLLUPS_NAMESPACE`, and after every write marks the
hours it rewrote with a new revision token under ``"revs:{writer}:{day}"`` (``{"hour": token}``,
``day = hour // 24``): a reader that kept an hour re-reads it only when a token changed. A
snapshot's cost grows with minutes x tools, never with calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from math import log as _log
from typing import Any

from airmeter.histogram import (
    _INV_LOG_GROWTH,
    _LOG_BASE,
    BASE_MS,
    bucket_of,
    from_json,
    merge_into,
    to_json,
)
from airmeter.layers import LAYERS
from airmeter.record import CallRecord

__all__ = [
    "HOURS_KEY_PREFIX",
    "HOUR_MS",
    "MINUTE_MS",
    "REVISIONS_KEY_PREFIX",
    "ROLLUPS_NAMESPACE",
    "RollupBook",
    "RollupRow",
    "Sums",
    "hour_namespace",
    "hour_of",
    "merge_row_into",
    "minute_key",
    "parse_minute_doc",
    "revisions_key",
]

ROLLUPS_NAMESPACE = "meter.rollups"
"""The index namespace (each writer's hours); minutes live in ``meter.rollups.{hour}``."""

MINUTE_MS = 60_000
ROLLUP_FORMAT = 2  # 2: histograms as flat [bucket, count, ...] lists
_READABLE_FORMATS = (2,)  # format 1 used other bucket bounds: its documents are skipped
_WEIGHTS = tuple(info.weight for info in LAYERS)

_RowKey = tuple[str, str, str, int]  # server, instance, tool, layer


HOUR_MS = 3_600_000
HOURS_KEY_PREFIX = "hours:"
REVISIONS_KEY_PREFIX = "revs:"


def hour_of(minute_ms: int) -> int:
    """The hour number (epoch ms // 3 600 000) a minute belongs to."""
    return minute_ms // HOUR_MS


def hour_namespace(hour: int) -> str:
    """The namespace holding one hour's minute documents."""
    return f"{ROLLUPS_NAMESPACE}.{hour}"


def revisions_key(writer: str, day: int) -> str:
    """The index key holding one writer's revision tokens of the hours of one day."""
    return f"{REVISIONS_KEY_PREFIX}{writer}:{day}"


def minute_key(minute_ms: int, writer: str) -> str:
    """The store key of one minute's document from one writer (sorts by time)."""
    return f"{minute_ms:013d}:{writer}"


class Sums:
    """Counts, errors by type, latency sum/max, histogram, cost and tokens, and how to add two
    of them: shared by a stored minute (:class:`RollupRow`) and a snapshot row (``Acc``)."""

    __slots__ = (
        "calls",
        "cost",
        "errors",
        "errors_by_type",
        "hist",
        "latency_max",
        "latency_sum",
        "result_token_calls",
        "result_tokens",
        "token_hist",
        "tokens_in",
        "tokens_out",
    )

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.errors_by_type: dict[str, int] = {}
        self.latency_sum = 0.0
        self.latency_max = 0.0
        self.cost = 0.0
        self.tokens_in = 0
        self.tokens_out = 0
        self.hist: dict[int, int] = {}
        self.result_tokens = 0
        self.result_token_calls = 0
        self.token_hist: dict[int, int] = {}

    def merge(self, other: Sums, *, histogram: bool = True) -> None:
        """Add another row's sums into this one (``histogram=False`` skips the histogram)."""
        self.calls += other.calls
        if other.errors:
            self.errors += other.errors
            ebt = self.errors_by_type
            for etype, count in other.errors_by_type.items():
                ebt[etype] = ebt.get(etype, 0) + count
        self.latency_sum += other.latency_sum
        if other.latency_max > self.latency_max:
            self.latency_max = other.latency_max
        self.cost += other.cost
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        if other.result_token_calls:
            self.result_tokens += other.result_tokens
            self.result_token_calls += other.result_token_calls
            if histogram:
                merge_into(self.token_hist, other.token_hist)
        if histogram:
            merge_into(self.hist, other.hist)


class RollupRow(Sums):
    """The running sums of one minute for one server instance, tool and layer."""

    __slots__ = ("instance", "layer", "minute", "server", "tool")

    def __init__(self, minute: int, server: str, instance: str, tool: str, layer: int) -> None:
        Sums.__init__(self)  # one call per row: ~7 ms over a back-filled week's ~70 k rows
        self.minute = minute
        self.server = server
        self.instance = instance
        self.tool = tool
        self.layer = layer

    def add(self, rec: CallRecord) -> None:
        """Count one record (its minute and key must match this row)."""
        self.calls += 1
        if not rec.ok:
            self.errors += 1
            etype = rec.error_type or "error"
            self.errors_by_type[etype] = self.errors_by_type.get(etype, 0) + 1
        latency = rec.latency_ms
        self.latency_sum += latency
        if latency > self.latency_max:
            self.latency_max = latency
        # histogram.bucket_of, inlined (the back-fill's hottest line)
        index = 0 if latency <= BASE_MS else int((_log(latency) - _LOG_BASE) * _INV_LOG_GROWTH) + 1
        hist = self.hist
        hist[index] = hist.get(index, 0) + 1
        cost = rec.cost
        self.cost += _WEIGHTS[self.layer - 1] if cost is None else cost
        if rec.tokens_in:
            self.tokens_in += rec.tokens_in
        if rec.tokens_out:
            self.tokens_out += rec.tokens_out
        counted = rec.result_tokens
        if counted is not None:
            self.result_tokens += counted
            self.result_token_calls += 1
            tindex = bucket_of(float(counted))
            self.token_hist[tindex] = self.token_hist.get(tindex, 0) + 1

    def to_json(self) -> dict[str, Any]:
        """The row's JSON form (without the minute, which its document carries)."""
        return {
            "server": self.server,
            "instance": self.instance,
            "tool": self.tool,
            "layer": self.layer,
            "calls": self.calls,
            "errors": self.errors,
            "errors_by_type": dict(self.errors_by_type),
            "latency_sum": self.latency_sum,
            "latency_max": self.latency_max,
            "cost": self.cost,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "hist": to_json(self.hist),
            **({"result_tokens": self.result_tokens, "result_token_calls":
                self.result_token_calls, "token_hist": to_json(self.token_hist)}
               if self.result_token_calls else {}),
        }  # fmt: skip

    @classmethod
    def from_json(cls, minute: int, data: Mapping[str, Any]) -> RollupRow:
        """Rebuild a row from its JSON form.

        Raises:
            ValueError: a layer outside 1…7, negative counts, more errors than calls, or a
                damaged histogram (one bad row would otherwise break or skew every snapshot).
            KeyError, TypeError: a missing or ill-typed field.
        """
        layer = int(data["layer"])
        calls, errors = int(data["calls"]), int(data["errors"])
        if not 1 <= layer <= len(_WEIGHTS) or not 0 <= errors <= calls:
            raise ValueError(f"rollup row out of range: layer {layer}, {errors}/{calls} errors")
        row = cls(minute, str(data["server"]), str(data["instance"]), str(data["tool"]), layer)
        row.calls = calls
        row.errors = errors
        row.errors_by_type = {str(k): int(v) for k, v in data["errors_by_type"].items()}
        row.latency_sum = float(data["latency_sum"])
        row.latency_max = float(data["latency_max"])
        row.cost = float(data["cost"])
        row.tokens_in = int(data["tokens_in"])
        row.tokens_out = int(data["tokens_out"])
        row.hist = from_json(data["hist"])
        if "result_token_calls" in data:  # written by meters that count context tokens
            row.result_tokens = int(data["result_tokens"])
            row.result_token_calls = int(data["result_token_calls"])
            row.token_hist = from_json(data["token_hist"])
        return row


def parse_minute_doc(doc: Mapping[str, Any]) -> list[RollupRow]:
    """Rows of one stored minute document; an unknown format, or a damaged document (written
    by something else into the data dir), gives no rows rather than breaking every snapshot."""
    if not isinstance(doc, Mapping) or doc.get("format") not in _READABLE_FORMATS:
        return []
    try:
        minute = int(doc["minute"])
        return [RollupRow.from_json(minute, row) for row in doc["rows"]]
    except (KeyError, TypeError, ValueError, AttributeError):
        return []


def merge_row_into(rows: dict[_RowKey, RollupRow], row: RollupRow, minute: int) -> None:
    """Add ``row`` to the row of ``rows`` with the same server, instance, tool and layer (made
    for ``minute`` when missing)."""
    key = (row.server, row.instance, row.tool, row.layer)
    mine = rows.get(key)
    if mine is None:
        mine = rows[key] = RollupRow(minute, *key)
    mine.merge(row)


class RollupBook:
    """Rollup rows by minute, built from records; tracks which minutes changed.

    Args:
        retention_minutes: keep at most this many newest minutes (``None``: keep all).
    """

    def __init__(self, *, retention_minutes: int | None = None) -> None:
        self._minutes: dict[int, dict[_RowKey, RollupRow]] = {}
        self._dirty: set[int] = set()
        self._retention = retention_minutes
        self._newest = 0
        self._last_minute = -1
        self._last_rows: dict[_RowKey, RollupRow] = {}

    def add(self, rec: CallRecord) -> None:
        """Count one record in its minute."""
        ts = rec.ts_ms
        minute = ts - ts % MINUTE_MS
        if minute == self._last_minute:
            rows = self._last_rows
        else:
            found = self._minutes.get(minute)
            if found is None:
                found = self._minutes[minute] = {}
                if minute > self._newest:
                    self._newest = minute
                    self._expire()
            rows = self._last_rows = found
            self._last_minute = minute
            self._dirty.add(minute)  # the fast path above: already marked (take_dirty resets)
        key = (rec.server, rec.instance_id or "", rec.tool, rec.layer)
        row = rows.get(key)
        if row is None:
            row = rows[key] = RollupRow(minute, key[0], key[1], key[2], int(key[3]))
        row.add(rec)

    def merge_rows(self, rows: Iterable[RollupRow]) -> None:
        """Add stored rows into the book (their minutes are not marked dirty)."""
        for row in rows:
            merge_row_into(self._minutes.setdefault(row.minute, {}), row, row.minute)

    def _expire(self) -> None:
        if self._retention is None:
            return
        oldest = self._newest - self._retention * MINUTE_MS
        for minute in [m for m in self._minutes if m <= oldest]:
            del self._minutes[minute]
            self._dirty.discard(minute)
        self._last_minute = -1

    @property
    def changed(self) -> bool:
        """Whether a minute changed since the last :meth:`take_dirty`."""
        return bool(self._dirty)

    def take_dirty(self) -> list[int]:
        """The minutes changed since the last call, oldest first; clears the set."""
        dirty = sorted(self._dirty)
        self._dirty.clear()
        self._last_minute = -1  # the next record marks its minute again
        return dirty

    def mark_dirty(self, minutes: Iterable[int]) -> None:
        """Mark ``minutes`` changed again (their write failed); minutes no longer held are
        ignored."""
        self._dirty.update(m for m in minutes if m in self._minutes)

    def minute_doc(self, minute: int) -> dict[str, Any]:
        """One minute's JSON document, as stored."""
        rows = self._minutes.get(minute, {})
        return {
            "format": ROLLUP_FORMAT,
            "minute": minute,
            "rows": [row.to_json() for row in rows.values()],
        }

    def drop_before(self, minute: int) -> None:
        """Forget minutes older than ``minute`` (they are already stored)."""
        for m in [m for m in self._minutes if m < minute and m not in self._dirty]:
            del self._minutes[m]
        self._last_minute = -1

    def holds(self, minute: int) -> bool:
        """Whether the book holds ``minute``."""
        return minute in self._minutes

    def groups(self) -> Iterator[tuple[int, list[RollupRow]]]:
        """Every minute held, as ``(minute, rows)``."""
        for minute, rows in self._minutes.items():
            yield minute, list(rows.values())
