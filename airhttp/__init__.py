"""airhttp: what every HTTP surface of air shares (the MCP endpoint, the dashboard, /metrics
and the gateway): the Host/Origin/loopback/bearer guards, media-type parsing, the limits
(header and idle timeouts, connection and in-flight caps, body size), and the HTTP/1.1 server
that serves ASGI apps under them (:class:`HttpServer`, :func:`serve`). It imports none of
air's packages."""

from airhttp._platform import on_stop_signals
from airhttp.asgi import GuardedApp, json_refusal, send_refusal, text_refusal
from airhttp.errors import AirhttpError, LimitsError, ServerError
from airhttp.guards import LOCAL_HOSTS, bearer_token, host_ok, is_loopback, origin_ok, token_ok
from airhttp.identity import AuthKind, Identity, current_identity, use_identity
from airhttp.limits import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_MAX_RECEIVING,
    Limits,
)
from airhttp.logs import RepeatFilter
from airhttp.media import accepts, media_type
from airhttp.oauth_config import AuthConfig, AuthConfigError, auth_config_from, load_auth_config
from airhttp.oauth_guard import OAuthGuard
from airhttp.oauth_verify import AuthRefusedError, TokenVerifier
from airhttp.policy import AccessPolicy, Refusal
from airhttp.server import DEFAULT_GRACE, HttpServer, ServerStats, listen_socket, serve
from airhttp.types import Answer, ASGIApp, FastHandler, Message, Receive, Scope, Send
from airhttp.wsgi import GuardedWSGI, wsgi_refusal

__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_MAX_RECEIVING",
    "LOCAL_HOSTS",
    "ASGIApp",
    "AccessPolicy",
    "AirhttpError",
    "Answer",
    "AuthConfig",
    "AuthConfigError",
    "AuthKind",
    "AuthRefusedError",
    "FastHandler",
    "GuardedApp",
    "GuardedWSGI",
    "HttpServer",
    "Identity",
    "Limits",
    "LimitsError",
    "Message",
    "OAuthGuard",
    "Receive",
    "Refusal",
    "RepeatFilter",
    "Scope",
    "Send",
    "ServerError",
    "ServerStats",
    "TokenVerifier",
    "accepts",
    "auth_config_from",
    "bearer_token",
    "current_identity",
    "host_ok",
    "is_loopback",
    "json_refusal",
    "listen_socket",
    "load_auth_config",
    "media_type",
    "on_stop_signals",
    "origin_ok",
    "send_refusal",
    "serve",
    "text_refusal",
    "token_ok",
    "use_identity",
    "wsgi_refusal",
]
