"""The gateway's configuration: one YAML file, checked completely before anything starts.

Every problem is one :class:`~airgateway.errors.ConfigError` naming the file, the line and the
key (``servers[2].timeout_s``). Secrets come only from environment variables: a value written
``{env: NAME}`` or a key ending in ``_env``; a literal value under a secret-looking name
(``Authorization``, ``*token*``, ``*key*``, ``*secret*``, ``*password*``, ``Cookie``) is refused.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from airgateway.errors import ConfigError
from airhttp.guards import http_url_problem

if TYPE_CHECKING:
    from airhttp.oauth_config import AuthConfig

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "STRATEGIES",
    "BalancerConfig",
    "ClientConfig",
    "GatewayConfig",
    "HealthConfig",
    "ServerConfig",
    "UpstreamOAuth",
    "load_config",
    "parse_config",
]

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_HEALTH_INTERVAL_S = 15.0
DEFAULT_HEALTH_TIMEOUT_S = 5.0
DEFAULT_UNHEALTHY_AFTER = 3
DEFAULT_HEALTHY_AFTER = 1
DEFAULT_UNHEALTHY_FOR_S = 300.0
DEFAULT_STRATEGY = "least_outstanding"
DEFAULT_RETRIES = 1
MAX_RETRIES = 10
MAX_COUNT = 1000
DEFAULT_REFRESH_AHEAD_S = 60.0
STRATEGIES = ("round_robin", "least_outstanding", "p2c_latency", "session_hash")
TRANSPORTS = ("http", "sse", "stdio")
PREFIX_SEPARATOR = "__"

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET = re.compile(r"authorization|cookie|token|secret|passw|key", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamOAuth:
    """The gateway's own OAuth client for one upstream (client credentials grant, RFC 6749
    §4.4): the token goes upstream, never the caller's."""

    client_id: str
    client_secret: str
    token_endpoint: str | None = None
    """Where tokens come from; else found through ``issuer``'s metadata (RFC 8414 / OIDC)."""
    issuer: str | None = None
    scope: str | None = None
    resource: str | None = None
    """The RFC 8707 ``resource`` asked for: the upstream's canonical URI (default its url)."""
    refresh_ahead_s: float = DEFAULT_REFRESH_AHEAD_S
    """A token is replaced this long before it expires (at most half its lifetime)."""

    def __repr__(self) -> str:  # the secret stays out of logs and tracebacks
        return f"UpstreamOAuth(client_id={self.client_id!r}, resource={self.resource!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """One replica of an upstream server (entries sharing a ``name`` are replicas of one)."""

    name: str
    transport: str
    url: str | None = None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    prefix: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    headers: Mapping[str, str] = field(default_factory=dict)
    include_drafts: bool = False
    oauth: UpstreamOAuth | None = None
    """The gateway's own client-credentials token for this upstream (``http`` only)."""
    send_caller: bool = False
    """Pass the caller's identity in ``params._meta["io.air/caller"]`` (opt-in)."""
    scopes: frozenset[str] = frozenset()
    """With ``auth:``, the scopes an OAuth caller needs to call any of this server's tools (on
    top of ``auth.scopes`` and the ``auth.tools`` globs); its tools are left out of the
    ``tools/list`` of a caller without them."""
    line: int = 0

    @property
    def target(self) -> str:
        """The URL, or the command line of a stdio server (for status pages)."""
        return self.url if self.url is not None else " ".join(self.command)


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthConfig:
    """The health checker: how often, how long, how many failures eject, successes restore."""

    interval_s: float = DEFAULT_HEALTH_INTERVAL_S
    timeout_s: float = DEFAULT_HEALTH_TIMEOUT_S
    unhealthy_after: int = DEFAULT_UNHEALTHY_AFTER
    healthy_after: int = DEFAULT_HEALTHY_AFTER
    unhealthy_for_s: float = DEFAULT_UNHEALTHY_FOR_S
    """A server all of whose replicas have been down this long leaves ``tools/list`` (with
    ``list_changed``) until one comes back; before that its tools stay listed and calls get
    -32003, as replicas may come back."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BalancerConfig:
    """How a replica is picked, and how many other replicas a safe call may be retried on."""

    strategy: str = DEFAULT_STRATEGY
    retries: int = DEFAULT_RETRIES


MATCH_KEYS = ("client_id", "sub", "scope")
"""The claims a ``clients:`` entry's ``match:`` may name (besides ``auth.group_claim``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    """A client admitted by its static bearer token (read from ``token_env``), or, with
    ``auth:``, an OAuth caller whose token claims fit ``match`` (claim -> value; ``scope``
    and list-valued claims such as groups match when they hold the value), with an allow list
    and a rate limit."""

    name: str
    token: str | None = None
    allow: tuple[str, ...] = ("*",)
    rate_per_s: float | None = None
    match: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayConfig:
    """The whole configuration (see the module docstring for the rules)."""

    servers: tuple[ServerConfig, ...]
    health: HealthConfig = HealthConfig()
    balancer: BalancerConfig = BalancerConfig()
    clients: tuple[ClientConfig, ...] = ()
    per_tool_rate_per_s: Mapping[str, float] = field(default_factory=dict)
    path: str = "<config>"
    auth: AuthConfig | None = None
    """The ``auth:`` section: the gateway is then an OAuth 2.1 resource server."""
    fleet_servers: bool = True
    """``registry.fleet_servers``: serve the servers other gateways sharing the store register
    that this file does not name (:mod:`airgateway.registry_sync`); ``False``: only adopt
    replicas of the servers it names."""


class _Reader:
    """Walks composed YAML nodes, so every error can name a line."""

    def __init__(self, path: str, environ: Mapping[str, str]) -> None:
        self.path = path
        self.environ = environ

    def fail(self, node: yaml.Node | None, key: str | None, message: str) -> ConfigError:
        line = None if node is None else node.start_mark.line + 1
        return ConfigError(message, path=self.path, line=line, key=key)

    def mapping(
        self, node: yaml.Node, key: str, allowed: tuple[str, ...]
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key or None, "must be a mapping")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for knode, vnode in node.value:
            name = knode.value if isinstance(knode, yaml.ScalarNode) else None
            sub = f"{key}.{name}" if key else str(name)
            if not isinstance(name, str) or (allowed and name not in allowed):
                raise self.fail(knode, sub, f"unknown key (expected one of {', '.join(allowed)})")
            if name in out:
                raise self.fail(knode, sub, "duplicate key")
            out[name] = (knode, vnode)
        return out

    def scalar(self, node: yaml.Node, key: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, key, "must be a single value")
        return yaml.safe_load(yaml.serialize(node))

    def string(self, node: yaml.Node, key: str) -> str:
        value = self.scalar(node, key)
        if not isinstance(value, str) or not value:
            raise self.fail(node, key, "must be a non-empty string")
        return value

    def number(self, node: yaml.Node, key: str, *, low: float = 0.0) -> float:
        value = self.scalar(node, key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > low:
            raise self.fail(node, key, f"must be a number greater than {low:g}")
        if value != value or value == float("inf"):
            raise self.fail(node, key, "must be a finite number")
        return float(value)

    def integer(self, node: yaml.Node, key: str, *, low: int, high: int) -> int:
        value = self.scalar(node, key)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(node, key, f"must be an integer from {low} to {high}")
        return value

    def count(self, node: yaml.Node, key: str) -> int:
        return self.integer(node, key, low=1, high=MAX_COUNT)

    def boolean(self, node: yaml.Node, key: str) -> bool:
        value = self.scalar(node, key)
        if not isinstance(value, bool):
            raise self.fail(node, key, "must be true or false")
        return value

    def sequence(self, node: yaml.Node, key: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, "must be a list")
        return list(node.value)

    def env_value(self, node: yaml.Node, key: str) -> str:
        """A value from the environment: ``NAME`` (for ``*_env`` keys) or ``{env: NAME}``."""
        if isinstance(node, yaml.MappingNode):
            parts = self.mapping(node, key, ("env",))
            if "env" not in parts:
                raise self.fail(node, key, "needs env: VARIABLE")
            node = parts["env"][1]
            key = f"{key}.env"
        name = self.string(node, key)
        if not _ENV_NAME.fullmatch(name):
            raise self.fail(node, key, f"{name!r} is not an environment variable name")
        value = self.environ.get(name)
        if value is None:
            raise self.fail(node, key, f"environment variable {name} is not set")
        return value

    def text_map(self, node: yaml.Node, key: str) -> dict[str, str]:
        """A string map whose values are literals, or ``{env: NAME}`` (required for secrets)."""
        out: dict[str, str] = {}
        for name, (_knode, vnode) in self.mapping(node, key, ()).items():
            sub = f"{key}.{name}"
            if isinstance(vnode, yaml.MappingNode):
                out[name] = self.env_value(vnode, sub)
                continue
            if _SECRET.search(name):
                raise self.fail(
                    vnode, sub, "a secret must come from {env: VARIABLE}, not a literal"
                )
            value = self.scalar(vnode, sub)
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise self.fail(vnode, sub, "must be a string")
            out[name] = str(value)
        return out


def parse_config(
    text: str, *, path: str = "<config>", environ: Mapping[str, str] | None = None
) -> GatewayConfig:
    """Parse and check a configuration document.

    Args:
        text: the YAML text.
        path: the file name errors name.
        environ: where ``env:`` / ``*_env`` values come from (default ``os.environ``).

    Returns:
        The checked :class:`GatewayConfig` (relative ``cwd`` resolved against ``path``'s folder).

    Raises:
        ConfigError: not YAML, an unknown key, a bad or missing value, an unset variable.
    """
    reader = _Reader(path, os.environ if environ is None else environ)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"not valid YAML: {problem}", path=path, line=line, key=None) from exc
    if root is None:
        raise ConfigError("the file is empty (servers: is required)", path=path, line=1, key=None)
    top = reader.mapping(
        root, "", ("servers", "health", "balancer", "clients", "limits", "auth", "registry")
    )
    if "servers" not in top:
        raise reader.fail(root, "servers", "is required (a list of upstream servers)")
    base = Path(path).parent if path != "<config>" else Path.cwd()
    servers = tuple(
        _server(reader, node, f"servers[{i}]", base)
        for i, node in enumerate(reader.sequence(top["servers"][1], "servers"))
    )
    if not servers:
        raise reader.fail(top["servers"][1], "servers", "needs at least one server")
    _check_prefixes(reader, servers, top["servers"][1])
    auth = _auth(reader, top["auth"][1]) if "auth" in top else None
    scoped = next((i for i, server in enumerate(servers) if server.scopes), None)
    if scoped is not None and auth is None:  # a scope nobody checks would protect nothing
        raise ConfigError(
            "scopes apply to OAuth callers: give the gateway an auth: section, or remove them",
            path=reader.path,
            line=servers[scoped].line,
            key=f"servers[{scoped}].scopes",
        )
    clients: tuple[ClientConfig, ...] = ()
    if "clients" in top:
        items = reader.sequence(top["clients"][1], "clients")
        clients = tuple(
            _client(reader, node, f"clients[{i}]", auth) for i, node in enumerate(items)
        )
    limits: dict[str, float] = {}
    if "limits" in top:
        parts = reader.mapping(top["limits"][1], "limits", ("per_tool_rate_per_s",))
        if "per_tool_rate_per_s" in parts:
            key = "limits.per_tool_rate_per_s"
            for glob, (_k, vnode) in reader.mapping(
                parts["per_tool_rate_per_s"][1], key, ()
            ).items():
                limits[glob] = reader.number(vnode, f"{key}.{glob}")
    fleet_servers = True
    if "registry" in top:
        parts = reader.mapping(top["registry"][1], "registry", ("fleet_servers",))
        if "fleet_servers" in parts:
            fleet_servers = reader.boolean(parts["fleet_servers"][1], "registry.fleet_servers")
    return GatewayConfig(
        servers=servers,
        health=_health(reader, top["health"][1]) if "health" in top else HealthConfig(),
        balancer=_balancer(reader, top["balancer"][1]) if "balancer" in top else BalancerConfig(),
        clients=clients,
        per_tool_rate_per_s=limits,
        path=path,
        auth=auth,
        fleet_servers=fleet_servers,
    )


def load_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> GatewayConfig:
    """Read and check a configuration file (see :func:`parse_config`).

    Unlike :func:`parse_config`, this also checks that each ``command:`` names a program
    that exists (on ``PATH``, or relative to its ``cwd``).

    Raises:
        ConfigError: the file cannot be read, :func:`parse_config` refuses it, or a
            ``command:`` names no executable program.
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=name, line=None, key=None) from exc
    config = parse_config(text, path=name, environ=environ)
    _check_commands(config, os.environ if environ is None else environ)
    return config


