"""Errors of the tool-definition standard.

Hierarchy (``aircore.errors`` draws the rest of the tree)::

    AirError
    └── DefinitionError                 aircore: a bad tool/resource/server definition
        └── ToolDefinitionError         one or more tool definitions break the standard
            └── DefinitionNotFoundError a registered tool has no definition file
"""

from __future__ import annotations

from collections.abc import Sequence

from aircore.definitions.types import Problem
from aircore.errors import DefinitionError

__all__ = ["DefinitionNotFoundError", "ToolDefinitionError"]


class ToolDefinitionError(DefinitionError):
    """One or more tool definitions break the standard; ``problems`` lists each violation.

    Raised at server start (and by :func:`aircore.definitions.load_definitions`) so that a server
    never starts with tool metadata the quality gate would reject. The message lists every
    problem as ``file: field: message``.
    """

    def __init__(self, problems: Sequence[Problem], *, summary: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        head = summary or f"{len(self.problems)} tool definition problem(s)"
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{head}:\n{lines}" if lines else head)


class DefinitionNotFoundError(ToolDefinitionError):
    """A registered tool has no definition file in the definitions directory."""
