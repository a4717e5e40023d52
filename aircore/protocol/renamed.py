"""What a renamed tool's deprecated alias looks like on the wire (keys light enough for the
gateway to read; the rename map itself is :mod:`aircore.definitions.renames`)."""

from __future__ import annotations

from typing import Any, Final

__all__ = ["ALIASES_META_KEY", "DEPRECATED_META_KEY", "deprecation_notice"]

ALIASES_META_KEY: Final = "io.airmcp/deprecatedAliases"
"""A tool's ``_meta`` key listing its old names (deprecated aliases)."""
DEPRECATED_META_KEY: Final = "io.airmcp/deprecated"
"""A result's ``_meta`` key when the call used a deprecated alias."""


def deprecation_notice(old: str, new: str) -> dict[str, Any]:
    """The ``_meta`` value a call by a deprecated alias gets."""
    return {
        "name": old,
        "use": new,
        "message": f"tool {old!r} is deprecated: it was renamed {new!r}; the old name works "
        "for one release",
    }
