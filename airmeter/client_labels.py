"""The Prometheus ``client`` label, bounded: the busiest N clients by name, the rest ``(other)``.

Every OAuth client that calls would otherwise be a new series (callers could grow the
exposition without bound). :class:`TopClients` keeps at most ``top`` named series and one
``(other)``. Which clients are the busiest is estimated with the space-saving algorithm over a
bounded table (``track`` entries, default ``max(100, 10 x top)``): a client enters the named
series when a slot is free (the first N clients) or when it has surely been seen more often
than the least busy named one, which then leaves (its series stops; its later calls count in
``(other)``; its earlier ones are not moved there, so ``rate()`` never counts them twice; named
again while still tracked, it continues its counters). So every series only
grows while it exists, ``(other)`` included, and the label never has more than ``top + 1``
values, whatever the number of clients.

Families (counters, since the process started, like every counter of ``/metrics``)::

    air_mcp_client_calls_total{client,ok}
    air_mcp_client_cost_total{client}
"""

from __future__ import annotations

from typing import Final

from airmeter.errors import MeterConfigError
from airmeter.prometheus import escape_label_value, format_value

__all__ = ["CLIENT_CALLS", "CLIENT_COST", "DEFAULT_TOP_CLIENTS", "OTHER", "TopClients"]

DEFAULT_TOP_CLIENTS: Final = 10
"""Named clients in the ``client`` label by default (``AIR_METER_PROM_TOP_CLIENTS``)."""
OTHER: Final = "(other)"
"""The label of every client not named (in parentheses: no client id renders so, see
:func:`airmeter.clients.client_key`)."""
"""The label value of every client outside the top N."""
CLIENT_CALLS: Final = "air_mcp_client_calls_total"
CLIENT_COST: Final = "air_mcp_client_cost_total"


class _Series:
    __slots__ = ("cost", "failed", "ok")

    def __init__(self) -> None:
        self.ok = 0
        self.failed = 0
        self.cost = 0.0


class _Tracked:
    """A tracked client: its estimated count, how much of it may be others' (inherited from
    the entry it replaced), and its series once it had one (kept while it is tracked, so a
    client named again continues its counters instead of restarting them)."""

    __slots__ = ("count", "error", "series")

    def __init__(self, count: int) -> None:
        self.count = count
        self.error = count
        self.series: _Series | None = None


class TopClients:
    """Calls and cost per client for the ``client`` label (see the module docstring).

    Args:
        top: how many clients are named (0: every client is ``(other)``).
        track: how many clients' call counts are estimated (more than ``top``).

    Raises:
        MeterConfigError: ``top`` below 0, or ``track`` not above ``top``.
    """

    def __init__(self, *, top: int = DEFAULT_TOP_CLIENTS, track: int | None = None) -> None:
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise MeterConfigError(f"top must be a whole number >= 0, got {top!r}")
        track = max(100, 10 * top) if track is None else track
        if track <= top:
            raise MeterConfigError(f"track ({track}) must be above top ({top})")
        self.top = top
        self._track = track
        self._seen: dict[str, _Tracked] = {}
        self._named: dict[str, _Series] = {}
        self._other = _Series()

    def observe(self, client: str, *, ok: bool, cost: float) -> None:
        """Count one call of ``client`` (O(1) for a named client; O(track) for a client not
        tracked yet once the table is full)."""
        series = self._named.get(client)
        seen = self._seen
        tracked = seen.get(client)
        if tracked is None:
            least = 0
            if len(seen) >= self._track:  # space-saving: the least seen untracked one goes
                named = self._named
                victim = min((k for k in seen if k not in named), key=lambda k: seen[k].count)
                least = seen.pop(victim).count
            tracked = seen[client] = _Tracked(least)
        tracked.count += 1
        if series is None:
            series = self._place(client, tracked)
        if ok:
            series.ok += 1
        else:
            series.failed += 1
        series.cost += cost

    def _place(self, client: str, tracked: _Tracked) -> _Series:
        """The series of a client not named now: a free slot, else the least busy named
        client's if ``client`` has surely been seen more often (counts it inherited from the
        table do not count, so one-call clients never displace one another)."""
        named = self._named
        if len(named) >= self.top:
            if not named:
                return self._other
            seen = self._seen
            weakest = min(named, key=lambda k: seen[k].count)
            if tracked.count - tracked.error <= seen[weakest].count:
                return self._other
            del named[weakest]  # its series pauses; its later calls count in "(other)"
        series = tracked.series
        if series is None:
            series = tracked.series = _Series()
        named[client] = series
        return series

    def labels(self) -> list[str]:
        """The ``client`` label values rendered now (named ones sorted, then ``(other)``)."""
        return [*sorted(self._named), OTHER]

    def render(self) -> list[str]:
        """The two families' lines (HELP, TYPE, samples), ``(other)`` always present."""
        rows = [(name, self._named[name]) for name in sorted(self._named)]
        rows.append((OTHER, self._other))
        lines = [
            f"# HELP {CLIENT_CALLS} MCP tool calls by client (the busiest {self.top} by name, "
            f'the rest as "{OTHER}") and outcome.',
            f"# TYPE {CLIENT_CALLS} counter",
        ]
        for name, series in rows:
            value = escape_label_value(name)
            lines.append(f'{CLIENT_CALLS}{{client="{value}",ok="true"}} {series.ok}')
            lines.append(f'{CLIENT_CALLS}{{client="{value}",ok="false"}} {series.failed}')
        lines += [
            f"# HELP {CLIENT_COST} Weighted cost of MCP tool calls by client (as {CLIENT_CALLS}).",
            f"# TYPE {CLIENT_COST} counter",
        ]
        for name, series in rows:
            value = escape_label_value(name)
            lines.append(f'{CLIENT_COST}{{client="{value}"}} {format_value(series.cost)}')
        return lines
