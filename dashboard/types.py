"""The dashboard's vocabulary: a time range, filters, and the view model the page renders.

Everything here is a frozen dataclass of plain numbers and strings, so tests can compare it with
an independent computation and the layout only formats it. What airmeter already types is
presented as it is, never re-declared: the aggregate numbers (headline, series, layers,
per-tool rows) are its :class:`~airmeter.Snapshot`, the context panel's rows its
:class:`~airmeter.context_cost.ToolContextCost`, the gateway panel's its
:class:`~airmeter.hops.HopFigures` and the top clients its :class:`~airmeter.clients.ClientRow`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airmeter import Layer, Snapshot
from airmeter.clients import ClientRow
from airmeter.context_cost import ToolContextCost
from airmeter.hops import HopFigures

__all__ = [
    "Alert",
    "CallRow",
    "ContextPanel",
    "DashboardView",
    "ErrorRow",
    "Filters",
    "GatewayPanel",
    "HistogramBin",
    "LocationServer",
    "MachinePanel",
    "ServerChoice",
    "SloPanel",
    "SloRow",
    "TimeRange",
    "ToolDetail",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeRange:
    """``[since_ms, until_ms)`` in epoch ms; ``key`` is ``"15m"`` … ``"7d"`` or ``"custom"``."""

    key: str
    since_ms: int
    until_ms: int
    bucket_ms: int

    @property
    def minutes(self) -> float:
        """The range's length in minutes."""
        return (self.until_ms - self.since_ms) / 60_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """Optional equality filters; ``None`` means "all".

    ``server`` is a server name (all its instances); ``instance`` narrows to one instance id.
    """

    tool: str | None = None
    layer: Layer | None = None
    server: str | None = None
    instance: str | None = None
    client: str | None = None
    """An OAuth client id: the page then sums that client's calls from the raw log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerChoice:
    """One entry of the server filter: a whole server (``instance`` None) or one instance.

    ``value`` is what the dropdown carries (see :func:`dashboard.data.parse_server_choice`),
    ``label`` what people read: ``billing``, ``billing (all 2 instances)``,
    ``billing (web-2)``.
    """

    value: str
    label: str
    server: str
    instance: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorRow:
    """One failed call in the recent-errors table."""

    ts_ms: int
    tool: str
    layer: Layer
    server: str
    error_type: str
    message: str
    request_id: str
    error_class: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRow:
    """One call in a tool's latest-calls table."""

    ts_ms: int
    tool: str
    layer: Layer
    latency_ms: float
    ok: bool
    error_type: str
    request_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HistogramBin:
    """``count`` calls with latency in ``[lo_ms, hi_ms)``."""

    lo_ms: float
    hi_ms: float
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Alert:
    """Something the page shows as a badge in its header.

    ``kind`` is ``"drops"`` (the meter dropped or failed to deliver records), ``"disk"`` (a
    log is near its retention cap: older entries will go) or ``"slo"`` (an objective is in
    ``warning``, ``exhausted`` or ``breach``); ``text`` is one short sentence.
    """

    kind: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SloRow:
    """One objective for one server's tool, as ``air meter slo`` evaluates it.

    ``objective`` reads like ``availability 99.5%`` or ``p95 ≤ 300 ms``; ``state`` is airmeter's
    (``ok``, ``warning``, ``exhausted``, ``breach``); ``burn_rates`` are the 5 min, 30 min, 1 h
    and 6 h burn rates; ``history`` the 1 h burn rate at ``history_ms`` (oldest first, the last
    one now).
    """

    server: str
    tool: str
    objective: str
    period: str
    budget_remaining: float
    burn_rates: tuple[float, float, float, float]
    state: str
    valid_calls: int
    bad_calls: int
    history_ms: tuple[int, ...] = ()
    history: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SloPanel:
    """The SLO panel: where objectives come from and their rows, worst first.

    ``status`` is ``"missing"`` (no objectives file: ``message`` says how to add one),
    ``"invalid"`` (``message`` is the file's error), ``"pending"`` (not evaluated yet) or
    ``"ready"``; ``more`` counts rows left out to keep the page bounded.
    """

    config: str
    status: str
    message: str = ""
    rows: tuple[SloRow, ...] = ()
    more: int = 0
    evaluated_at_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextPanel:
    """What the tools cost in a model's context, for ``range_key`` (results) and all time
    (definitions). ``exact`` is False when a count is an estimate (``tokenizer`` names it);
    rows are the largest definitions first, ``more`` counts those left out."""

    range_key: str
    tokenizer: str
    exact: bool
    definition_tokens_total: int
    rows: tuple[ToolContextCost, ...]
    more: int = 0
    computed_at_ms: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LocationServer:
    """One server (one instance) of one data location, in the page's range."""

    server: str
    instance_id: str
    calls: int
    errors: int
    error_rate: float
    p95_ms: float | None
    data: str
    """The URL of the store its data is in."""
    here: bool
    """Whether that is the store the dashboard was opened on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MachinePanel:
    """Every server of every data location on this machine (the dashboard's store first)."""

    rows: tuple[LocationServer, ...] = ()
    locations: tuple[str, ...] = ()
    """The URLs read, the dashboard's store first."""
    everywhere: bool = True
    """``False`` when the dashboard was opened on one store (``--store``)."""
    more: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayPanel:
    """The gateway's added latency per upstream in the page's range (none: no hops)."""

    hops: int = 0
    rows: tuple[HopFigures, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardView:
    """Everything the main page shows for one range and set of filters.

    ``store_empty`` is True when the store holds no call at all (the page then explains how to
    produce some); ``tool_names``/``server_choices`` list the choices for the filter dropdowns;
    ``errors_by_type`` counts every failed call in the range by error type, most frequent first;
    ``alerts`` are the header's badges (see :class:`Alert`); ``errors_by_class`` counts the
    failed calls by airmeter's error class (``tool_error``, ``exception``, ``timeout`` count in
    a tool's error rate; ``refused``, ``protocol``, ``cancelled``, ``budget`` show apart);
    ``slo`` and ``context`` are computed in the background (see :mod:`dashboard.meter_watch`),
    ``machine`` and ``gateway`` too (see :mod:`dashboard.machine`).
    """

    range: TimeRange
    filters: Filters
    snapshot: Snapshot
    """airmeter's snapshot of the range and filters: the headline numbers, the time series
    (calls per :class:`~airmeter.Layer`), the layers and the per-tool rows, busiest first."""
    recent_errors: tuple[ErrorRow, ...]
    tool_names: tuple[str, ...]
    store_empty: bool
    errors_by_type: tuple[tuple[str, int], ...] = ()
    generated_at_ms: int = field(default=0)
    server_choices: tuple[ServerChoice, ...] = ()
    alerts: tuple[Alert, ...] = ()
    errors_by_class: tuple[tuple[str, int], ...] = ()
    slo: SloPanel | None = None
    context: ContextPanel | None = None
    machine: MachinePanel | None = None
    """Every data location's servers (:mod:`dashboard.machine`)."""
    gateway: GatewayPanel | None = None
    """The latency ``air gateway`` added, per upstream (:mod:`dashboard.machine`)."""
    clients: tuple[ClientRow, ...] = ()
    client_names: tuple[str, ...] = ()
    clients_partial: bool = False
    """The range held more calls than the panel reads (only the newest were summed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDetail:
    """One tool's drill-down: its latency histogram and its latest calls (newest first)."""

    tool: str
    calls: int
    histogram: tuple[HistogramBin, ...]
    latest: tuple[CallRow, ...]
