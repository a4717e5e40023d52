"""docs/settings.md and the code agree on the environment variables air reads.

Each package reads its variables in its ``settings.py`` (and airmeter's OpenTelemetry ones in
``otel_settings.py``); the doc's table lists every one of them, and nothing else in the packages
reads ``os.environ``/``os.getenv`` for a single variable.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("aircli", "aircore", "airgateway", "airhttp", "airmeter", "airstore", "dashboard")
SETTINGS = frozenset(
    {
        "aircli/settings.py",
        "aircore/settings.py",
        "airgateway/settings.py",
        "airmeter/settings.py",
        "airmeter/otel_settings.py",
        "airstore/settings.py",
    }
)
_NAME = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*")


def _code_names() -> set[str]:
    """Every variable name a settings module spells out as a string literal."""
    names: set[str] = set()
    for rel in SETTINGS:
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}  # `__all__` entries
        parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in parts:
                continue  # an f-string's literal parts are not names: see _code_patterns
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if _NAME.fullmatch(value) and ("_" in value or value == "HOME"):
                    names.add(value)
        names -= own
    return names


def _code_patterns() -> set[str]:
    """The names a settings module builds with an f-string (``f"OTEL_EXPORTER_OTLP_{signal}_…"``),
    as regular expressions whose placeholders stand for one upper-case word."""
    patterns: set[str] = set()
    for rel in SETTINGS:
        for node in ast.walk(ast.parse((ROOT / rel).read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):
                parts = [
                    re.escape(v.value) if isinstance(v, ast.Constant) else "[A-Z0-9]+"
                    for v in node.values
                ]
                literal = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
                if re.fullmatch(r"(AIR|OTEL)_[A-Z0-9_]*", literal):
                    patterns.add("".join(parts))
    return patterns


def _doc_names() -> set[str]:
    """The variables of docs/settings.md's table that air itself reads."""
    names: set[str] = set()
    for line in (ROOT / "docs" / "settings.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 2 or cells[1].startswith("("):
            continue  # not a row, or read by a third party (the OTLP exporters)
        names.update(n for n in re.findall(r"`([^`]+)`", cells[0]) if _NAME.fullmatch(n))
    return names


def test_every_variable_the_code_reads_is_in_the_settings_table_and_back() -> None:
    code, patterns, doc = _code_names(), _code_patterns(), _doc_names()
    assert "AIR_DATA_DIR" in code  # the extraction works
    assert "OTEL_SDK_DISABLED" in code
    assert "OTEL_EXPORTER_OTLP_[A-Z0-9]+_PROTOCOL" in patterns
    assert sorted(code - doc) == [], "read by the code, missing from docs/settings.md"
    unmatched = [p for p in sorted(patterns) if not any(re.fullmatch(p, n) for n in doc)]
    assert unmatched == [], "built by the code, no variable of docs/settings.md matches"
    extra = [n for n in doc - code if not any(re.fullmatch(p, n) for p in patterns)]
    assert sorted(extra) == [], "in docs/settings.md, read by no settings module"


def _looked_up_names(tree: ast.AST) -> list[tuple[int, str]]:
    """``AIR_…``/``OTEL_…`` names looked up in a mapping: ``env.get("AIR_X")``, ``env["AIR_X"]``,
    ``"AIR_X" in env`` — an environment read by another name than ``os.environ``."""
    found: list[tuple[int, str]] = []

    def name_of(node: ast.AST) -> str | None:
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and re.fullmatch(r"(AIR|OTEL)_[A-Z0-9_]+", node.value):
            return str(node.value)
        return None

    for node in ast.walk(tree):
        keys: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "pop", "setdefault") and node.args:
                keys.append(node.args[0])
        elif isinstance(node, ast.Subscript):
            keys.append(node.slice)
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
        ):
            keys.append(node.left)
        found += [(node.lineno, n) for n in map(name_of, keys) if n is not None]
    return found


def _single_reads(tree: ast.AST) -> list[int]:
    """Lines that read one variable: ``os.environ.get``, ``os.environ[...]``, ``os.getenv``."""

    def is_os(node: ast.AST, attr: str) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == attr
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        )

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if (func.attr == "get" and is_os(func.value, "environ")) or is_os(func, "getenv"):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and is_os(node.value, "environ"):
            lines.append(node.lineno)
    return lines


def test_only_the_settings_modules_read_a_variable() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in SETTINGS:
                tree = ast.parse(path.read_text(encoding="utf-8"))
                found += [f"{rel}:{line}" for line in _single_reads(tree)]
                found += [f"{rel}:{line} {name}" for line, name in _looked_up_names(tree)]
    assert found == []
