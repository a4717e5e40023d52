"""Build OTLP exporters for the chosen protocol; gRPC only when its package is installed."""

from __future__ import annotations

import importlib
import logging
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.trace.export import SpanExporter

from airmeter.otel_settings import OtelSettings

__all__ = ["metric_exporter", "span_exporter"]

logger = logging.getLogger(__name__)

_GRPC_TRACES = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
_GRPC_METRICS = "opentelemetry.exporter.otlp.proto.grpc.metric_exporter"


def _grpc(module: str, cls: str, endpoint: str, timeout: float) -> Any:
    try:
        exporter_type = getattr(importlib.import_module(module), cls)
    except ImportError:
        return None
    return exporter_type(endpoint=endpoint, timeout=timeout)


def _http_fallback(endpoint: str, signal: str) -> str:
    logger.warning(
        "OTLP gRPC requested but opentelemetry-exporter-otlp-proto-grpc is not installed; "
        "exporting %s over HTTP instead",
        signal,
    )
    return f"{endpoint.rstrip('/')}/v1/{signal}"


def span_exporter(settings: OtelSettings) -> SpanExporter:
    """The OTLP span exporter the settings ask for, each export bounded by its timeout."""
    endpoint = settings.traces_endpoint
    if settings.traces_protocol == "grpc":
        exporter = _grpc(_GRPC_TRACES, "OTLPSpanExporter", endpoint, settings.export_timeout_s)
        if exporter is not None:
            return exporter  # type: ignore[no-any-return]  # optional package, untyped here
        endpoint = _http_fallback(endpoint, "traces")
    return OTLPSpanExporter(endpoint=endpoint, timeout=settings.export_timeout_s)


def metric_exporter(settings: OtelSettings) -> MetricExporter:
    """The OTLP metric exporter the settings ask for, each export bounded by its timeout."""
    endpoint = settings.metrics_endpoint
    if settings.metrics_protocol == "grpc":
        exporter = _grpc(_GRPC_METRICS, "OTLPMetricExporter", endpoint, settings.export_timeout_s)
        if exporter is not None:
            return exporter  # type: ignore[no-any-return]  # optional package, untyped here
        endpoint = _http_fallback(endpoint, "metrics")
    return OTLPMetricExporter(endpoint=endpoint, timeout=settings.export_timeout_s)