def _check_commands(config: GatewayConfig, environ: Mapping[str, str]) -> None:
    """Each stdio server's program must exist now: a typo is the file's error, at start,
    not a child the gateway would fail to spawn at every health check for ever."""
    for i, server in enumerate(config.servers):
        if not server.command:
            continue
        program = server.command[0]
        if os.sep in program:  # relative to the child's cwd, as the spawn resolves it
            found = Path(server.cwd or Path.cwd(), program)
            ok = found.is_file() and os.access(found, os.X_OK)
        else:
            search = server.env.get("PATH", environ.get("PATH", os.defpath))
            ok = shutil.which(program, path=search) is not None
        if not ok:
            raise ConfigError(
                f"{program!r} is not an executable file"
                + ("" if os.sep in program else " on PATH"),
                path=config.path,
                line=server.line,
                key=f"servers[{i}].command",
            )


_SERVER_KEYS = (
    "name", "url", "command", "transport", "env", "cwd", "prefix", "timeout_s", "headers",
    "include_drafts", "oauth", "send_caller", "scopes",
)  # fmt: skip
_OAUTH_KEYS = (
    "token_endpoint", "issuer", "client_id", "client_secret", "client_secret_env", "scope",
    "resource", "refresh_ahead_s",
)  # fmt: skip


