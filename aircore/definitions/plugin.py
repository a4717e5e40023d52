"""Apply tool definitions to a server: the plugin ``define_server(definitions=...)`` installs.

At start (``on_init``, before any other plugin sees a tool) every registered tool is paired with
its definition file; any problem (a missing or unused definition, a handler/definition name
mismatch, a rule broken) fails the start with one :class:`ToolDefinitionError` listing all of
them. Then ``on_tool_register`` replaces each tool with a copy carrying the definition's
metadata, so ``tools/list``, the manifest and the meter (``ctx.tool_meta``) see the same thing.
A definition's ``timeout_ms`` wraps the tool's handler in a timeout; ``enabled: false`` keeps
the tool out of the server. The directory's rename map (``renames.yml``,
:mod:`aircore.definitions.renames`) renames a tool still registered under its old name, and
keeps every old name as a deprecated alias (``server.aliases``).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aircore.builtin_plugins import cancelling_timeout_ms, run_with_timeout
from aircore.definitions.binding import BoundTool, ToolSpec, bind_tools, check_tools
from aircore.definitions.config import GateConfig
from aircore.definitions.errors import DefinitionNotFoundError, ToolDefinitionError
from aircore.definitions.meta import META_TIMEOUT_MILLIS
from aircore.definitions.renames import ALIASES_META_KEY, load_renames
from aircore.plugins import Plugin
from aircore.tool import Tool
from aircore.validation import SchemaValidator

__all__ = [
    "PLUGIN_NAME",
    "apply_definition",
    "definitions_plugin",
    "tool_spec",
    "tools_as_registered",
]

PLUGIN_NAME = "air-definitions"
"""``meta.name`` of the definitions plugin."""


def tool_spec(tool: Tool) -> ToolSpec:
    """Describe what a registered tool brings itself, by where its schemas came from.

    A complete object JSON Schema passed as ``params``/``output_schema`` is explicit (it wins
    over the definition); params in the shorthand forms and type hints are derived from the
    handler (the definition wins over them).
    """
    explicit_in = tool.input_origin == "explicit"
    explicit_out = tool.output_origin == "explicit"
    derived_in = tool.input_origin == "derived"
    derived_out = tool.output_origin == "derived"
    return ToolSpec(
        name=tool.name,
        input_schema=tool.input_schema if explicit_in else None,
        derived_input_schema=tool.input_schema if derived_in else None,
        output_schema=tool.output_schema if explicit_out else None,
        derived_output_schema=tool.output_schema if derived_out else None,
    )


def apply_definition(tool: Tool, bound: BoundTool) -> Tool:
    """A copy of ``tool`` carrying its definition's metadata (validators rebuilt if needed).

    Title, description, annotations and ``_meta`` come from the definition; the schemas by the
    priority explicit → definition → derived; ``layer``/``tags`` from the definition when set.
    """
    mcp = bound.tool
    definition = bound.definition
    new = dataclasses.replace(
        tool,
        title=mcp["title"],
        description=mcp["description"],
        input_schema=mcp["inputSchema"],
        output_schema=mcp.get("outputSchema"),
        annotations=dict(mcp["annotations"]),
        meta=dict(mcp["_meta"]),
        layer=definition.layer.value if definition.layer is not None else tool.layer,
        tags=definition.tags or tool.tags,
        required_scopes=tool.required_scopes | frozenset(definition.required_scopes),
    )
    if definition.timeout_ms is not None:
        new.handler = _with_timeout(tool.name, tool.handler, definition.timeout_ms / 1000)
        new.is_async = True
    if new.input_schema != tool.input_schema:
        new.validator = SchemaValidator(new.input_schema, what=f"tool {tool.name!r} inputSchema")
    if new.output_schema != tool.output_schema:
        new.output_validator = (
            None
            if new.output_schema is None
            else SchemaValidator(new.output_schema, what=f"tool {tool.name!r} outputSchema")
        )
    return new


def _with_timeout(name: str, handler: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """The handler, cancelled after ``seconds`` (only tools whose definition sets a timeout pay)."""

    message = f"tool {name!r} timed out after {seconds:g}s (timeout_ms)"

    async def timed(*args: Any, **kwargs: Any) -> Any:
        value = handler(*args, **kwargs)
        if not inspect.isawaitable(value):  # a sync handler cannot be cancelled anyway
            return value
        return await run_with_timeout(seconds, value, message)

    return timed


class _Definitions:
    """The plugin's state: the tools as registered, and their bindings made at start."""

    def __init__(self, directory: Path, config: GateConfig | None) -> None:
        self.directory = directory
        self.config = config
        self.bound: dict[str, BoundTool] = {}
        self.originals: dict[str, Tool] = {}
        self.renames: dict[str, str] = {}

    def on_init(self, server: Any) -> None:
        self.renames = load_renames(self.directory)
        for old, new in self.renames.items():  # still registered under its old name
            tool = server.tools.get(old)
            if tool is not None and new not in server.tools:
                del server.tools[old]
                server.tools[new] = dataclasses.replace(tool, name=new)
        server.aliases.update(
            {old: new for old, new in self.renames.items() if new in server.tools}
        )
        for name, tool in server.tools.items():
            self.originals.setdefault(name, tool)
        # every tool as registered, disabled ones too (a restart must pair them again)
        specs = [tool_spec(tool) for tool in self.originals.values()]
        self.bound = bind_tools(specs, self.directory, target=server.name, config=self.config)
        for name, bound in self.bound.items():
            if not bound.definition.enabled:
                server.tools.pop(name, None)

    def on_tool_register(self, tool: Tool, server: Any) -> Tool:
        original = self.originals.setdefault(tool.name, tool)
        bound = self.bound.get(tool.name)
        if bound is None:  # registered after start: bind this one tool alone
            _, problems, found = check_tools(
                [tool_spec(original)], self.directory, target=server.name, config=self.config
            )
            problems = [p for p in problems if p.rule != "unused-definition"]
            if problems:
                server.tools.pop(tool.name, None)  # registration is all or nothing
                summary = f"tool {tool.name!r} cannot register"
                if all(p.rule == "missing-definition" for p in problems):
                    raise DefinitionNotFoundError(problems, summary=summary)
                raise ToolDefinitionError(problems, summary=summary)
            bound = self.bound[tool.name] = found[tool.name]
            if not bound.definition.enabled:
                server.tools.pop(tool.name, None)
                raise ToolDefinitionError(
                    [], summary=f"tool {tool.name!r} is disabled by its definition"
                )
        defined = apply_definition(original, bound)
        # the standard's _meta lists timeoutMillis: the effective one, as the manifest says it
        limits = [t for t in (bound.definition.timeout_ms, cancelling_timeout_ms(server.plugins))
                  if t is not None]  # fmt: skip
        defined.meta = {
            **(defined.meta or {}),
            META_TIMEOUT_MILLIS: min(limits) if limits else None,
        }
        aliases = sorted(old for old, new in self.renames.items() if new == tool.name)
        if aliases:  # the old names, so a gateway in front keeps them too
            defined.meta[ALIASES_META_KEY] = aliases
        return defined


