"""One HTTP surface's protection, written once for ``air serve`` and ``air gateway``: the
:class:`~airhttp.GuardedApp` (Host, Origin, body and in-flight limits, a static token) and, with
an authorization configuration, the :class:`~airhttp.OAuthGuard` inside it; and the server's fast
path behind the same two."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from airhttp.asgi import GuardedApp, RenderRefusal, json_refusal
from airhttp.limits import Limits
from airhttp.oauth_config import AuthConfig
from airhttp.oauth_guard import OAuthGuard
from airhttp.oauth_verify import TokenVerifier
from airhttp.policy import AccessPolicy
from airhttp.types import ASGIApp, FastHandler

__all__ = ["guard_app", "guarded_fast", "oauth_of"]


def guard_app(
    app: ASGIApp,
    *,
    policy: AccessPolicy,
    limits: Limits,
    render: RenderRefusal = json_refusal,
    auth: AuthConfig | None = None,
    static_clients: Mapping[str, str] | None = None,
    tool_scopes: Callable[[str], frozenset[str]] | None = None,
    tools_scoped: Callable[[], bool] | None = None,
    more_scopes: frozenset[str] = frozenset(),
) -> GuardedApp:
    """``app`` behind ``policy`` and ``limits``, and with ``auth`` an OAuth 2.1 resource server.

    With ``auth``, the policy's static token (if any) moves into the OAuth guard, which accepts
    it beside OAuth tokens (``auth="token"``), as it accepts each of ``static_clients`` (token
    -> the client id it is metered as). ``tool_scopes`` names more scopes a tool needs (the
    gateway: its upstream's ``scopes:``), listed in the metadata with ``more_scopes``; while
    ``tools_scoped`` says it names none (asked per request), bodies are not parsed for it.

    Returns:
        The :class:`GuardedApp`; its ``app`` is the :class:`OAuthGuard` when ``auth`` is given.
    """
    if auth is None:
        return GuardedApp(app, policy=policy, limits=limits, render=render)
    outer = AccessPolicy(
        check_host=policy.check_host,
        allowed_hosts=policy.allowed_hosts,
        allowed_origins=policy.allowed_origins,
    )
    guard = OAuthGuard(
        app,
        TokenVerifier(auth),
        static_token=policy.token,
        static_clients=static_clients,
        tool_scopes=tool_scopes,
        tools_scoped=tools_scoped,
        more_scopes=more_scopes,
    )
    return GuardedApp(guard, policy=outer, limits=limits, render=render)


def oauth_of(app: GuardedApp) -> OAuthGuard | None:
    """The OAuth guard :func:`guard_app` put in ``app``, or ``None``."""
    return app.app if isinstance(app.app, OAuthGuard) else None


def guarded_fast(app: GuardedApp, handler: FastHandler) -> FastHandler:
    """``handler`` (the routes' raw-request hook) behind ``app``'s guards, the OAuth one too."""
    oauth = oauth_of(app)
    return app.guard_fast(handler if oauth is None else oauth.guard_fast(handler))
