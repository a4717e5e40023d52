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
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if _NAME.fullmatch(value) and ("_" in value or value == "HOME"):
                    names.add(value)
        names -= own
    return names


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
    code, doc = _code_names(), _doc_names()
    assert "AIR_DATA_DIR" in code  # the extraction works
    assert "OTEL_SDK_DISABLED" in code
    assert sorted(code - doc) == [], "read by the code, missing from docs/settings.md"
    assert sorted(doc - code) == [], "in docs/settings.md, read by no settings module"


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
    assert found == []