def definitions_plugin(directory: str | Path, *, config: GateConfig | None = None) -> Plugin:
    """The plugin that applies a definitions directory to a server's tools.

    Args:
        directory: the definitions directory (resolved against the working directory at start).
        config: the gate configuration (default: the directory's ``air-check.yml``).

    Returns:
        A :class:`~aircore.Plugin` named ``air-definitions``; put it first in ``use=[...]`` (as
        ``define_server(definitions=...)`` does) so other plugins see the defined tools.
    """
    state = _Definitions(Path(directory), config)
    return Plugin(
        meta={"name": PLUGIN_NAME},
        on_init=state.on_init,
        on_tool_register=state.on_tool_register,
        options={"directory": str(directory), "state": state},
    )


def tools_as_registered(plugins: Iterable[object], tools: Mapping[str, Tool]) -> dict[str, Tool]:
    """A server's tools as registered, before a definitions plugin applied its definitions
    (the tools its definitions disable too): what ``air check`` and ``air migrate`` pair with
    the definition files.

    Args:
        plugins: the server's plugins (``server.plugins``).
        tools: the server's tools now (``server.tools``).

    Returns:
        The tools by name: as registered where a definitions plugin holds them, else as now.
    """
    originals: dict[str, Tool] = {}
    for plugin in plugins:
        state = plugin.options.get("state") if isinstance(plugin, Plugin) else None
        if isinstance(state, _Definitions):
            originals.update(state.originals)
    found = {name: originals.get(name, tool) for name, tool in tools.items()}
    for name, tool in originals.items():
        found.setdefault(name, tool)  # disabled tools were removed from the server's tools
    return found
