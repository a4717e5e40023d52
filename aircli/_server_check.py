"""Server mode of ``air check`` and ``air manifest``: load a server and bind its definitions.

Nothing is started: no store is opened and no plugin hook runs, so checking a server is safe in
a build. The manifest is built from the same mapping the server applies at start.
"""

from __future__ import annotations

from typing import Any

from aircli.serve import load_server
from aircore.definitions import Problem, ToolDefinitionError, build_manifest
from aircore.definitions.binding import bind_tools, check_tools
from aircore.definitions.plugin import apply_definition, tool_spec
from aircore.server import AirServer
from aircore.tool import Tool

__all__ = ["check_server_target", "server_manifest"]


def _load(target: str) -> tuple[AirServer, dict[str, Tool]]:
    try:
        server = load_server(target)
    except ToolDefinitionError:
        raise
    except Exception as exc:  # a failing import of user code is reported, not a traceback
        problem = Problem(file=target, field="-", rule="target", message=str(exc))
        raise ToolDefinitionError([problem], summary=f"cannot load {target}") from exc
    if server.definitions is None:
        problem = Problem(
            file=target, field="-", rule="target",
            message="the server has no definitions directory: define_server(definitions=...)",
        )  # fmt: skip
        raise ToolDefinitionError([problem])
    originals: dict[str, Tool] = {}
    for plugin in server.plugins:  # tools as registered, before the plugin applied definitions
        state = getattr(plugin, "options", {}).get("state")
        originals.update(getattr(state, "originals", {}))
    tools = {name: originals.get(name, tool) for name, tool in server.tools.items()}
    for name, tool in originals.items():
        tools.setdefault(name, tool)  # disabled tools were removed from server.tools
    return server, tools


def check_server_target(target: str) -> tuple[int, list[Problem]]:
    """Every rule, pairing included, on the server a target names.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.

    Returns:
        ``(number of definition files checked, problems)``.

    Raises:
        ToolDefinitionError: the target cannot be loaded, has no definitions directory, or the
            directory is missing.
    """
    server, tools = _load(target)
    assert server.definitions is not None
    specs = [tool_spec(t) for t in tools.values()]
    checked, problems, _ = check_tools(specs, server.definitions, target=target)
    return checked, problems


def server_manifest(target: str) -> dict[str, Any]:
    """The manifest of the server a target names: its tools as ``tools/list`` will list them.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.

    Returns:
        The manifest, ``server`` set to the server's name and version.

    Raises:
        ToolDefinitionError: the target cannot be loaded or its definitions break the standard.
    """
    server, tools = _load(target)
    assert server.definitions is not None
    bound = bind_tools([tool_spec(t) for t in tools.values()], server.definitions, target=target)
    entries = [apply_definition(tool, bound[name]).describe() for name, tool in tools.items()]
    return build_manifest(entries, server={"name": server.name, "version": server.version})
