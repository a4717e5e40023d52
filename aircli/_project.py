"""Find a project's server and definitions: what ``air check``, ``air manifest`` and
``air migrate`` use when no target is named, and what the build hook checks.

In order: ``[tool.air]`` in ``pyproject.toml`` (``server = "pkg.module:server"``,
``definitions = "tool-definitions"``); else ``./server.py`` when it exists; else the
definitions directory alone (``./tool-definitions``, directory mode).
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from aircore.definitions import DEFAULT_DEFINITIONS_DIR, Problem, ToolDefinitionError

__all__ = ["PYPROJECT", "SERVER_FILE", "Project", "find_project"]

PYPROJECT = "pyproject.toml"
SERVER_FILE = "server.py"


@dataclass(frozen=True, slots=True, kw_only=True)
class Project:
    """Where a project keeps its server and its definitions."""

    root: Path
    server: str | None
    """A server target (``pkg.module:server`` or a path to ``server.py``), ``None``: none."""
    definitions: Path
    """The definitions directory (used for pairing when the server names none)."""
    source: str
    """Where this was found, for messages: ``pyproject.toml [tool.air]``, ``./server.py``…"""

    def import_paths(self) -> None:
        """Make ``pkg.module`` targets importable: the root (and ``src/``) go on ``sys.path``."""
        for path in (self.root / "src", self.root):
            if path.is_dir() and str(path) not in sys.path:
                sys.path.insert(0, str(path))


def _config(pyproject: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problem = Problem(file=str(pyproject), field="-", message=str(exc), rule="config")
        raise ToolDefinitionError([problem], summary=f"cannot read {pyproject}") from exc
    tool = data.get("tool")
    air = tool.get("air") if isinstance(tool, dict) else None
    if air is None:
        return {}
    problems = [
        Problem(file=str(pyproject), field=f"tool.air.{key}", message=message, rule="config")
        for key, message in _config_errors(air)
    ]
    if problems:
        raise ToolDefinitionError(problems, summary=f"bad [tool.air] in {pyproject}")
    assert isinstance(air, dict)
    return air


def _config_errors(air: object) -> list[tuple[str, str]]:
    if not isinstance(air, dict):
        return [("-", "must be a table")]
    errors = [(str(k), "unknown key") for k in air if k not in ("server", "definitions")]
    for key in ("server", "definitions"):
        value = air.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            errors.append((key, "must be a non-empty string"))
    return errors


def find_project(root: str | Path = ".") -> Project:
    """Find the server and definitions of the project in ``root``.

    Args:
        root: the project directory (the working directory by default).

    Returns:
        The project; ``server`` is ``None`` when there is neither ``[tool.air] server`` nor a
        ``server.py``.

    Raises:
        ToolDefinitionError: ``pyproject.toml`` cannot be read or its ``[tool.air]`` is wrong.
    """
    base = Path(root)
    pyproject = base / PYPROJECT
    air = _config(pyproject) if pyproject.is_file() else {}
    definitions = base / str(air.get("definitions") or DEFAULT_DEFINITIONS_DIR)
    server = air.get("server")
    if isinstance(server, str):
        target = server if not server.endswith(".py") else str(base / server)
        return Project(root=base, server=target, definitions=definitions,
                       source=f"{PYPROJECT} [tool.air]")  # fmt: skip
    if (base / SERVER_FILE).is_file():
        return Project(root=base, server=str(base / SERVER_FILE), definitions=definitions,
                       source=f"./{SERVER_FILE}")  # fmt: skip
    source = f"{PYPROJECT} [tool.air]" if air else "default"
    return Project(root=base, server=None, definitions=definitions, source=source)
