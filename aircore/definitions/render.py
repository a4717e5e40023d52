"""Map a :class:`ToolDefinition` to MCP tool metadata: the one mapping used by ``tools/list``,
the manifest and the meter.

| definition | MCP tool |
|---|---|
| ``display_name`` | ``title`` and ``annotations.title`` |
| the four description parts, in order | ``description`` |
| ``read_only`` / ``destructive`` / ``idempotent`` | ``annotations.readOnlyHint`` / ``destructiveHint`` / ``idempotentHint`` |
| ``open_world`` (default false) | ``annotations.openWorldHint`` |
| ``parameters_schema`` / ``output_schema`` | ``inputSchema`` / ``outputSchema`` |
| ``version``, ``category_key``, ``example_queries``, ``display_description``, ``tags``, ``legacy_interface_id``, ``required_env_keys``, ``owner_org``, ``timeout_ms``, ``enabled``, ``register``, ``layer`` | ``_meta``, camelCase (:mod:`aircore.definitions.meta`) |
"""  # noqa: E501

from __future__ import annotations

import copy

from aircore.definitions import meta as keys
from aircore.definitions.model import ToolDefinition
from aircore.definitions.types import JSONObject
from aircore.definitions.wording import has_hangul

__all__ = [
    "DESCRIPTION_LABELS",
    "DESCRIPTION_LABELS_KO",
    "render_annotations",
    "render_description",
    "render_meta",
    "render_tool",
]

DESCRIPTION_LABELS: tuple[str, ...] = ("", "When to use: ", "When not to use: ", "Input/output: ")
"""Prefixes of the four parts in the rendered description (the function part has none)."""

DESCRIPTION_LABELS_KO: tuple[str, ...] = ("", "사용 시점: ", "사용하지 않을 때: ", "입출력 제한: ")
"""The prefixes for a definition written in Korean (any part in Hangul), so the model reads one
language."""


def render_description(definition: ToolDefinition) -> str:
    """The model-facing description: the four parts joined in order, blank-line separated.

    Args:
        definition: the tool definition.

    Returns:
        ``function``, then ``When to use: …``, ``When not to use: …``, ``Input/output: …``
        (``사용 시점: …``, ``사용하지 않을 때: …``, ``입출력 제한: …`` when written in Korean).
    """
    d = definition.description
    parts = (d.function, d.when_to_use, d.when_not_to_use, d.io_limits)
    labels = DESCRIPTION_LABELS_KO if any(has_hangul(p) for p in parts) else DESCRIPTION_LABELS
    return "\n\n".join(label + text for label, text in zip(labels, parts, strict=True))


def render_annotations(definition: ToolDefinition) -> JSONObject:
    """``annotations``: the title and the four behaviour hints (hints, never authorization)."""
    return {
        "title": definition.display_name,
        "readOnlyHint": definition.read_only,
        "destructiveHint": definition.destructive,
        "idempotentHint": definition.idempotent,
        "openWorldHint": definition.open_world,
    }


def render_meta(definition: ToolDefinition) -> JSONObject:
    """``_meta``: operational metadata kept out of the description (it costs the model no tokens).

    Keys are the standard's camelCase names (see :mod:`aircore.definitions.meta`); optional
    fields appear only when the definition sets them; ``timeoutMillis`` (``null`` without a
    timeout), ``enabled`` and ``register`` always do.
    The meter reads ``version`` and ``categoryKey`` from here.
    """
    meta: JSONObject = {
        keys.META_VERSION: definition.version,
        keys.META_CATEGORY_KEY: definition.category_key,
        keys.META_EXAMPLE_QUERIES: list(definition.example_queries),
        keys.META_DISPLAY_DESCRIPTION: definition.display_description,
    }
    if definition.tags:
        meta[keys.META_TAGS] = list(definition.tags)
    if definition.legacy_interface_id is not None:
        meta[keys.META_LEGACY_INTERFACE_ID] = definition.legacy_interface_id
    if definition.required_env_keys:
        meta[keys.META_REQUIRED_ENV_KEYS] = list(definition.required_env_keys)
    if definition.owner_org is not None:
        meta[keys.META_OWNER_ORG] = definition.owner_org
    meta[keys.META_TIMEOUT_MILLIS] = definition.timeout_ms  # the standard lists it: null = none
    meta[keys.META_ENABLED] = definition.enabled
    meta[keys.META_REGISTER] = definition.register
    if definition.layer is not None:
        meta[keys.META_LAYER] = definition.layer.code
    return meta


def render_tool(
    definition: ToolDefinition,
    *,
    input_schema: JSONObject | None = None,
    output_schema: JSONObject | None = None,
) -> JSONObject:
    """The full MCP ``Tool`` object for one definition, as ``tools/list`` sends it.

    Args:
        definition: the tool definition.
        input_schema: the effective input schema when it does not come from the definition
            (an explicit schema on the tool, or one derived from the handler).
        output_schema: likewise for the output schema.

    Returns:
        ``{name, title, description, inputSchema, outputSchema?, annotations, _meta}``.

    Raises:
        ValueError: no input schema at all (``parameters_schema: null`` and none given).
    """
    schema = input_schema if input_schema is not None else definition.parameters_schema
    if schema is None:
        raise ValueError(
            f"tool {definition.name!r}: parameters_schema is null and no schema was derived"
        )
    out = output_schema if output_schema is not None else definition.output_schema
    tool: JSONObject = {
        "name": definition.name,
        "title": definition.display_name,
        "description": render_description(definition),
        "inputSchema": copy.deepcopy(schema),
    }
    if out is not None:
        tool["outputSchema"] = copy.deepcopy(out)
    tool["annotations"] = render_annotations(definition)
    tool["_meta"] = render_meta(definition)
    return tool
