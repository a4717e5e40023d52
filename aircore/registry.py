"""The registries of a server: tools, resources and prompts, and the ``@server.tool`` decorator."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

from aircore.errors import DefinitionError
from aircore.prompt import Prompt
from aircore.resource import Resource
from aircore.tool import Tool, tool_from_function

__all__ = ["Registry"]


class Registry:
    """Tools (in registration order), resources and prompts of one server."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: list[Resource] = []
        self.prompts: dict[str, Prompt] = {}
        self._listing: list[dict[str, Any]] | None = None

    def _tool_added(self, name: str) -> None:
        """Hook: a tool was registered (the server runs plugins' ``on_tool_register``)."""

    def add_tool(self, tool: Tool) -> Tool:
        """Register a tool (after start, plugins' ``on_tool_register`` runs at once).

        Raises:
            DefinitionError: not a Tool, or the name is taken.
        """
        if not isinstance(tool, Tool):
            raise DefinitionError(f"expected a Tool from define_tool, got {type(tool).__name__}")
        if tool.name in self.tools:
            raise DefinitionError(f"tool {tool.name!r} is already registered")
        self.tools[tool.name] = tool
        self._listing = None
        self._tool_added(tool.name)
        return tool

    def add_resource(self, resource: Resource) -> Resource:
        """Register a resource or resource template.

        Raises:
            DefinitionError: not a Resource, or the URI is taken.
        """
        if not isinstance(resource, Resource):
            raise DefinitionError("expected a Resource from define_resource")
        if any(r.uri == resource.uri for r in self.resources):
            raise DefinitionError(f"resource {resource.uri!r} is already registered")
        self.resources.append(resource)
        return resource

    def add_prompt(self, prompt: Prompt) -> Prompt:
        """Register a prompt.

        Raises:
            DefinitionError: not a Prompt, or the name is taken.
        """
        if not isinstance(prompt, Prompt):
            raise DefinitionError("expected a Prompt from define_prompt")
        if prompt.name in self.prompts:
            raise DefinitionError(f"prompt {prompt.name!r} is already registered")
        self.prompts[prompt.name] = prompt
        return prompt

    @overload
    def tool(self, func: Callable[..., Any], /) -> Tool: ...

    @overload
    def tool(
        self,
        func: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        title: str | None = None,
        meta: Mapping[str, Any] | None = None,
        layer: int | str | None = None,
        tags: Sequence[str] = (),
        structured_output: bool | None = None,
        required_scopes: Sequence[str] = (),
    ) -> Callable[[Callable[..., Any]], Tool]: ...

    def tool(
        self,
        func: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        title: str | None = None,
        meta: Mapping[str, Any] | None = None,
        layer: int | str | None = None,
        tags: Sequence[str] = (),
        structured_output: bool | None = None,
        required_scopes: Sequence[str] = (),
    ) -> Tool | Callable[[Callable[..., Any]], Tool]:
        """Decorator: register a function as a tool, its schemas derived from type hints.

        ``@server.tool`` or ``@server.tool(description=..., layer=2)``. The docstring is the
        default description (its parameter section describes the parameters); a parameter
        typed :class:`ToolContext` receives the context; the return annotation gives the
        ``outputSchema`` unless ``structured_output=False`` (see
        :func:`~aircore.tool.tool_from_function`).
        """

        def register(f: Callable[..., Any]) -> Tool:
            return self.add_tool(
                tool_from_function(
                    f,
                    name=name,
                    description=description,
                    output_schema=output_schema,
                    annotations=annotations,
                    title=title,
                    meta=meta,
                    layer=layer,
                    tags=tags,
                    structured_output=structured_output,
                    required_scopes=required_scopes,
                )
            )

        if func is not None:
            return register(func)
        return register

    def tool_listing(self) -> list[dict[str, Any]]:
        """The ``tools/list`` entries in registration order (cached)."""
        if self._listing is None:
            self._listing = [t.describe() for t in self.tools.values()]
        return self._listing
