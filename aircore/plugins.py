"""Plugins: the seed's lifecycle, validated at registration.

A plugin is any object (or dict) with ``meta`` (``{"name": ..., "version"?: ...}``) and any of:
``on_init(server)``, ``on_start(server)``, ``on_tool_register(tool, server)`` (sync; may change
the tool or return a replacement), ``middleware`` (a list), ``on_stop(server)``. Hooks may be
sync or async (except ``on_tool_register``). Order: register (``use=[...]`` order, names
validated) → on_init → on_start → on_tool_register per tool → middleware per call → on_stop
(reverse order, on shutdown, SIGTERM or stdin EOF).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aircore.errors import DefinitionError

__all__ = ["Plugin", "define_plugin", "plugin_hook", "plugin_name", "validate_plugins"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@/\-]{0,127}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Plugin:
    """A plugin built by :func:`define_plugin`."""

    meta: dict[str, Any]
    middleware: tuple[Any, ...] = ()
    on_init: Callable[..., Any] | None = None
    on_start: Callable[..., Any] | None = None
    on_tool_register: Callable[..., Any] | None = None
    on_stop: Callable[..., Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)


def define_plugin(
    name: str,
    *,
    version: str | None = None,
    middleware: Sequence[Any] = (),
    on_init: Callable[..., Any] | None = None,
    on_start: Callable[..., Any] | None = None,
    on_tool_register: Callable[..., Any] | None = None,
    on_stop: Callable[..., Any] | None = None,
) -> Plugin:
    """Build a plugin from hooks.

    Raises:
        DefinitionError: a bad name.
    """
    meta: dict[str, Any] = {"name": name}
    if version is not None:
        meta["version"] = version
    plugin = Plugin(
        meta=meta,
        middleware=tuple(middleware),
        on_init=on_init,
        on_start=on_start,
        on_tool_register=on_tool_register,
        on_stop=on_stop,
    )
    plugin_name(plugin)
    return plugin


def plugin_hook(plugin: Any, hook: str) -> Any:
    """A plugin's hook or attribute (object attribute or dict key), or ``None``."""
    if isinstance(plugin, Mapping):
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), hook)
        return plugin.get(hook, plugin.get(camel))
    return getattr(plugin, hook, None)


def plugin_name(plugin: Any) -> str:
    """The plugin's validated ``meta.name``.

    Raises:
        DefinitionError: ``meta`` or its ``name`` is missing or malformed.
    """
    meta = plugin_hook(plugin, "meta")
    name = meta.get("name") if isinstance(meta, Mapping) else getattr(meta, "name", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DefinitionError(
            f"plugin {plugin!r} needs meta.name: 1-128 characters of A-Za-z0-9_.@/- "
            f"starting with a letter or digit (got {name!r})"
        )
    return name


def validate_plugins(plugins: Sequence[Any]) -> list[str]:
    """Validate every plugin and return their names, rejecting duplicates.

    Raises:
        DefinitionError: a plugin is malformed or two share a name.
    """
    names: list[str] = []
    for plugin in plugins:
        name = plugin_name(plugin)
        if name in names:
            raise DefinitionError(f"plugin {name!r} is registered twice")
        mws = plugin_hook(plugin, "middleware")
        if mws is not None and (isinstance(mws, (str, bytes)) or not isinstance(mws, Sequence)):
            raise DefinitionError(f"plugin {name!r}: middleware must be a list")
        names.append(name)
    return names
