"""The resource server's configuration (``air serve --auth-config FILE``, the gateway's ``auth:``).

```yaml
issuer: https://login.example.com/      # its metadata (RFC 8414 / OIDC discovery) gives jwks_uri
resource: https://notes.example.com/mcp # this server's canonical URI: the required `aud`
scopes: [mcp:tools]                     # required for every request, tools/list included
tools: {"delete_*": [notes:write]}      # extra scopes per tool glob
client_claim: client_id                 # the claim metered as the client (then azp)
```

More keys: ``issuers`` (a list, instead of ``issuer``), ``jwks_uri`` (skip discovery),
``introspection`` (``{endpoint, client_id, client_secret_env}`` for opaque tokens, RFC 7662),
``leeway_s`` (default 30), ``algorithms`` (a subset of RS256, PS256, ES256, EdDSA, Ed25519),
``cache_max_s`` (the longest a verified token is trusted without a new check, default 300),
``cache_size`` (default 10,000), ``jwks_min_refresh_s`` (default 30), ``jwks_max_age_s`` (keys
are fetched again when older, default 600: a key the issuer removed stops being trusted),
``timeout_s`` (the
issuer's endpoints, default 5), ``authorization_servers`` (advertised, default the issuers),
``require_at_jwt`` (default true: a JWT access token must carry ``typ: at+jwt``, RFC 9068 §4, so
an ID token or another JWT of the issuer is not taken for one; false for issuers that do not set
it, such as Auth0 and Entra ID v1 tokens).
Issuer, resource and endpoint URLs must be ``https://``, except on loopback hosts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airhttp.errors import AirhttpError
from airhttp.guards import is_loopback

__all__ = [
    "ALGORITHMS",
    "AuthConfig",
    "AuthConfigError",
    "auth_config_from",
    "checked_url",
    "load_auth_config",
]

ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA", "Ed25519")
"""Asymmetric algorithms only: never ``none``, never an HMAC (which a public key would sign)."""

_KEYS = frozenset(
    {
        "issuer",
        "issuers",
        "resource",
        "scopes",
        "tools",
        "client_claim",
        "group_claim",
        "jwks_uri",
        "introspection",
        "leeway_s",
        "algorithms",
        "cache_max_s",
        "cache_size",
        "jwks_min_refresh_s",
        "jwks_max_age_s",
        "timeout_s",
        "authorization_servers",
        "require_at_jwt",
    }
)


class AuthConfigError(AirhttpError):
    """An authorization configuration that cannot be used (names the key)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True, kw_only=True)
