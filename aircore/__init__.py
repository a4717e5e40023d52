"""aircore: the minimal MCP server core that airstore and airmeter plug into.

Define tools with :func:`define_tool` (or ``@server.tool``), resources with
:func:`define_resource`, prompts with :func:`define_prompt`, and a server with
:func:`define_server`; ``server.run()`` serves it over stdio or Streamable HTTP.
"""

from aircore.builtin_plugins import cache_plugin, retry_plugin, timeout_plugin
from aircore.context import ElicitResult, InputRequest, RequestContext, ToolContext
from aircore.errors import (
    AirError,
    DefinitionError,
    ElicitationError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    ToolTimeoutError,
)
from aircore.params import params_to_json_schema
from aircore.plugins import Plugin, define_plugin
from aircore.prompt import Prompt, define_prompt
from aircore.resource import Resource, define_resource
from aircore.results import normalize_result
from aircore.server import AirServer, define_server
from aircore.tool import Tool, define_tool
from aircore.types import CallInfo, MeterHook

__all__ = [
    "AirError",
    "AirServer",
    "CallInfo",
    "DefinitionError",
    "ElicitResult",
    "ElicitationError",
    "InputRequest",
    "InvalidParamsError",
    "InvalidRequestError",
    "MeterHook",
    "MethodNotFoundError",
    "Plugin",
    "Prompt",
    "RequestContext",
    "Resource",
    "Tool",
    "ToolContext",
    "ToolTimeoutError",
    "cache_plugin",
    "define_plugin",
    "define_prompt",
    "define_resource",
    "define_server",
    "define_tool",
    "normalize_result",
    "params_to_json_schema",
    "retry_plugin",
    "timeout_plugin",
]
