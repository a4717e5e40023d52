"""``air migrate --rename``: adopt the standard's tool names, keeping the old ones for a release.

For each definition in the directory whose name breaks a naming rule of the gate (``name``,
``name-structure``, ``interface-id``), a name in the project's structure is proposed
(:func:`aircore.definitions.renames.propose_name`), the definition is renamed (its ``name:``
line and its file, in the same folder), and ``old: new`` is added to ``renames.yml``. A server
with ``definitions=`` then serves the tool under the new name even before its handler is
renamed, and keeps the old name as a deprecated alias (so does ``air gateway`` in front of it):
see :mod:`aircore.definitions.renames`. A proposal that would take an existing name is skipped
and said. Nothing else in a file changes.

Crash-safe: every new file is written first (removed again if one fails), then the map, then
the old files are removed; a run cut short after the map is finished by running it again (a new
file holding exactly the renamed text is taken as that run's, not as a name already taken).
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
    planned: list[tuple[Path, Path, str]] = []  # source, target, the target's text
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
        text = file.path.read_text(encoding="utf-8")
        line = re.compile(rf"^name:[ \t]*(['\"]?){re.escape(old)}\1[ \t]*$", re.MULTILINE)
        if not line.search(text):
            skipped.append(f"{old}: {file.path} has no plain `name: {old}` line; rename it by "
                           "hand")  # fmt: skip
            continue
        moved = line.sub(f"name: {new}", text, count=1)
        cut = _left_by_a_cut_run(target, moved)  # a run cut short wrote it: finish that one
        if new in renamed.values() or (not cut and (new in taken or target.exists())):
            skipped.append(f"{old}: the proposed name {new!r} is taken; rename it by hand")
            continue
        taken.add(new)
        renamed[old] = new
        planned.append((file.path, target, moved))
    if not renamed:
        return RenameResult(renamed=renamed, skipped=tuple(skipped), map_file=None)
    # crash-safe order: every new file, then the map, then the old files go. Cut short before
    # the map, the old names are still the tools' names; after it, the map names every rename.
    _write_targets(planned)
    map_file = write_renames(root, renamed)
    for source, _target, _text in planned:
        source.unlink(missing_ok=True)
    return RenameResult(renamed=renamed, skipped=tuple(skipped), map_file=map_file)


def _left_by_a_cut_run(target: Path, text: str) -> bool:
    """Whether ``target`` holds exactly ``text``: written by a run that stopped before it
    removed the old file (so this rename is finished, not refused as taken)."""
    try:
        return target.read_text(encoding="utf-8") == text
    except OSError:
        return False


def _write_targets(planned: list[tuple[Path, Path, str]]) -> None:
    """Write each new definition file (never over another file); on a failure, remove the
    ones this call wrote and raise it."""
    written: list[Path] = []
    try:
        for _source, target, text in planned:
            if target.exists() and _left_by_a_cut_run(target, text):
                continue  # a run cut short wrote it
            with target.open("x", encoding="utf-8") as out:
                written.append(target)
                out.write(text)
    except BaseException:
        for target in written:
            target.unlink(missing_ok=True)
        raise
