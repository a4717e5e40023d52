"""airgateway: one MCP endpoint in front of many upstream servers (seed 001's gateway).

:func:`load_config` reads and checks ``gateway.yml``; :class:`Gateway` holds the Server
Registry (replicas and their upstream connections), the Tool Index, the Router and Load
Balancer, the Health Checker and access control; :func:`serve_gateway` serves it over
Streamable HTTP (``/mcp`` in both eras, ``/status``).
"""

from airgateway.config import (
    BalancerConfig,
    ClientConfig,
    GatewayConfig,
    HealthConfig,
    ServerConfig,
    load_config,
    parse_config,
)
from airgateway.errors import (
    AccessDeniedError,
    ConfigError,
    GatewayError,
    RateLimitedError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
)
from airgateway.gateway import Gateway
from airgateway.metering import GatewayMeter
from airgateway.serve import build_gateway_app, serve_gateway

__all__ = [
    "AccessDeniedError",
    "BalancerConfig",
    "ClientConfig",
    "ConfigError",
    "Gateway",
    "GatewayConfig",
    "GatewayError",
    "GatewayMeter",
    "HealthConfig",
    "RateLimitedError",
    "ServerConfig",
    "UpstreamError",
    "UpstreamTimeoutError",
    "UpstreamUnavailableError",
    "build_gateway_app",
    "load_config",
    "parse_config",
    "serve_gateway",
]
