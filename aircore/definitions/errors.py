"""Errors of the tool-definition standard.

Hierarchy::

    ValueError
    └── DefinitionError            a definition (or the pairing of tools and definitions) is invalid
        └── DefinitionNotFoundError a registered tool has no definition file
"""

from __future__ import annotations

from collections.abc import Sequence

from aircore.definitions.types import Problem

__all__ = ["DefinitionError", "DefinitionNotFoundError"]


class DefinitionError(ValueError):
    """One or more tool definitions break the standard; ``problems`` lists each violation.

    Raised at server start (and by :func:`aircore.definitions.load_definitions`) so that a server
    never starts with tool metadata the quality gate would reject.
    """

    def __init__(self, problems: Sequence[Problem], *, summary: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        head = summary or f"{len(self.problems)} tool definition problem(s)"
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{head}:\n{lines}" if lines else head)


class DefinitionNotFoundError(DefinitionError):
    """A registered tool has no definition file in the definitions directory."""