class Introspection:
    """An RFC 7662 introspection endpoint and this server's credentials for it."""

    endpoint: str
    client_id: str
    client_secret: str
    require_audience: bool = True
    """Refuse an active token whose introspection answer names no ``aud`` (it could be for
    any API of the issuer); ``require_audience: false`` accepts it (an issuer with one API)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthConfig:
    """A checked resource-server configuration (see the module docstring)."""

    issuers: tuple[str, ...]
    resource: str
    scopes: frozenset[str]
    tools: tuple[tuple[str, frozenset[str]], ...]
    client_claim: str = "client_id"
    group_claim: str | None = None
    jwks_uri: str | None = None
    introspection: Introspection | None = None
    leeway_s: float = 30.0
    algorithms: tuple[str, ...] = ALGORITHMS
    cache_max_s: float = 300.0
    cache_size: int = 10_000
    jwks_min_refresh_s: float = 30.0
    jwks_max_age_s: float = 600.0
    timeout_s: float = 5.0
    authorization_servers: tuple[str, ...] = ()
    require_at_jwt: bool = True
    """A JWT access token must say ``typ: at+jwt`` (or ``application/at+jwt``), RFC 9068 §4."""

    @property
    def metadata_path(self) -> str:
        """The path of this resource's metadata (RFC 9728 §3: the well-known prefix, then the
        resource's own path)."""
        path = urlsplit(self.resource).path.rstrip("/")
        return "/.well-known/oauth-protected-resource" + path

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728)."""
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers or self.issuers),
            "scopes_supported": sorted(self.scopes.union(*(scopes for _, scopes in self.tools))),
            "bearer_methods_supported": ["header"],
        }
        return doc


def checked_url(value: object, key: str) -> str:
    """``value`` if it is an ``https://`` URL (or ``http://`` on a loopback host).

    Raises:
        AuthConfigError: naming ``key``.
    """
    return _url(value, key)


def _url(value: object, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise AuthConfigError(f"{key} must be a URL, got {value!r}", key=key)
    parts = urlsplit(value)
    if parts.scheme == "https" and parts.hostname:
        return value
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return value
    raise AuthConfigError(
        f"{key} must be an https:// URL (http:// only for 127.0.0.1, ::1 or localhost), "
        f"got {value!r}",
        key=key,
    )


def _scopes(value: object, key: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list | tuple) or not all(
        isinstance(s, str) and s and " " not in s for s in value
    ):
        raise AuthConfigError(f"{key} must be a list of scope names, got {value!r}", key=key)
    return frozenset(value)


def _number(doc: Mapping[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise AuthConfigError(f"{key} must be a number, got {value!r}", key=key)
    if not low <= value <= high:
        raise AuthConfigError(f"{key} must be between {low} and {high}, got {value!r}", key=key)
    return float(value)


def auth_config_from(doc: object, *, environ: Mapping[str, str] | None = None) -> AuthConfig:
    """Check a parsed configuration document.

    Raises:
        AuthConfigError: naming the first bad or unknown key.
    """
    env = os.environ if environ is None else environ
    if not isinstance(doc, Mapping):
        raise AuthConfigError("the authorization configuration must be a mapping", key="")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise AuthConfigError(
            f"unknown key {unknown[0]!r} in the authorization configuration; known: "
            f"{', '.join(sorted(_KEYS))}",
            key=str(unknown[0]),
        )
    if "issuer" in doc and "issuers" in doc:
        raise AuthConfigError("give issuer or issuers, not both", key="issuers")
    raw_issuers = doc.get("issuers", [doc["issuer"]] if "issuer" in doc else None)
    if not isinstance(raw_issuers, list) or not raw_issuers:
        raise AuthConfigError("issuer (or issuers) is required", key="issuer")
    issuers = tuple(_url(i, "issuer") for i in raw_issuers)
    if doc.get("jwks_uri") and len(issuers) > 1:
        raise AuthConfigError(
            "jwks_uri names one key set: with several issuers each would trust the others' "
            "keys; leave it out (each issuer's metadata names its own)",
            key="jwks_uri",
        )
    if "resource" not in doc:
        raise AuthConfigError("resource (this server's canonical URI) is required", key="resource")
    resource = _url(doc["resource"], "resource")
    tools_doc = doc.get("tools") or {}
    if not isinstance(tools_doc, Mapping) or not all(isinstance(k, str) for k in tools_doc):
        raise AuthConfigError("tools must map tool-name globs to scopes", key="tools")
    tools = tuple((glob, _scopes(s, f"tools.{glob}")) for glob, s in tools_doc.items())
    algorithms = doc.get("algorithms", list(ALGORITHMS))
    if (
        not isinstance(algorithms, list)
        or not algorithms
        or any(a not in ALGORITHMS for a in algorithms)
    ):
        raise AuthConfigError(
            f"algorithms must be a subset of {list(ALGORITHMS)}, got {algorithms!r}",
            key="algorithms",
        )
    introspection = None
    if doc.get("introspection") is not None:
        spec = doc["introspection"]
        if not isinstance(spec, Mapping):
            raise AuthConfigError("introspection must be a mapping", key="introspection")
        secret_env = spec.get("client_secret_env")
        secret = env.get(secret_env, "") if isinstance(secret_env, str) else ""
        if not isinstance(spec.get("client_id"), str) or not secret:
            raise AuthConfigError(
                "introspection needs client_id and client_secret_env naming a set variable",
                key="introspection",
            )
        require = spec.get("require_audience", True)
        if not isinstance(require, bool):
            raise AuthConfigError(
                "introspection.require_audience must be true or false",
                key="introspection.require_audience",
            )
        introspection = Introspection(
            endpoint=_url(spec.get("endpoint"), "introspection.endpoint"),
            client_id=spec["client_id"],
            client_secret=secret,
            require_audience=require,
        )
    for key in ("client_claim", "group_claim"):
        if key in doc and not (isinstance(doc[key], str) and doc[key]):
            raise AuthConfigError(f"{key} must be a claim name", key=key)
    require_at_jwt = doc.get("require_at_jwt", True)
    if not isinstance(require_at_jwt, bool):
        raise AuthConfigError("require_at_jwt must be true or false", key="require_at_jwt")
    servers = doc.get("authorization_servers") or []
    if not isinstance(servers, list):
        raise AuthConfigError(
            "authorization_servers must be a list of URLs", key="authorization_servers"
        )
    return AuthConfig(
        issuers=issuers,
        resource=resource,
        scopes=_scopes(doc.get("scopes"), "scopes"),
        tools=tools,
        client_claim=doc.get("client_claim", "client_id"),
        group_claim=doc.get("group_claim"),
        jwks_uri=_url(doc["jwks_uri"], "jwks_uri") if doc.get("jwks_uri") else None,
        introspection=introspection,
        leeway_s=_number(doc, "leeway_s", 30.0, 0, 300),
        algorithms=tuple(algorithms),
        cache_max_s=_number(doc, "cache_max_s", 300.0, 0, 86_400),
        cache_size=int(_number(doc, "cache_size", 10_000, 0, 1_000_000)),
        jwks_min_refresh_s=_number(doc, "jwks_min_refresh_s", 30.0, 0.01, 86_400),
        jwks_max_age_s=_number(doc, "jwks_max_age_s", 600.0, 1, 86_400),
        timeout_s=_number(doc, "timeout_s", 5.0, 0.05, 60),
        authorization_servers=tuple(_url(s, "authorization_servers") for s in servers),
        require_at_jwt=require_at_jwt,
    )


def load_auth_config(path: str) -> AuthConfig:
    """Read and check a YAML (or JSON) authorization configuration file.

    Raises:
        AuthConfigError: the file cannot be read or parsed, or a key is bad.
    """
    import yaml  # imported only when a configuration is read

    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise AuthConfigError(
            f"cannot read the authorization configuration {path!r}: {exc}", key=""
        ) from exc
    return auth_config_from(doc)
