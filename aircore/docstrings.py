"""Parameter descriptions from a function's docstring (Google, NumPy and Sphinx styles).

Google::

    Args:
        query: what to look for; continuation lines
            are joined.
        limit (int): at most this many.

NumPy::

    Parameters
    ----------
    query : str
        what to look for.

Sphinx: ``:param query: what to look for``.

The parameter section leaves the description (its text now lives in each parameter's schema);
every other section (``Returns``, ``Raises`` …) stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_GOOGLE_HEADERS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "kwargs"}
)
_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")  # "Returns:" (Google)
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_GOOGLE_ITEM = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^\*{0,2}([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?([A-Za-z_]\w*)\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:[a-z]+")


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    """A docstring split into the tool's description and per-parameter descriptions."""

    description: str | None
    parameters: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    return " ".join(p.strip() for p in parts if p.strip())


def _google(lines: list[str], start: int) -> tuple[dict[str, str], int]:
    """Items of the Google section whose header is ``lines[start]``; ``(items, end)``."""
    out: dict[str, list[str]] = {}
    base = _indent(lines[start])
    item_indent: int | None = None
    current: str | None = None
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.strip() and _indent(line) <= base:
            break
        if line.strip():
            indent = _indent(line)
            match = _GOOGLE_ITEM.match(line.strip())
            if match and (item_indent is None or indent == item_indent):
                item_indent = indent
                current = match.group(1)
                out[current] = [match.group(2)]
            elif current is not None:
                out[current].append(line)
        i += 1
    return {k: _join(v) for k, v in out.items()}, i


def _numpy(lines: list[str], start: int) -> tuple[dict[str, str], int]:
    """Items of the NumPy section titled ``lines[start]`` (rule on the next line)."""
    out: dict[str, list[str]] = {}
    base = _indent(lines[start])
    current: list[str] | None = None
    i = start + 2
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1].strip()) and line.strip():
            break  # the next section's title
        if line.strip() and _indent(line) == base:
            match = _NUMPY_ITEM.match(line.strip())
            current = []
            if match:
                for name in match.group(1).split(","):
                    out[name.strip()] = current  # "x, y : int" shares one description
        elif current is not None:
            current.append(line)
        i += 1
    return {k: _join(v) for k, v in out.items()}, i


def _sphinx(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    out: dict[str, list[str]] = {}
    kept: list[str] = []
    current: list[str] | None = None
    for line in lines:
        match = _SPHINX_PARAM.match(line.strip())
        if match:
            current = out[match.group(1)] = [match.group(2)]
        elif current is not None and line.strip() and not _SPHINX_FIELD.match(line.strip()):
            current.append(line)
        else:
            current = None
            kept.append(line)
    return {k: _join(v) for k, v in out.items()}, kept


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a cleaned docstring (``inspect.getdoc``) into description and parameter texts.

    Args:
        doc: the docstring, or ``None``.

    Returns:
        The description without the parameter section, and ``{parameter: description}``.
    """
    if not doc:
        return ParsedDocstring(description=doc or None)
    lines = doc.splitlines()
    params: dict[str, str] = {}
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        header = _SECTION.match(line.strip())
        if header and header.group(1).lower() in _GOOGLE_HEADERS:
            found, i = _google(lines, i)
            params.update(found)
            continue
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.strip().lower() in _GOOGLE_HEADERS and _NUMPY_RULE.match(following):
            found, i = _numpy(lines, i)
            params.update(found)
            continue
        kept.append(line)
        i += 1
    sphinx, kept = _sphinx(kept)
    params.update(sphinx)
    params = {k: v for k, v in params.items() if v}
    text = "\n".join(kept).strip()
    text = re.sub(r"\n{3,}", "\n\n", text)
    return ParsedDocstring(description=text or None, parameters=params)
