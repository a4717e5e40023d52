"""Vocabulary of the tool-definition standard: a :class:`DefinitionFile` as read, the gate's
:class:`Problem` and JSON aliases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DefinitionFile", "JSONObject", "Problem"]

JSONObject = dict[str, Any]
"""A decoded JSON object (a schema, a ``_meta`` mapping, a manifest entry)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """One violation found by the quality gate.

    ``file`` is the definition file (or the server target) the problem is in, ``field`` a dotted
    path inside it (``description.when_to_use``, ``parameters_schema.properties.q``) or ``-``
    when the problem concerns the whole file, and ``message`` says what is wrong in words.
    """

    file: str
    field: str
    message: str
    rule: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"

    def to_json(self) -> JSONObject:
        """The machine form used by ``air check --format json``."""
        return {"file": self.file, "field": self.field, "message": self.message, "rule": self.rule}


@dataclass(frozen=True, slots=True, kw_only=True)
class DefinitionFile:
    """One definition file as read from disk: its decoded mapping, or why it has none."""

    path: Path
    data: Mapping[str, Any] | None
    error: str | None = None
    folder: str | None = None
    """The file's folder relative to the definitions directory (``""`` at its root; ``None``
    when the file was not read from a definitions directory)."""

    @property
    def label(self) -> str:
        """The path as shown in problem lines."""
        return str(self.path)

    @property
    def stem(self) -> str:
        """The file name without its suffix: the tool name the file is looked up by."""
        return self.path.stem
