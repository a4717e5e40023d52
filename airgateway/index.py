"""The Tool Index: every upstream's tools, resources and prompts under stable names.

- A tool keeps its upstream name, or ``<prefix>__<name>`` when its server has a ``prefix``;
  its metadata (title, description, schemas, annotations, ``_meta``) is passed on unchanged.
- Adding a server never renames a tool: when two servers offer one name, the server listed
  first in the configuration keeps it (gateways sharing a store: the server registered first
  in the store, :meth:`ToolIndex.rank`), the other's tool is left out, and the conflict is
  reported (log at start, ``GET /status``) until a ``prefix`` resolves it.
- Tools whose ``_meta`` says ``register: false`` (drafts) stay out unless the server's entry
  says ``include_drafts: true``.
- A server marked absent (every replica down for ``health.unhealthy_for_s``) lists nothing
  until it is back; its names stay reserved for it (no other server takes them meanwhile).
- A renamed tool's old names (its ``_meta`` lists them, :mod:`aircore.protocol.renamed`) stay
  callable as deprecated aliases, unlisted: a call by one goes upstream by the old name, so the
  upstream answers with its deprecation notice; the gateway meters it under the new name.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from aircore.protocol.renamed import ALIASES_META_KEY
from airgateway.config import PREFIX_SEPARATOR, ServerConfig

__all__ = ["Conflict", "IndexedTool", "Listing", "ToolIndex", "is_draft"]

logger = logging.getLogger(__name__)

_JSON = dict[str, Any]
MAX_ALIASES: Final = 16
"""Old names kept per tool at most."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """What one server lists (as its upstream gave it)."""

    tools: tuple[_JSON, ...] = ()
    resources: tuple[_JSON, ...] = ()
    templates: tuple[_JSON, ...] = ()
    prompts: tuple[_JSON, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexedTool:
    """One exposed tool: where it goes and whether a retry on another replica is safe."""

    name: str
    server: str
    upstream_name: str
    definition: _JSON
    retry_safe: bool
    annotations: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    """A name two servers offer: ``kept`` by the first listed, ``dropped`` from the other."""

    kind: str
    name: str
    kept: str
    dropped: str

    def to_json(self) -> _JSON:
        """The status page's form."""
        return {"kind": self.kind, "name": self.name, "kept": self.kept, "dropped": self.dropped}


def is_draft(tool: Mapping[str, Any]) -> bool:
    """Whether a tool's ``_meta`` says ``register: false`` (a draft, kept off registries)."""
    meta = tool.get("_meta")
    if not isinstance(meta, Mapping):
        return False
    return any(
        value is False and (key == "register" or str(key).endswith("/register"))
        for key, value in meta.items()
    )


def _retry_safe(tool: Mapping[str, Any]) -> bool:
    ann = tool.get("annotations")
    return isinstance(ann, Mapping) and (
        ann.get("readOnlyHint") is True or ann.get("idempotentHint") is True
    )


@dataclass(slots=True)
class _View:
    tools: dict[str, IndexedTool] = field(default_factory=dict)
    tool_list: list[_JSON] = field(default_factory=list)
    resources: dict[str, str] = field(default_factory=dict)
    resource_list: list[_JSON] = field(default_factory=list)
    templates: list[tuple[str, str]] = field(default_factory=list)
    template_list: list[_JSON] = field(default_factory=list)
    prompts: dict[str, tuple[str, str]] = field(default_factory=dict)
    prompt_list: list[_JSON] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    aliases: dict[str, IndexedTool] = field(default_factory=dict)
    """Deprecated names (a renamed tool's old ones) → the tool, sent upstream by the old name
    (the upstream answers with the deprecation notice, and meters it under the new one)."""


def _aliases(tool: Mapping[str, Any]) -> list[str]:
    """The old names a renamed tool lists in its ``_meta`` (bounded like the upstream's)."""
    meta = tool.get("_meta")
    names = meta.get(ALIASES_META_KEY) if isinstance(meta, Mapping) else None
    if not isinstance(names, list):
        return []
    return [n for n in names[:MAX_ALIASES] if isinstance(n, str)]