def _server(reader: _Reader, node: yaml.Node, key: str, base: Path) -> ServerConfig:
    parts = reader.mapping(node, key, _SERVER_KEYS)
    if "name" not in parts:
        raise reader.fail(node, f"{key}.name", "is required")
    name = reader.string(parts["name"][1], f"{key}.name")
    if not _NAME.fullmatch(name):
        raise reader.fail(parts["name"][1], f"{key}.name", "use 1-64 of A-Za-z0-9_.-")
    if ("url" in parts) == ("command" in parts):
        raise reader.fail(node, key, "needs exactly one of url: or command:")
    url = command = None
    if "url" in parts:
        url = reader.string(parts["url"][1], f"{key}.url")
        problem = http_url_problem(url)
        if problem is not None:
            raise reader.fail(parts["url"][1], f"{key}.url", problem)
    else:
        cnode = parts["command"][1]
        items = reader.sequence(cnode, f"{key}.command")
        command = tuple(reader.string(n, f"{key}.command[{i}]") for i, n in enumerate(items))
        if not command:
            raise reader.fail(cnode, f"{key}.command", "must not be empty")
    default = "http" if url is not None else "stdio"
    transport = (
        reader.string(parts["transport"][1], f"{key}.transport")
        if "transport" in parts
        else default
    )
    if transport not in TRANSPORTS:
        raise reader.fail(
            parts["transport"][1], f"{key}.transport", f"must be one of {', '.join(TRANSPORTS)}"
        )
    if (transport == "stdio") != (command is not None):
        where = parts.get("transport", parts.get("url", parts.get("command")))
        assert where is not None
        raise reader.fail(
            where[1],
            f"{key}.transport",
            f"{transport} does not fit {'command' if command else 'url'}:",
        )
    for only in ("env", "cwd"):
        if only in parts and command is None:
            raise reader.fail(parts[only][0], f"{key}.{only}", "applies only to a command: server")
    if "headers" in parts and command is not None:
        raise reader.fail(parts["headers"][0], f"{key}.headers", "applies only to a url: server")
    for only in ("oauth", "send_caller"):
        if only in parts and transport != "http":
            raise reader.fail(parts[only][0], f"{key}.{only}", "applies only to an http server")
    headers: dict[str, str] = _opt(parts, key, "headers", reader.text_map, {})
    oauth = None
    if "oauth" in parts:
        if any(h.lower() == "authorization" for h in headers):
            raise reader.fail(parts["oauth"][0], f"{key}.oauth",
                              "give oauth: or an Authorization header, not both")  # fmt: skip
        assert url is not None
        from airhttp.oauth_config import AuthConfigError, checked_url

        try:  # the gateway's bearer token never crosses a network in clear
            checked_url(url, "url")
        except AuthConfigError as exc:
            raise reader.fail(parts["oauth"][0], f"{key}.url", f"with oauth: {exc}") from None
        oauth = _oauth(reader, parts["oauth"][1], f"{key}.oauth", url)
    prefix = None
    if "prefix" in parts:
        prefix = reader.string(parts["prefix"][1], f"{key}.prefix")
        if not _NAME.fullmatch(prefix) or PREFIX_SEPARATOR in prefix:
            raise reader.fail(
                parts["prefix"][1], f"{key}.prefix", "use 1-64 of A-Za-z0-9_.- without '__'"
            )
    cwd = None
    if "cwd" in parts:
        cwd = str((base / reader.string(parts["cwd"][1], f"{key}.cwd")).resolve())
    return ServerConfig(
        name=name,
        transport=transport,
        url=url,
        command=command or (),
        env=reader.text_map(parts["env"][1], f"{key}.env") if "env" in parts else {},
        cwd=cwd,
        prefix=prefix,
        timeout_s=_opt(parts, key, "timeout_s", reader.number, DEFAULT_TIMEOUT_S),
        headers=headers,
        include_drafts=_opt(parts, key, "include_drafts", reader.boolean, False),
        oauth=oauth,
        send_caller=_opt(parts, key, "send_caller", reader.boolean, False),
        scopes=_server_scopes(reader, parts, key),
        line=node.start_mark.line + 1,
    )  # fmt: skip


