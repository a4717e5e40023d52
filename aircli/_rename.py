"""``air migrate --rename``: adopt the standard's tool names, keeping the old ones for a release.

For each definition in the directory whose name breaks a naming rule of the gate (``name``,
``name-structure``, ``interface-id``), a name in the project's structure is proposed
(:func:`aircore.definitions.renames.propose_name`), the definition is renamed (its ``name:``
line and its file, in the same folder), and ``old: new`` is added to ``renames.yml``. A server
with ``definitions=`` then serves the tool under the new name even before its handler is
renamed, and keeps the old name as a deprecated alias (so does ``air gateway`` in front of it):
see :mod:`aircore.definitions.renames`. A proposal that would take an existing name is skipped
and said. Nothing else in a file changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from aircore.definitions import load_gate_config, read_definition_files
from aircore.definitions.renames import load_renames, propose_name, write_renames
from aircore.definitions.rules import check_files

__all__ = ["RENAME_RULES", "RenameResult", "rename_definitions"]

RENAME_RULES = frozenset({"name", "name-structure", "interface-id"})
"""The gate's rules a rename answers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameResult:
    """What ``air migrate --rename`` did."""

    renamed: dict[str, str]
    """Old name → new name, for the definitions renamed now."""
    skipped: tuple[str, ...]
    """Why some could not be renamed (one line each)."""
    map_file: Path | None
    """The rename map written (``None``: nothing to rename)."""


def rename_definitions(directory: str | Path) -> RenameResult:
    """Rename every definition in ``directory`` whose name breaks a naming rule.

    Raises:
        ToolDefinitionError: the directory, its ``air-check.yml`` or its ``renames.yml`` is
            invalid.
        OSError: a file cannot be written.
    """
    root = Path(directory)
    config = load_gate_config(root)
    files = read_definition_files(root)
    load_renames(root)  # an invalid map stops here, before any file moves
    flagged = {p.file for p in check_files(files, config=config) if p.rule in RENAME_RULES}
    taken = {str(f.data.get("name")) for f in files if f.data is not None}
    renamed: dict[str, str] = {}
    skipped: list[str] = []
    for file in files:
        data = file.data
        if file.label not in flagged or data is None:
            continue
        old, category = data.get("name"), data.get("category_key")
        if not isinstance(old, str) or not isinstance(category, str):
            continue
        new = propose_name(old, category, structure=config.name_structure,
                           prefixes=config.category_prefixes)  # fmt: skip
        target = file.path.with_name(f"{new}{file.path.suffix}")
        if new in taken or target.exists():
            skipped.append(f"{old}: the proposed name {new!r} is taken; rename it by hand")
            continue
        text = file.path.read_text(encoding="utf-8")
        line = re.compile(rf"^name:[ \t]*(['\"]?){re.escape(old)}\1[ \t]*$", re.MULTILINE)
        if not line.search(text):
            skipped.append(f"{old}: {file.path} has no plain `name: {old}` line; rename it by "
                           "hand")  # fmt: skip
            continue
        with target.open("x", encoding="utf-8") as out:  # never over another file
            out.write(line.sub(f"name: {new}", text, count=1))
        file.path.unlink()
        taken.add(new)
        renamed[old] = new
    map_file = write_renames(root, renamed) if renamed else None
    return RenameResult(renamed=renamed, skipped=tuple(skipped), map_file=map_file)
