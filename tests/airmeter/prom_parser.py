"""A strict parser of the Prometheus text exposition format 0.0.4, for tests.

Rejects what a real scraper would: samples before their TYPE, a family split in two, bad
metric or label names, bad escapes, unparsable values, histograms whose buckets are not
cumulative or lack ``+Inf`` equal to ``_count``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


class ExpositionError(ValueError):
    """The text is not valid exposition format; carries the line number."""

    def __init__(self, line_no: int, message: str) -> None:
        super().__init__(f"line {line_no}: {message}")
        self.line_no = line_no


@dataclass
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Family:
    name: str
    type: str = "untyped"
    help: str | None = None
    samples: list[Sample] = field(default_factory=list)


def _value(text: str, line_no: int) -> float:
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ExpositionError(line_no, f"bad value {text!r}") from None


def _parse_labels(text: str, pos: int, line_no: int) -> tuple[dict[str, str], int]:
    labels: dict[str, str] = {}
    pos += 1  # '{'
    while True:
        if text[pos] == "}":
            return labels, pos + 1
        match = _LABEL.match(text, pos)
        if match is None:
            raise ExpositionError(line_no, f"bad label name at {pos}")
        name = match.group()
        pos = match.end()
        if text[pos : pos + 2] != '="':
            raise ExpositionError(line_no, 'expected =" after label name')
        pos += 2
        chars: list[str] = []
        while True:
            if pos >= len(text):
                raise ExpositionError(line_no, "unterminated label value")
            ch = text[pos]
            if ch == "\\":
                escaped = text[pos + 1 : pos + 2]
                if escaped not in ("\\", '"', "n"):
                    raise ExpositionError(line_no, f"bad escape \\{escaped}")
                chars.append("\n" if escaped == "n" else escaped)
                pos += 2
            elif ch == '"':
                pos += 1
                break
            elif ch == "\n":
                raise ExpositionError(line_no, "raw newline in label value")
            else:
                chars.append(ch)
                pos += 1
        if name in labels:
            raise ExpositionError(line_no, f"duplicate label {name}")
        labels[name] = "".join(chars)
        if text[pos] == ",":
            pos += 1
        elif text[pos] != "}":
            raise ExpositionError(line_no, "expected , or } after label value")


def _family_of(name: str, families: dict[str, Family]) -> Family | None:
    if name in families:
        return families[name]
    for fam in families.values():
        if any(name == fam.name + s for s in _SUFFIXES.get(fam.type, ())):
            return fam
    return None


def _check_histogram(fam: Family) -> None:
    series: dict[tuple[tuple[str, str], ...], list[Sample]] = {}
    counts: dict[tuple[tuple[str, str], ...], float] = {}
    for s in fam.samples:
        key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        if s.name.endswith("_bucket"):
            if "le" not in s.labels:
                raise ExpositionError(0, f"{fam.name}: bucket without le")
            series.setdefault(key, []).append(s)
        elif s.name.endswith("_count"):
            counts[key] = s.value
    for key, buckets in series.items():
        bounds = [_value(b.labels["le"], 0) for b in buckets]
        if bounds != sorted(bounds) or bounds[-1] != math.inf:
            raise ExpositionError(0, f"{fam.name}{key}: buckets unsorted or no +Inf")
        values = [b.value for b in buckets]
        if values != sorted(values):
            raise ExpositionError(0, f"{fam.name}{key}: buckets not cumulative")
        if counts.get(key) != values[-1]:
            raise ExpositionError(0, f"{fam.name}{key}: +Inf bucket != _count")


def parse(text: str) -> dict[str, Family]:
    """Parse and validate exposition text; families by name."""
    if text and not text.endswith("\n"):
        raise ExpositionError(0, "text must end with a newline")
    families: dict[str, Family] = {}
    closed: set[str] = set()
    current: str | None = None
    for line_no, line in enumerate(text.split("\n")[:-1], start=1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not _NAME.fullmatch(name):
                    raise ExpositionError(line_no, f"bad metric name {name!r}")
                if name in closed:
                    raise ExpositionError(line_no, f"family {name} split")
                fam = families.setdefault(name, Family(name))
                if current is not None and current != name:
                    closed.add(current)
                current = name
                if parts[1] == "TYPE":
                    if len(parts) != 4 or parts[3] not in _TYPES:
                        raise ExpositionError(line_no, f"bad TYPE line {line!r}")
                    if fam.samples:
                        raise ExpositionError(line_no, "TYPE after samples")
                    fam.type = parts[3]
                else:
                    fam.help = parts[3] if len(parts) == 4 else ""
            continue
        match = _NAME.match(line)
        if match is None:
            raise ExpositionError(line_no, f"bad sample line {line!r}")
        name, pos = match.group(), match.end()
        labels: dict[str, str] = {}
        if pos < len(line) and line[pos] == "{":
            labels, pos = _parse_labels(line, pos, line_no)
        rest = line[pos:].split(" ")
        if len(rest) not in (2, 3) or rest[0] != "":
            raise ExpositionError(line_no, f"bad sample line {line!r}")
        value = _value(rest[1], line_no)
        if len(rest) == 3 and not rest[2].lstrip("-").isdigit():
            raise ExpositionError(line_no, "bad timestamp")
        sample_family = _family_of(name, families)
        if sample_family is None:
            sample_family = families.setdefault(name, Family(name))
        if sample_family.name in closed:
            raise ExpositionError(line_no, f"family {sample_family.name} split")
        if current is not None and current != sample_family.name:
            closed.add(current)
        current = sample_family.name
        sample_family.samples.append(Sample(name, labels, value))
    for fam in families.values():
        if fam.type == "histogram":
            _check_histogram(fam)
    return families
