"""The rename map: adopting the standard's tool names without breaking clients for a release.

``air migrate --rename`` proposes a standard name for each definition whose name breaks the
naming rules, renames the definition (its ``name:`` and its file), and records ``old: new`` in
``renames.yml`` at the root of the definitions directory::

    # old tool name: new tool name; the old one stays a deprecated alias for one release
    renames:
      fetch_page: web_page_fetch

A server with ``definitions=`` reads the map at start. A tool still registered under its old
name (the handler was not renamed yet) is served under the new one. Either way the old name
stays a **deprecated alias**: a call by it runs the tool, is metered under the new name, and
its result carries :data:`DEPRECATED_META_KEY` in ``_meta``
(``{"name": old, "use": new, "message": …}``); the server logs a warning once per alias.
``tools/list`` shows the new name only; the tool's ``_meta`` lists its old names under
:data:`ALIASES_META_KEY`, from which ``air gateway`` keeps the alias too. Delete an entry in the
release after the rename: the old name is then unknown (``-32602``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import yaml

from aircore.definitions.errors import ToolDefinitionError
from aircore.definitions.naming import action_verb
from aircore.definitions.types import Problem
from aircore.protocol.renamed import ALIASES_META_KEY, DEPRECATED_META_KEY, deprecation_notice

__all__ = [
    "ALIASES_META_KEY",
    "DEPRECATED_META_KEY",
    "RENAMES_FILE_NAME",
    "deprecation_notice",
    "load_renames",
    "propose_name",
    "write_renames",
]

RENAMES_FILE_NAME: Final = "renames.yml"
"""The rename map at the root of a definitions directory."""
MAX_RENAMES: Final = 1024
"""Entries a rename map holds at most."""

_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_HEADER: Final = (
    "# Written by `air migrate --rename`: old tool name -> new tool name.\n"
    "# A server with definitions= (and air gateway in front of it) keeps each old name as a\n"
    "# deprecated alias: calls by it work, are metered under the new name and get a\n"
    "# deprecation notice. Delete an entry in the release after the rename.\n"
)


def _problem(path: Path, message: str) -> ToolDefinitionError:
    return ToolDefinitionError([Problem(file=str(path), field="renames", message=message,
                                        rule="renames")])  # fmt: skip


def load_renames(directory: str | Path) -> dict[str, str]:
    """The rename map of a definitions directory (empty when it has no ``renames.yml``).

    Raises:
        ToolDefinitionError: the file is unreadable or not a map of tool names to tool names
            (a name renamed twice, a chain, more than :data:`MAX_RENAMES` entries).
    """
    path = Path(directory) / RENAMES_FILE_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _problem(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _problem(path, f"not YAML: {exc}") from exc
    entries = data.get("renames") if isinstance(data, Mapping) else None
    if entries is None:
        return {}
    if not isinstance(entries, Mapping) or len(entries) > MAX_RENAMES:
        raise _problem(path, f"renames must map old tool names to new ones (at most "
                             f"{MAX_RENAMES})")  # fmt: skip
    out: dict[str, str] = {}
    for old, new in entries.items():
        if not (isinstance(old, str) and isinstance(new, str)
                and _NAME.match(old) and _NAME.match(new)) or old == new:  # fmt: skip
            raise _problem(path, f"{old!r}: {new!r} is not a rename of one tool name to another")
        out[old] = new
    chained = sorted(set(out) & set(out.values()))
    if chained:
        raise _problem(path, f"{chained[0]!r} is both an old and a new name: map each old name "
                             "to the final one")  # fmt: skip
    return out


def write_renames(directory: str | Path, renames: Mapping[str, str]) -> Path:
    """Merge ``renames`` into the directory's ``renames.yml`` (written whole; earlier entries
    kept) and return its path.

    Raises:
        ToolDefinitionError: the existing map is invalid.
        OSError: it cannot be written.
    """
    path = Path(directory) / RENAMES_FILE_NAME
    merged = {**load_renames(directory), **renames}
    body = yaml.safe_dump({"renames": dict(sorted(merged.items()))}, allow_unicode=True,
                          sort_keys=False)  # fmt: skip
    part = path.with_name(f".{RENAMES_FILE_NAME}.part")  # replaced whole: never half a map
    part.write_text(_HEADER + body, encoding="utf-8")
    os.replace(part, path)
    return path


def _words(name: str) -> list[str]:
    """A name's words, lower case: ``fetchPage`` and ``fetch-page`` → ``fetch``, ``page``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def propose_name(name: str, category_key: str, *, structure: str,
                 prefixes: Mapping[str, str]) -> str:  # fmt: skip
    """A name in the project's structure for a tool named ``name``: the author reviews it.

    ``category_service_action``: the category's prefix, the other words joined as the service,
    the action verb last (``fetch_page`` in ``web`` → ``web_page_fetch``);
    ``action_object``: the verb first (``page_fetch`` → ``fetch_page``).
    """
    words = _words(name)
    verb = action_verb("_".join(words)) or (words[0] if words else "run")
    rest = [w for w in words if w != verb and (w[:-1] if w.endswith("s") else w) != verb]
    if structure == "action_object":
        return "_".join([verb, *rest]) if rest else f"{verb}_item"
    prefix = prefixes.get(category_key, category_key)
    service = "".join(w for w in rest if w != prefix) or "tool"
    return f"{prefix}_{service}_{verb}"