class ToolIndex:
    """The aggregated listing of every server, rebuilt whenever a server's listing changes.

    Args:
        servers: the configuration entries in file order (replicas repeat a name).
    """

    def __init__(self, servers: Sequence[ServerConfig]) -> None:
        self._order: list[ServerConfig] = []
        for server in servers:
            if all(s.name != server.name for s in self._order):
                self._order.append(server)
        self._configured = list(self._order)
        self._ranks: Mapping[str, int] = {}
        self._listings: dict[str, Listing] = {}
        self._absent: set[str] = set()
        self._view = _View()
        self.version = 0

    @property
    def conflicts(self) -> list[Conflict]:
        """The names left out because an earlier server offers them."""
        return list(self._view.conflicts)

    def update(self, server: str, listing: Listing) -> bool:
        """Take a server's new listing; return True when what clients see changed."""
        if self._listings.get(server) == listing:
            return False
        self._listings[server] = listing
        return self._rebuild()

    def set_absent(self, server: str, absent: bool) -> bool:
        """Leave a server's tools out of the listing (``absent``) or bring them back; return
        True when what clients see changed."""
        if (server in self._absent) == absent:
            return False
        if absent:
            self._absent.add(server)
        else:
            self._absent.discard(server)
        return self._rebuild()

    def absent(self) -> list[str]:
        """The servers left out as down for too long."""
        return sorted(self._absent)

    def rank(self, ranks: Mapping[str, int]) -> bool:
        """Order the servers by the ranks gateways sharing a store agree on (see
        :mod:`airgateway.shared_registry`): ranked servers first, by rank, then the others in
        configuration order. Return True when what clients see changed."""
        self._ranks = dict(ranks)
        return self._reorder()

    def set_servers(self, servers: Sequence[ServerConfig]) -> bool:
        """Serve these servers from now on (a reloaded configuration, fleet servers joining
        or leaving): a server gone loses its listing, a new one lists nothing until its
        listing comes (:meth:`update`). Return True when what clients see changed."""
        configured: list[ServerConfig] = []
        for server in servers:
            if all(s.name != server.name for s in configured):
                configured.append(server)
        names = {s.name for s in configured}
        for gone in [n for n in self._listings if n not in names]:
            del self._listings[gone]
        self._absent &= names
        self._configured = configured
        reordered = self._reorder()
        return self._rebuild() or reordered

    def _reorder(self) -> bool:
        ranks = self._ranks
        position = {s.name: i for i, s in enumerate(self._configured)}

        def key(server: ServerConfig) -> tuple[int, int, int]:
            rank = ranks.get(server.name)
            where = position[server.name]
            return (0, rank, where) if rank is not None else (1, 0, where)

        order = sorted(self._configured, key=key)
        if order == self._order:
            return False
        self._order = order
        logger.info("servers ordered by the shared registry: %s",
                    ", ".join(s.name for s in order))  # fmt: skip
        return self._rebuild()

    def _rebuild(self) -> bool:
        before = (
            self._view.tool_list,
            self._view.resource_list,
            self._view.prompt_list,
            self._view.template_list,
        )
        self._view = self._build()
        after = (
            self._view.tool_list,
            self._view.resource_list,
            self._view.prompt_list,
            self._view.template_list,
        )
        if before == after:
            return False
        self.version += 1
        return True

    def _build(self) -> _View:
        view = _View()
        tool_owner: dict[str, str] = {}
        prompt_owner: dict[str, str] = {}
        for server in self._order:
            listing = self._listings.get(server.name)
            if listing is None:
                continue
            for tool in listing.tools:
                upstream = tool.get("name")
                if not isinstance(upstream, str) or (is_draft(tool) and not server.include_drafts):
                    continue
                name = _exposed(server, upstream)
                if name in tool_owner:
                    view.conflicts.append(_conflict("tool", name, tool_owner[name], server.name))
                    continue
                tool_owner[name] = server.name
                if server.name in self._absent:
                    continue  # down too long: out of the listing, its names kept
                shown = tool if name == upstream else {**tool, "name": name}
                ann = tool.get("annotations")
                view.tools[name] = IndexedTool(
                    name=name,
                    server=server.name,
                    upstream_name=upstream,
                    definition=shown,
                    retry_safe=_retry_safe(tool),
                    annotations=ann if isinstance(ann, Mapping) else None,
                )
                view.tool_list.append(shown)
                for alias in _aliases(tool):  # kept only where no tool has that name
                    view.aliases.setdefault(_exposed(server, alias), dataclasses.replace(
                        view.tools[name], upstream_name=alias))  # fmt: skip
            for resource in listing.resources:
                uri = resource.get("uri")
                if not isinstance(uri, str):
                    continue
                if uri in view.resources:
                    view.conflicts.append(
                        _conflict("resource", uri, view.resources[uri], server.name)
                    )
                    continue
                view.resources[uri] = server.name
                view.resource_list.append(resource)
            for template in listing.templates:
                pattern = template.get("uriTemplate")
                if isinstance(pattern, str):
                    view.templates.append((pattern.split("{", 1)[0], server.name))
                    view.template_list.append(template)
            for prompt in listing.prompts:
                upstream = prompt.get("name")
                if not isinstance(upstream, str):
                    continue
                name = _exposed(server, upstream)
                if name in prompt_owner:
                    view.conflicts.append(
                        _conflict("prompt", name, prompt_owner[name], server.name)
                    )
                    continue
                prompt_owner[name] = server.name
                view.prompts[name] = (server.name, upstream)
                view.prompt_list.append(prompt if name == upstream else {**prompt, "name": name})
        for alias in [a for a in view.aliases if a in tool_owner]:
            del view.aliases[alias]  # a tool of that name wins over an old name
        for conflict in view.conflicts:
            if conflict not in self._view.conflicts:
                logger.warning(
                    "%s %r is offered by %s and %s: %s keeps it (add a prefix: to %s)",
                    conflict.kind,
                    conflict.name,
                    conflict.kept,
                    conflict.dropped,
                    conflict.kept,
                    conflict.dropped,
                )
        return view

    # ---- lookups -----------------------------------------------------------------------
    def tool(self, name: str) -> IndexedTool | None:
        """The exposed tool of that name (or of that deprecated old name)."""
        view = self._view
        return view.tools.get(name) or view.aliases.get(name)

    def names_of(self, name: str) -> list[str]:
        """Every name the exposed tool ``name`` answers to: ``name`` and its deprecated old
        names (the index's aliases of it)."""
        view = self._view
        if not view.aliases:
            return [name]
        return [name, *(old for old, tool in view.aliases.items() if tool.name == name)]

    def tools(self) -> list[_JSON]:
        """Every exposed tool's definition, in server order."""
        return self._view.tool_list

    def resources(self) -> list[_JSON]:
        """Every resource (first server wins a URI)."""
        return self._view.resource_list

    def templates(self) -> list[_JSON]:
        """Every resource template."""
        return self._view.template_list

    def prompts(self) -> list[_JSON]:
        """Every exposed prompt."""
        return self._view.prompt_list

    def prompt(self, name: str) -> tuple[str, str] | None:
        """``(server, upstream name)`` of an exposed prompt."""
        return self._view.prompts.get(name)

    def server_of(self, key: str, item: Mapping[str, Any]) -> str | None:
        """The server a listed ``item`` of ``key`` (``tools``, ``prompts``, ``resources``,
        ``resourceTemplates``) comes from, or ``None``."""
        if key == "tools":
            tool = self.tool(str(item.get("name", "")))
            return None if tool is None else tool.server
        if key == "prompts":
            found = self.prompt(str(item.get("name", "")))
            return None if found is None else found[0]
        if key == "resources":
            return self._view.resources.get(str(item.get("uri", "")))
        pattern = str(item.get("uriTemplate", ""))
        return self.resource_server(pattern.split("{", 1)[0]) if pattern else None

    def resource_server(self, uri: str) -> str | None:
        """The server to read ``uri`` from: a listed resource, else the longest matching
        template prefix."""
        server = self._view.resources.get(uri)
        if server is not None:
            return server
        best: tuple[int, str] | None = None
        for prefix, owner in self._view.templates:
            if uri.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), owner)
        return None if best is None else best[1]

    def tool_count(self, server: str) -> int:
        """How many tools a server lists (drafts included)."""
        listing = self._listings.get(server)
        return 0 if listing is None else len(listing.tools)


def _conflict(kind: str, name: str, kept: str, dropped: str) -> Conflict:
    return Conflict(kind=kind, name=name, kept=kept, dropped=dropped)


def _exposed(server: ServerConfig, name: str) -> str:
    return f"{server.prefix}{PREFIX_SEPARATOR}{name}" if server.prefix else name
