"""The ``_meta`` keys of a defined tool, as the standard names them, and how to read them.

A definition's operational metadata travels in the tool's ``_meta`` (it costs the model no
prompt tokens) under the standard's camelCase names, identically in ``tools/list``, the
manifest and a gateway's registry:

| definition field | ``_meta`` key | present |
|---|---|---|
| ``version`` | ``version`` | always |
| ``category_key`` | ``categoryKey`` | always |
| ``example_queries`` | ``exampleQueries`` | always |
| ``display_description`` | ``displayDescription`` | always |
| ``tags`` | ``tags`` | when set |
| ``legacy_interface_id`` (or ``mci_service_id``) | ``legacyInterfaceId`` | when set |
| ``required_env_keys`` | ``requiredEnvKeys`` | when set |
| ``owner_org`` | ``ownerOrg`` | when set |
| ``timeout_ms`` | ``timeoutMillis`` | always (``null``: none; a server's: the effective one) |
| ``enabled`` | ``enabled`` | always |
| ``register`` | ``register`` | always |
| ``layer`` | ``layer`` | when set |

Releases before the camelCase names wrote ``category_key``, ``example_queries``,
``legacy_interface_id``, ``required_env_keys`` and ``owner_org``; :func:`meta_value` still reads
those, so a consumer (a gateway in front of an older server) understands both; it reads the
standard's older ``mciServiceId`` as ``legacyInterfaceId`` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "LEGACY_META_KEYS",
    "META_CATEGORY_KEY",
    "META_DISPLAY_DESCRIPTION",
    "META_ENABLED",
    "META_EXAMPLE_QUERIES",
    "META_LAYER",
    "META_LEGACY_INTERFACE_ID",
    "META_OWNER_ORG",
    "META_REGISTER",
    "META_REQUIRED_ENV_KEYS",
    "META_TAGS",
    "META_TIMEOUT_MILLIS",
    "META_VERSION",
    "is_registered",
    "meta_value",
]

META_VERSION = "version"
META_CATEGORY_KEY = "categoryKey"
META_EXAMPLE_QUERIES = "exampleQueries"
META_DISPLAY_DESCRIPTION = "displayDescription"
META_TAGS = "tags"
META_LEGACY_INTERFACE_ID = "legacyInterfaceId"
META_REQUIRED_ENV_KEYS = "requiredEnvKeys"
META_OWNER_ORG = "ownerOrg"
META_TIMEOUT_MILLIS = "timeoutMillis"
META_ENABLED = "enabled"
META_REGISTER = "register"
"""``false`` marks a draft or local tool: a gateway's central registry leaves it out."""
META_LAYER = "layer"

LEGACY_META_KEYS: Mapping[str, str] = {
    META_CATEGORY_KEY: "category_key",
    META_EXAMPLE_QUERIES: "example_queries",
    META_LEGACY_INTERFACE_ID: "legacy_interface_id",
    META_REQUIRED_ENV_KEYS: "required_env_keys",
    META_OWNER_ORG: "owner_org",
}
"""camelCase key → the snake_case key releases before the standard's names used."""


def meta_value(meta: Mapping[str, Any] | None, key: str) -> Any:
    """One ``_meta`` value by its standard key, falling back to the key's older snake_case name.

    Args:
        meta: a tool's ``_meta`` mapping (``None`` when the tool has none).
        key: a standard key, e.g. :data:`META_CATEGORY_KEY`.

    Returns:
        The value, or ``None`` when neither name is present.
    """
    if not meta:
        return None
    if key in meta:
        return meta[key]
    legacy = LEGACY_META_KEYS.get(key)
    value = None if legacy is None else meta.get(legacy)
    if value is None and key == META_LEGACY_INTERFACE_ID:
        return meta.get("mciServiceId")
    return value


def is_registered(tool: Mapping[str, Any]) -> bool:
    """Does this tool belong in a central registry (a gateway's tool index)?

    ``False`` only when the tool's ``_meta`` says ``"register": false`` (a draft or local tool,
    e.g. one written by ``air migrate`` and not yet approved). A tool without ``_meta`` or
    without the key, such as one from a server that does not use definitions, is registered.

    Args:
        tool: an MCP ``Tool`` object as ``tools/list`` sends it (or a manifest entry).

    Returns:
        Whether a registry should list the tool.
    """
    meta = tool.get("_meta")
    return not (isinstance(meta, Mapping) and meta.get(META_REGISTER) is False)