def _server_scopes(reader: _Reader, parts: dict[str, Any], key: str) -> frozenset[str]:
    """A server's ``scopes:``: a list of scope names (or one space-separated string)."""
    if "scopes" not in parts:
        return frozenset()
    node = parts["scopes"][1]
    value = yaml.safe_load(yaml.serialize(node))
    if isinstance(value, str):
        value = value.split()
    if (not isinstance(value, list) or not value
            or not all(isinstance(s, str) and s and " " not in s for s in value)):  # fmt: skip
        raise reader.fail(node, f"{key}.scopes", f"must be a list of scope names, got {value!r}")
    return frozenset(value)


def _oauth(reader: _Reader, node: yaml.Node, key: str, url: str) -> UpstreamOAuth:
    """An upstream's ``oauth:``: ``token_endpoint`` or ``issuer``, ``client_id``, the secret
    from the environment (``client_secret: {env: NAME}`` or ``client_secret_env: NAME``),
    ``scope``, ``resource`` (default the url), ``refresh_ahead_s``."""
    from airhttp.oauth_config import AuthConfigError, checked_url

    p = reader.mapping(node, key, _OAUTH_KEYS)
    if ("token_endpoint" in p) == ("issuer" in p):
        raise reader.fail(node, key, "needs exactly one of token_endpoint: or issuer:")
    if "client_id" not in p:
        raise reader.fail(node, f"{key}.client_id", "is required")
    secrets = [k for k in ("client_secret", "client_secret_env") if k in p]
    if len(secrets) != 1:
        raise reader.fail(node, f"{key}.client_secret",
                          "give client_secret: {env: NAME} or client_secret_env: NAME")  # fmt: skip
    secret_node = p[secrets[0]][1]
    if secrets[0] == "client_secret" and not isinstance(secret_node, yaml.MappingNode):
        raise reader.fail(secret_node, f"{key}.client_secret",
                          "a secret must come from {env: VARIABLE}, not a literal")  # fmt: skip
    urls: dict[str, str | None] = {}
    for name in ("token_endpoint", "issuer", "resource"):
        if name not in p:
            urls[name] = None
            continue
        value = reader.string(p[name][1], f"{key}.{name}")
        try:
            urls[name] = checked_url(value, name)
        except AuthConfigError as exc:
            raise reader.fail(p[name][1], f"{key}.{name}", str(exc)) from None
    scope = None
    if "scope" in p:
        snode = p["scope"][1]
        if isinstance(snode, yaml.SequenceNode):
            scope = " ".join(reader.string(n, f"{key}.scope") for n in reader.sequence(snode, ""))
        else:
            scope = reader.string(snode, f"{key}.scope")
    return UpstreamOAuth(
        client_id=reader.string(p["client_id"][1], f"{key}.client_id"),
        client_secret=reader.env_value(secret_node, f"{key}.{secrets[0]}"),
        token_endpoint=urls["token_endpoint"],
        issuer=urls["issuer"],
        scope=scope,
        resource=urls["resource"] or url,
        refresh_ahead_s=_opt(p, key, "refresh_ahead_s", reader.number, DEFAULT_REFRESH_AHEAD_S),
    )


