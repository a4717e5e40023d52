"""Tool names beyond the regex: the ``category_service_action`` structure, names that look like
legacy interface IDs, and the behaviour hints a name's action verb suggests.

The standard names a tool ``{category}_{service}_{action}`` (``smp_exchange_inquiry``): three
snake_case parts, the first the category's prefix. Projects that follow the MCP ecosystem's
``action_object`` convention (``get_user``, ``search_notes``) say so in ``air-check.yml``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DESTRUCTIVE_VERBS",
    "NAME_STRUCTURES",
    "READ_VERBS",
    "Hints",
    "NameStructure",
    "action_verb",
    "infer_hints",
    "interface_id_reason",
    "structure_problem",
]

NameStructure = Literal["category_service_action", "action_object", "none"]
NAME_STRUCTURES: tuple[NameStructure, ...] = ("category_service_action", "action_object", "none")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


READ_VERBS: frozenset[str] = _words(
    # lookups (조회): read-only, idempotent
    "get list search find lookup read show view query inquiry inquire fetch retrieve describe "
    "check count browse select detail details status info stat stats history export download "
    "ping health echo version "
    # pure computations and transforms: no state changes
    "convert transform format parse encode decode calculate calc compute estimate summarize "
    "analyze analyse validate verify compare translate render preview explain classify "
    "extract match rank score plan generate greet"
)
"""Actions that only read or compute: read-only, not destructive, idempotent."""

DESTRUCTIVE_VERBS: frozenset[str] = _words(
    # removal
    "delete remove drop purge destroy erase truncate wipe clear reset revoke cancel terminate "
    "kill disable expire archive "
    # registration, sending, processing (등록·발송·처리): conservatively destructive
    "create add insert register save store put post update modify edit set patch upsert write "
    "send notify publish submit process approve reject transfer pay charge refund issue execute "
    "run deploy apply import upload move rename assign grant confirm book reserve order "
    "sync"
)
"""Actions that change state: not read-only, destructive, not idempotent (the seed's
conservative default for 등록·발송·처리 tools)."""

_INTERFACE_PREFIXES = frozenset({"mci", "eims", "eai", "esb", "ifid"})
# an interface code: digits alone (0042) or a short letter code and digits (smp0012, if001)
_CODE = re.compile(r"^(?:\d{3,}|[a-z]{1,5}\d{3,})$")
_TECH_TOKENS = _words(
    "sha224 sha256 sha384 sha512 base64 base32 iso8601 iso3166 iso4217 x509 utf16 utf32 int32 "
    "int64 float32 float64 rfc822 rfc2822 rfc3339 rfc5322 top100 top1000"
)


@dataclass(frozen=True, slots=True)
class Hints:
    """Behaviour hints inferred for a tool, and from which verb (``None``: none recognized)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    verb: str | None


def action_verb(name: str) -> str | None:
    """The known action verb of a tool name: the last part first (``…_inquiry``), then the first
    (``get_…``), then any other part; ``None`` when no part is a known verb."""
    parts = name.lower().split("_")
    known = READ_VERBS | DESTRUCTIVE_VERBS
    for part in (parts[-1], parts[0], *parts[1:-1]):
        if part in known:
            return part
        stem = part[:-1] if part.endswith("s") else part  # "fails", "gets"
        if stem in known:
            return stem
    return None


def infer_hints(name: str) -> Hints:
    """Conservative behaviour hints from the action verb in a tool name.

    Read and compute verbs (get, list, search, convert…) give read-only, not destructive,
    idempotent; removal, registration, sending and processing verbs (delete, remove, create,
    send…) give not read-only, destructive, not idempotent. An unknown verb gets the cautious
    write hints too: a tool is never claimed read-only on a guess.

    Args:
        name: the tool name.

    Returns:
        The hints and the verb they came from.
    """
    verb = action_verb(name)
    if verb is not None and verb in READ_VERBS:
        return Hints(read_only=True, destructive=False, idempotent=True, verb=verb)
    return Hints(read_only=False, destructive=True, idempotent=False, verb=verb)


def interface_id_reason(name: str, legacy_interface_id: str | None = None) -> str | None:
    """Why a tool name looks like a legacy interface ID (MCI/EIMS), or ``None``.

    Flags a part that is a number code (``0042``, ``smp0012``, ``if001``; common technical
    tokens such as ``sha256`` or ``iso8601`` excepted), a part that is a legacy interface prefix
    (``mci``, ``eims``, ``eai``, ``esb``, ``ifid``) and a name that contains the definition's own
    ``legacy_interface_id`` once separators and case are ignored.
    """
    parts = name.split("_")
    numbered = [p for p in parts if _CODE.match(p) and p not in _TECH_TOKENS]
    if numbered:
        return f"part {numbered[0]!r} is a number code"
    prefixed = [p for p in parts if p in _INTERFACE_PREFIXES]
    if prefixed:
        return f"part {prefixed[0]!r} is a legacy interface prefix"
    if legacy_interface_id:
        flat_id = re.sub(r"[^a-z0-9]", "", legacy_interface_id.lower())
        if flat_id and flat_id in name.replace("_", ""):
            return f"it contains the legacy interface id {legacy_interface_id!r}"
    return None


def structure_problem(
    name: str,
    category_key: str,
    *,
    structure: NameStructure,
    prefixes: Mapping[str, str],
) -> str | None:
    """Why ``name`` breaks the project's name structure, or ``None`` when it follows it.

    Args:
        name: a tool name that already matches the name regex.
        category_key: the definition's category key.
        structure: ``category_service_action`` (three parts, the first the category prefix),
            ``action_object`` (the first part a known action verb) or ``none``.
        prefixes: category key → name prefix (``air-check.yml`` ``category_prefixes``); a
            category without an entry is its own prefix.

    Returns:
        The reason, or ``None``.
    """
    parts = name.split("_")
    if structure == "category_service_action":
        prefix = prefixes.get(category_key, category_key)
        if len(parts) != 3 or not all(parts):
            return (
                f"must be category_service_action: three parts, e.g. {prefix}_service_action "
                f"(found {len(parts)} part(s))"
            )
        if parts[0] != prefix:
            return f"must start with its category prefix {prefix!r} ({prefix}_service_action)"
        return None
    if structure == "action_object":
        first = parts[0]
        stem = first[:-1] if first.endswith("s") else first
        verbs = READ_VERBS | DESTRUCTIVE_VERBS
        if first not in verbs and stem not in verbs:
            return f"must start with an action verb (action_object), found {first!r}"
        return None
    return None
