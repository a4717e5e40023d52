"""When the OpenTelemetry sink turns on, and where it sends: read from ``OTEL_*`` in one place.

Environment variables read (the standard OpenTelemetry ones):

========================================  ==================================================
``OTEL_SDK_DISABLED``                     ``true`` turns the sink off, whatever else is set
``OTEL_EXPORTER_OTLP_ENDPOINT``           base URL; turns the sink on (``/v1/traces`` and
                                          ``/v1/metrics`` are appended for HTTP)
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``    full traces URL; turns the sink on
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``   full metrics URL; turns the sink on
``OTEL_EXPORTER_OTLP_PROTOCOL``           ``http/protobuf`` (default) or ``grpc``
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``    per signal; wins over the general one
``OTEL_EXPORTER_OTLP_METRICS_PROTOCOL``   per signal; wins over the general one
``OTEL_SERVICE_NAME``                     ``service.name`` of the resource
``OTEL_BSP_MAX_QUEUE_SIZE``               spans held before new ones are dropped (2048)
``OTEL_BSP_SCHEDULE_DELAY``               ms between span exports (1000)
``OTEL_METRIC_EXPORT_INTERVAL``           ms between metric exports (10000)
========================================  ==================================================

Headers, certificates and compression (``OTEL_EXPORTER_OTLP_HEADERS`` …) are read by the
OTLP exporters themselves from the process environment.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import urlsplit

from airmeter.errors import MeterConfigError

__all__ = [
    "DEFAULT_EXPORT_TIMEOUT_S",
    "OtelSettings",
    "Protocol",
    "otel_enabled",
    "otel_settings",
]

logger = logging.getLogger(__name__)

Protocol = Literal["http/protobuf", "grpc"]

DEFAULT_EXPORT_TIMEOUT_S: Final = 0.8
"""Cap on one export attempt (and its retries), so a dead or slow collector cannot hold
shutdown for long: traces and metrics shut down in parallel, each bounded by this."""
DEFAULT_MAX_QUEUE_SIZE: Final = 2048
DEFAULT_SCHEDULE_DELAY_MS: Final = 1000
DEFAULT_METRIC_INTERVAL_MS: Final = 10_000
DEFAULT_SERVICE_NAME: Final = "air"
_HTTP_BASE: Final = "http://localhost:4318"
_GRPC_BASE: Final = "http://localhost:4317"
_ENDPOINT_VARS: Final = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OtelSettings:
    """Resolved configuration of an :class:`~airmeter.otel.OtelSink`.

    Endpoints are complete: an HTTP endpoint includes its ``/v1/traces`` or ``/v1/metrics``
    path; a gRPC endpoint is the collector's base URL.
    """

    enabled: bool
    service_name: str = DEFAULT_SERVICE_NAME
    traces_endpoint: str = f"{_HTTP_BASE}/v1/traces"
    metrics_endpoint: str = f"{_HTTP_BASE}/v1/metrics"
    traces_protocol: Protocol = "http/protobuf"
    metrics_protocol: Protocol = "http/protobuf"
    export_timeout_s: float = DEFAULT_EXPORT_TIMEOUT_S
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE
    schedule_delay_ms: int = DEFAULT_SCHEDULE_DELAY_MS
    metric_interval_ms: int = DEFAULT_METRIC_INTERVAL_MS


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


def otel_enabled(env: Mapping[str, str] | None = None, *, requested: bool = False) -> bool:
    """Whether the OpenTelemetry sink should run.

    Args:
        env: The environment to read; ``os.environ`` by default.
        requested: The user asked for it in code or with ``--otel``.

    Returns:
        ``False`` when ``OTEL_SDK_DISABLED=true``; otherwise ``True`` when ``requested`` or any
        OTLP endpoint variable is set.
    """
    env = os.environ if env is None else env
    if _truthy(env.get("OTEL_SDK_DISABLED")):
        return False
    return requested or any(_get(env, name) for name in _ENDPOINT_VARS)


def _protocol(env: Mapping[str, str], signal: str) -> Protocol:
    raw = _get(env, f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or _get(
        env, "OTEL_EXPORTER_OTLP_PROTOCOL"
    )
    if raw is None or raw == "http/protobuf":
        return "http/protobuf"
    if raw == "grpc":
        return "grpc"
    # Telemetry never breaks the app: an unsupported protocol (http/json) falls back loudly.
    logger.warning("OTLP protocol %r is not supported; using http/protobuf", raw)
    return "http/protobuf"


def _endpoint(env: Mapping[str, str], signal: str, protocol: Protocol) -> str:
    specific = _get(env, f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    if specific is not None:
        return specific
    base = _get(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
    if protocol == "grpc":
        return base or _GRPC_BASE
    return f"{(base or _HTTP_BASE).rstrip('/')}/v1/{signal.lower()}"


_warned_endpoints: set[tuple[str, str]] = set()


def _malformed_endpoint(env: Mapping[str, str]) -> tuple[str, str] | None:
    """The first endpoint variable whose value is not an ``http(s)://host[:port]`` URL."""
    for name in _ENDPOINT_VARS:
        value = _get(env, name)
        if value is None:
            continue
        try:
            parts = urlsplit(value)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname)
            ok = ok and (parts.port is None or parts.port > 0)
        except ValueError:  # e.g. an unclosed [IPv6 bracket or a port that is not a number
            ok = False
        if not ok:
            return name, value
    return None


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = _get(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        logger.warning("%s=%r is not a positive integer; using %d", name, raw, default)
        return default
    return value


def _service_name(env: Mapping[str, str], default: str) -> str:
    name = _get(env, "OTEL_SERVICE_NAME")
    if name is not None:
        return name
    for pair in (env.get("OTEL_RESOURCE_ATTRIBUTES") or "").split(","):
        key, _, value = pair.partition("=")
        if key.strip() == "service.name" and value.strip():
            return value.strip()
    return default


def otel_settings(
    env: Mapping[str, str] | None = None,
    *,
    requested: bool = False,
    service_name: str = DEFAULT_SERVICE_NAME,
    export_timeout_s: float = DEFAULT_EXPORT_TIMEOUT_S,
) -> OtelSettings:
    """Resolve the sink's settings from the environment.

    Args:
        env: The environment to read; ``os.environ`` by default.
        requested: The user asked for the sink in code or with ``--otel``.
        service_name: ``service.name`` when neither ``OTEL_SERVICE_NAME`` nor
            ``OTEL_RESOURCE_ATTRIBUTES`` names one (usually the server's name).
        export_timeout_s: Cap on one export attempt, retries included.

    Returns:
        The settings; ``enabled`` follows :func:`otel_enabled`, except that a malformed
        endpoint URL turns export off (one warning per value). Other malformed values are
        logged and replaced by defaults, never raised: telemetry must not stop a server
        starting.

    Raises:
        MeterConfigError: ``export_timeout_s`` is not positive (a programming error, not config).
    """
    if export_timeout_s <= 0:
        raise MeterConfigError(f"export_timeout_s must be > 0, got {export_timeout_s!r}")
    env = os.environ if env is None else env
    traces_protocol = _protocol(env, "TRACES")
    metrics_protocol = _protocol(env, "METRICS")
    enabled = otel_enabled(env, requested=requested)
    malformed = _malformed_endpoint(env) if enabled else None
    if malformed is not None:  # telemetry never breaks the caller: say it once, export off
        enabled = False
        if malformed not in _warned_endpoints:
            _warned_endpoints.add(malformed)
            logger.warning(
                "%s=%r is not an http(s)://host[:port] URL; OpenTelemetry export is off", *malformed
            )
    return OtelSettings(
        enabled=enabled,
        service_name=_service_name(env, service_name),
        traces_endpoint=_endpoint(env, "TRACES", traces_protocol),
        metrics_endpoint=_endpoint(env, "METRICS", metrics_protocol),
        traces_protocol=traces_protocol,
        metrics_protocol=metrics_protocol,
        export_timeout_s=export_timeout_s,
        max_queue_size=_positive_int(env, "OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_MAX_QUEUE_SIZE),
        schedule_delay_ms=_positive_int(env, "OTEL_BSP_SCHEDULE_DELAY", DEFAULT_SCHEDULE_DELAY_MS),
        metric_interval_ms=_positive_int(
            env, "OTEL_METRIC_EXPORT_INTERVAL", DEFAULT_METRIC_INTERVAL_MS
        ),
    )
