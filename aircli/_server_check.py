"""Server mode of ``air check`` and ``air manifest``: load a server and bind its definitions.

Nothing is started: no store is opened and no plugin hook runs, so checking a server is safe in
a build. The manifest is built from the same mapping the server applies at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aircli._foreign import FOREIGN_KINDS, ForeignServer, find_foreign_server
from aircli.serve import import_target, load_server, pick_server, split_target
from aircore.builtin_plugins import cancelling_timeout_ms
from aircore.definitions import (
    DEFAULT_DEFINITIONS_DIR,
    Problem,
    ToolDefinitionError,
    build_manifest,
)
from aircore.definitions.binding import ToolSpec, bind_tools, check_tools
from aircore.definitions.plugin import apply_definition, tool_spec, tools_as_registered
from aircore.errors import DefinitionError
from aircore.server import AirServer
from aircore.tool import Tool

__all__ = [
    "check_server_target",
    "load_any_server",
    "registered_tools",
    "server_manifest",
    "server_tools",
]


def registered_tools(server: AirServer) -> dict[str, Tool]:
    """The server's tools as registered, before any definition was applied (disabled ones too)."""
    return tools_as_registered(server.plugins, server.tools)


def _paired(
    target: str, server: AirServer, tools: dict[str, Tool], definitions: Path | None
) -> tuple[AirServer, Path, dict[str, Tool]]:
    directory = server.definitions if server.definitions is not None else definitions
    if directory is None:
        problem = Problem(
            file=target, field="-", rule="target",
            message="the server has no definitions directory: define_server(definitions=...)",
        )  # fmt: skip
        raise ToolDefinitionError([problem])
    return server, Path(directory), tools


def _load(target: str, definitions: Path | None = None) -> tuple[AirServer, Path, dict[str, Tool]]:
    server, tools = server_tools(target)
    return _paired(target, server, tools, definitions)


def _cannot_load(target: str, message: str) -> ToolDefinitionError:
    problem = Problem(file=target, field="-", rule="target", message=message)
    return ToolDefinitionError([problem], summary=f"cannot load {target}")


def load_any_server(target: str) -> AirServer | ForeignServer:
    """The server a target names: an air server, else one built on another library.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.

    Returns:
        The :class:`~aircore.server.AirServer`, or the official SDK's ``MCPServer``/FastMCP
        server with its tools listed (:class:`~aircli._foreign.ForeignServer`).

    Raises:
        ToolDefinitionError: the target cannot be imported, or holds no server of either kind.
    """
    spec, attr = split_target(target)
    try:
        module = import_target(spec)
    except Exception as exc:  # a failing import of user code is reported, not a traceback
        raise _cannot_load(target, str(exc)) from exc
    try:
        return pick_server(module, spec, attr)
    except DefinitionError as exc:
        try:
            foreign = find_foreign_server(module, attr)
        except Exception as listing:  # the other library failed to list its own tools
            raise _cannot_load(target, f"listing its tools failed: {listing}") from listing
        if foreign is None:
            raise _cannot_load(
                target, f"{exc}; nor one server built on {FOREIGN_KINDS} (name it: {spec}:NAME)"
            ) from exc
        return foreign


def check_server_target(
    target: str, *, definitions: Path | None = None
) -> tuple[Path, int, list[Problem]]:
    """Every rule, pairing included, on the server a target names.

    A server built on the official SDK's ``MCPServer`` or on FastMCP is paired by the tools it
    lists with ``definitions`` (default ``./tool-definitions``): it cannot name a directory.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.
        definitions: the definitions directory to pair with when the server names none.

    Returns:
        ``(definitions directory, number of definition files checked, problems)``.

    Raises:
        ToolDefinitionError: the target cannot be loaded, has no definitions directory, or the
            directory is missing.
    """
    server = load_any_server(target)
    if isinstance(server, ForeignServer):
        directory = Path(definitions if definitions is not None else DEFAULT_DEFINITIONS_DIR)
        specs = [
            ToolSpec(name=t.name, derived_input_schema=t.input_schema or None,
                     derived_output_schema=t.output_schema)
            for t in server.tools
        ]  # fmt: skip
    else:
        _, directory, tools = _paired(target, server, registered_tools(server), definitions)
        specs = [tool_spec(t) for t in tools.values()]
    checked, problems, _ = check_tools(specs, directory, target=target)
    return directory, checked, problems


def server_tools(target: str) -> tuple[AirServer, dict[str, Tool]]:
    """The server a target names and its tools as registered (before definitions applied).

    Raises:
        ToolDefinitionError: the target cannot be loaded.
    """
    try:
        server = load_server(target)
    except ToolDefinitionError:
        raise
    except Exception as exc:  # a failing import of user code is reported, not a traceback
        problem = Problem(file=target, field="-", rule="target", message=str(exc))
        raise ToolDefinitionError([problem], summary=f"cannot load {target}") from exc
    return server, registered_tools(server)


def server_manifest(target: str, *, definitions: Path | None = None) -> dict[str, Any]:
    """The manifest of the server a target names: its tools as ``tools/list`` will list them.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.
        definitions: the definitions directory when the server names none.

    Returns:
        The manifest, ``server`` set to the server's name and version.

    Raises:
        ToolDefinitionError: the target cannot be loaded or its definitions break the standard.
    """
    server, directory, tools = _load(target, definitions)
    bound = bind_tools([tool_spec(t) for t in tools.values()], directory, target=target)
    entries = [apply_definition(tool, bound[name]).describe() for name, tool in tools.items()]
    server_info = {"name": server.name, "version": server.version}
    timeout_ms = cancelling_timeout_ms(server.plugins)
    return build_manifest(entries, server=server_info, timeout_ms=timeout_ms)
