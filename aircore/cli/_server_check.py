"""Server mode of ``air check`` and ``air manifest``: the gate and manifest of a live server."""

from __future__ import annotations

from typing import Any

from aircore.cli._target import load_target
from aircore.definitions import DefinitionError, Problem

__all__ = ["check_server_target", "server_manifest"]


def check_server_target(target: str) -> tuple[int, list[Problem]]:
    """Every rule, pairing included, on the server a target names.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.

    Returns:
        ``(number of definitions checked, problems)``.

    Raises:
        DefinitionError: the target cannot be loaded or is not an aircore server.
    """
    server = load_target(target)
    raise DefinitionError(
        [Problem(file=target, field="-", rule="target",
                 message=f"{type(server).__name__} is not an aircore server")]
    )  # fmt: skip


def server_manifest(target: str) -> dict[str, Any]:
    """The manifest of the server a target names (its ``tools/list`` metadata).

    Raises:
        DefinitionError: the target cannot be loaded or is not an aircore server.
    """
    check_server_target(target)
    return {}