def _check_prefixes(reader: _Reader, servers: tuple[ServerConfig, ...], node: yaml.Node) -> None:
    """Replicas of one name must agree on prefix, drafts and ``send_caller`` (one server)."""
    first: dict[str, ServerConfig] = {}
    for i, server in enumerate(servers):
        seen = first.setdefault(server.name, server)
        if (seen.prefix, seen.include_drafts, seen.send_caller, seen.scopes) != (
            server.prefix, server.include_drafts, server.send_caller, server.scopes
        ):  # fmt: skip
            raise ConfigError(
                f"replicas of {server.name!r} must share prefix, include_drafts, send_caller "
                "and scopes",
                path=reader.path,
                line=server.line,
                key=f"servers[{i}]",
            )


_T = TypeVar("_T")


def _opt(
    parts: dict[str, tuple[yaml.Node, yaml.Node]],
    key: str,
    name: str,
    read: Callable[[yaml.Node, str], _T],
    default: _T,
) -> _T:
    return read(parts[name][1], f"{key}.{name}") if name in parts else default


def _health(reader: _Reader, node: yaml.Node) -> HealthConfig:
    p = reader.mapping(
        node,
        "health",
        ("interval_s", "timeout_s", "unhealthy_after", "healthy_after", "unhealthy_for_s"),
    )
    d = HealthConfig()
    return HealthConfig(
        interval_s=_opt(p, "health", "interval_s", reader.number, d.interval_s),
        timeout_s=_opt(p, "health", "timeout_s", reader.number, d.timeout_s),
        unhealthy_after=_opt(p, "health", "unhealthy_after", reader.count, d.unhealthy_after),
        healthy_after=_opt(p, "health", "healthy_after", reader.count, d.healthy_after),
        unhealthy_for_s=_opt(p, "health", "unhealthy_for_s", reader.number, d.unhealthy_for_s),
    )  # fmt: skip


