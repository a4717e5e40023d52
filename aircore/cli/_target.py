"""Load a server object from a CLI target: ``path/to/file.py[:name]`` or ``pkg.module[:name]``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from aircore.definitions import DefinitionError, Problem

__all__ = ["DEFAULT_ATTRIBUTE", "load_target"]

DEFAULT_ATTRIBUTE = "server"
"""The attribute looked up when the target names none."""


def _fail(target: str, message: str) -> DefinitionError:
    return DefinitionError([Problem(file=target, field="-", message=message, rule="target")])


def load_target(target: str) -> object:
    """Import the module a target names and return its server attribute.

    A file path is imported under a private module name with its directory on ``sys.path`` (so
    the file's own sibling imports work).

    Args:
        target: ``file.py[:name]`` or ``package.module[:name]``; ``name`` defaults to ``server``.

    Returns:
        The attribute's value.

    Raises:
        DefinitionError: the file or module cannot be imported, or has no such attribute.
    """
    spec, _, attr = target.partition(":")
    attr = attr or DEFAULT_ATTRIBUTE
    if spec.endswith(".py") or "/" in spec or Path(spec).is_file():
        path = Path(spec).resolve()
        if not path.is_file():
            raise _fail(target, f"file not found: {spec}")
        name = f"_air_target_{abs(hash(str(path)))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise _fail(target, f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        parent = str(path.parent)
        if parent not in sys.path:
            sys.path.insert(0, parent)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise _fail(target, f"importing {spec} failed: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(spec)
        except Exception as exc:
            raise _fail(target, f"importing {spec} failed: {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, attr):
        raise _fail(target, f"{spec} has no attribute {attr!r}")
    return getattr(module, attr)
