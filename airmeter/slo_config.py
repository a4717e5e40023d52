"""SLO objectives: per tool and server (globs), availability and latency, over a period.

In YAML (``air meter slo --config .air/slo.yml``)::

    objectives:
      - tool: "get_*"          # glob on the tool name (default "*")
        server: "*"            # glob on the server name (default "*")
        availability: 0.995    # share of calls that are not the tool's failure
        latency_p95_ms: 300    # 95 % of calls at or under 300 ms (latency_p99_ms: 99 %)
        period: 30d            # the error budget's window (default 30d; s, m, h, d, w)
      - tool: "*"
        client: "ci-*"         # only these clients' calls (glob on client ids; from the raw log)
        availability: 0.99

or in code with :class:`Objective`. One entry can set several targets; each is evaluated on its
own (an availability and a latency objective).

An objective with ``client`` (a glob on the client ids ``air meter report --by client`` shows,
:func:`airmeter.clients.client_key`) counts only the calls of matching clients. The rollups hold
no clients, so it is evaluated over the raw call log (its newest
:data:`~airmeter.clients.MAX_CLIENT_READ` calls); when the log does not reach back over the whole
period, the status says how much of it the log covers.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from airmeter.errors import MeterConfigError

__all__ = [
    "DEFAULT_PERIOD_S",
    "DEFAULT_SLO_FILE",
    "Objective",
    "SloKind",
    "SloTarget",
    "load_objectives",
    "objectives_from_data",
    "parse_period",
]

DEFAULT_SLO_FILE: Final = ".air/slo.yml"
"""Where ``air meter slo`` reads objectives by default."""
DEFAULT_PERIOD_S: Final = 30 * 86_400.0
"""The error budget's period unless an objective says otherwise: 30 days."""

SloKind = Literal["availability", "latency"]
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_PERIOD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_KEYS: Final = frozenset(
    {"tool", "server", "client", "availability", "latency_p95_ms", "latency_p99_ms", "period"}
)
_MIN_PERIOD_S: Final = 3600.0


def parse_period(text: str | int | float) -> float:
    """``"30d"``, ``"7d"``, ``"12h"`` … (or seconds as a number) → seconds.

    Raises:
        MeterConfigError: not a duration, or shorter than an hour.
    """
    if isinstance(text, bool):
        raise MeterConfigError(f"period must be a duration like 30d, got {text!r}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        match = _PERIOD.match(str(text))
        if match is None:
            raise MeterConfigError(f"period {text!r}: use a duration like 30d, 7d or 12h")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not seconds >= _MIN_PERIOD_S:
        raise MeterConfigError(f"period {text!r} must be at least 1h")
    return seconds


def _period_text(seconds: float) -> str:
    for unit in ("d", "h", "m"):
        size = _UNITS[unit]
        if seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


@dataclass(frozen=True, slots=True, kw_only=True)
class SloTarget:
    """One evaluated target: ``good`` share ``target`` of the valid calls over ``period_s``.

    For latency, a good call took at most ``threshold_ms``.
    """

    tool: str
    server: str
    kind: SloKind
    target: float
    threshold_ms: float | None
    period_s: float
    client: str | None = None

    @property
    def period(self) -> str:
        """The period as written (``"30d"``)."""
        return _period_text(self.period_s)

    def matches(self, server: str, tool: str) -> bool:
        """Whether a server's tool falls under this target's globs."""
        return fnmatch.fnmatchcase(tool, self.tool) and fnmatch.fnmatchcase(server, self.server)

    def matches_client(self, client: str) -> bool:
        """Whether a client (as :func:`airmeter.clients.client_key` names it) falls under this
        target's client glob (every client when it has none)."""
        return self.client is None or fnmatch.fnmatchcase(client, self.client)


@dataclass(frozen=True, slots=True, kw_only=True)
class Objective:
    """One objective entry: globs and up to three targets.

    Args:
        tool: glob on tool names.
        server: glob on server names.
        client: glob on client ids (``None``: every call); evaluated over the raw call log.
        availability: the share of valid calls that must not fail (0 < x < 1).
        latency_p95_ms: 95 % of valid calls must take at most this long.
        latency_p99_ms: 99 % of valid calls must take at most this long.
        period: the budget's window: ``"30d"`` or seconds.

    Raises:
        MeterConfigError: no target, or a value out of range.
    """

    tool: str = "*"
    server: str = "*"
    client: str | None = None
    availability: float | None = None
    latency_p95_ms: float | None = None
    latency_p99_ms: float | None = None
    period: str | float = "30d"

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not isinstance(self.server, str):
            raise MeterConfigError("tool and server must be glob strings")
        if self.client is not None and (not isinstance(self.client, str) or not self.client):
            raise MeterConfigError(
                f'client must be a glob string on client ids (like "ci-*"), got {self.client!r}'
            )
        if (
            self.availability is None
            and self.latency_p95_ms is None
            and (self.latency_p99_ms is None)
        ):
            raise MeterConfigError(
                f"objective for tool {self.tool!r}: set availability, latency_p95_ms or "
                "latency_p99_ms"
            )
        if self.availability is not None and not _number(self.availability, 0.0, 1.0):
            raise MeterConfigError(
                f"availability must be between 0 and 1, got {self.availability!r}"
            )
        for name in ("latency_p95_ms", "latency_p99_ms"):
            value = getattr(self, name)
            if value is not None and not _number(value, 0.0, None):
                raise MeterConfigError(f"{name} must be a positive number, got {value!r}")
        parse_period(self.period)

    def targets(self) -> list[SloTarget]:
        """The targets this entry sets, availability first."""
        period = parse_period(self.period)
        out = []
        if self.availability is not None:
            out.append(SloTarget(tool=self.tool, server=self.server, kind="availability",
                                 target=float(self.availability), threshold_ms=None,
                                 period_s=period, client=self.client))  # fmt: skip
        for share, threshold in ((0.95, self.latency_p95_ms), (0.99, self.latency_p99_ms)):
            if threshold is not None:
                out.append(SloTarget(tool=self.tool, server=self.server, kind="latency",
                                     target=share, threshold_ms=float(threshold),
                                     period_s=period, client=self.client))  # fmt: skip
        return out


def _number(value: Any, low: float, high: float | None) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return low < value and (high is None or value < high)


def objectives_from_data(data: Any) -> list[Objective]:
    """Objectives from parsed YAML/JSON: ``{"objectives": [{…}, …]}``.

    Raises:
        MeterConfigError: the shape or a value is wrong (naming the entry).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("objectives"), list):
        raise MeterConfigError("the SLO file needs a list under 'objectives'")
    out = []
    for i, entry in enumerate(data["objectives"]):
        if not isinstance(entry, Mapping):
            raise MeterConfigError(f"objectives[{i}] must be a mapping")
        unknown = set(entry) - _KEYS
        if unknown:
            raise MeterConfigError(f"objectives[{i}]: unknown keys {sorted(unknown)}")
        try:
            out.append(Objective(**{str(k): v for k, v in entry.items()}))
        except MeterConfigError as exc:
            raise MeterConfigError(f"objectives[{i}]: {exc.message}") from exc
    return out


def load_objectives(path: str | Path = DEFAULT_SLO_FILE) -> list[Objective]:
    """Read objectives from a YAML file.

    Raises:
        MeterConfigError: the file is missing, not YAML, or not valid objectives.
    """
    import yaml  # only for the command line and the watcher

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MeterConfigError(f"cannot read SLO file {str(path)!r}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MeterConfigError(f"SLO file {str(path)!r} is not YAML: {exc}") from exc
    return objectives_from_data(data)