def _balancer(reader: _Reader, node: yaml.Node) -> BalancerConfig:
    p = reader.mapping(node, "balancer", ("strategy", "retries"))
    strategy = DEFAULT_STRATEGY
    if "strategy" in p:
        strategy = reader.string(p["strategy"][1], "balancer.strategy")
        if strategy not in STRATEGIES:
            raise reader.fail(
                p["strategy"][1], "balancer.strategy", f"must be one of {', '.join(STRATEGIES)}"
            )
    retries = (
        reader.integer(p["retries"][1], "balancer.retries", low=0, high=MAX_RETRIES)
        if "retries" in p
        else DEFAULT_RETRIES
    )
    return BalancerConfig(strategy=strategy, retries=retries)  # fmt: skip


def _auth(reader: _Reader, node: yaml.Node) -> AuthConfig:
    """The ``auth:`` section: the keys of ``air serve --auth-config`` (checked by airhttp)."""
    from airhttp.oauth_config import AuthConfigError, auth_config_from

    reader.mapping(node, "auth", ())  # a mapping, no duplicate keys
    try:
        return auth_config_from(yaml.safe_load(yaml.serialize(node)), environ=reader.environ)
    except AuthConfigError as exc:
        where = node
        assert isinstance(node, yaml.MappingNode)
        for knode, vnode in node.value:
            if knode.value == exc.key.split(".")[0]:
                where = vnode
        raise reader.fail(where, f"auth.{exc.key}" if exc.key else "auth", str(exc)) from None


def _match(reader: _Reader, node: yaml.Node, key: str, auth: AuthConfig | None) -> dict[str, str]:
    if auth is None:
        raise reader.fail(node, key, "needs the auth: section (it matches OAuth token claims)")
    claims = (*MATCH_KEYS, *((auth.group_claim,) if auth.group_claim else ()))
    out: dict[str, str] = {}
    for claim, (_knode, vnode) in reader.mapping(node, key, claims).items():
        value = reader.scalar(vnode, f"{key}.{claim}")
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise reader.fail(vnode, f"{key}.{claim}", "must be a string")
        out[claim] = str(value)
    return out


def _client(reader: _Reader, node: yaml.Node, key: str, auth: AuthConfig | None) -> ClientConfig:
    p = reader.mapping(node, key, ("name", "token_env", "match", "allow", "rate_per_s"))
    if "name" not in p:
        raise reader.fail(node, f"{key}.name", "is required")
    if "token_env" not in p and "match" not in p:
        raise reader.fail(node, f"{key}.token_env", "is required (or match: with auth:)")
    allow: tuple[str, ...] = ("*",)
    if "allow" in p:
        items = reader.sequence(p["allow"][1], f"{key}.allow")
        allow = tuple(reader.string(n, f"{key}.allow[{i}]") for i, n in enumerate(items))
    return ClientConfig(
        name=reader.string(p["name"][1], f"{key}.name"),
        token=reader.env_value(p["token_env"][1], f"{key}.token_env") if "token_env" in p else None,
        allow=allow,
        match=_match(reader, p["match"][1], f"{key}.match", auth) if "match" in p else None,
        rate_per_s=reader.number(p["rate_per_s"][1], f"{key}.rate_per_s")
        if "rate_per_s" in p
        else None,
    )
