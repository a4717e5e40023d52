"""airmeter: classify, record, aggregate and export every MCP tool call."""

from typing import TYPE_CHECKING, Any

from airmeter.budget import Budget, BudgetStatus
from airmeter.classify import Classification, Classifier, Rule, classify, split_words
from airmeter.clients import ClientRow, ClientUsage, client_usage
from airmeter.engine import MeterEngine
from airmeter.errors import (
    AirmeterError,
    BudgetExceededError,
    MeterClosedError,
    MeterConfigError,
)
from airmeter.health import MeterHealth, meter_health
from airmeter.layers import LAYERS, Layer, LayerInfo, parse_layer
from airmeter.meter import Meter, MeterStats
from airmeter.metrics_app import metrics_app
from airmeter.middleware import MeterMiddleware, create_meter_hook
from airmeter.otel_settings import OtelSettings, otel_enabled, otel_settings
from airmeter.outcome import ERROR_CLASSES, RATE_CLASSES, ErrorClass, error_class_of
from airmeter.prometheus import PrometheusSink
from airmeter.prometheus_snapshot import render_snapshot
from airmeter.readers import has_calls, recent_calls
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.redact import Redactor, redact, redact_text
from airmeter.rollup_reader import RollupReader
from airmeter.rollups import ROLLUPS_NAMESPACE
from airmeter.slo import SloStatus, evaluate_slos
from airmeter.slo_alerts import SloAlert, SloWatcher
from airmeter.slo_config import Objective
from airmeter.snapshot import snapshot
from airmeter.snapshot_types import LayerStats, SeriesPoint, ServerStats, Snapshot, ToolStats
from airmeter.store_sink import StoreSink
from airmeter.testing import MemorySink
from airmeter.types import CallInfo, CallSuspended, PersistingSink, Recorder, Sink
from airmeter.usage import CallUsage, current_usage, report_usage

if TYPE_CHECKING:
    from airmeter.otel import OtelSink
    from airmeter.otel_span import annotate_current_span

__all__ = [
    "CALLS_NAMESPACE",
    "ERROR_CLASSES",
    "LAYERS",
    "RATE_CLASSES",
    "ROLLUPS_NAMESPACE",
    "AirmeterError",
    "Budget",
    "BudgetExceededError",
    "BudgetStatus",
    "CallInfo",
    "CallRecord",
    "CallSuspended",
    "CallUsage",
    "Classification",
    "Classifier",
    "ClientRow",
    "ClientUsage",
    "ErrorClass",
    "Layer",
    "LayerInfo",
    "LayerStats",
    "MemorySink",
    "Meter",
    "MeterClosedError",
    "MeterConfigError",
    "MeterEngine",
    "MeterHealth",
    "MeterMiddleware",
    "MeterStats",
    "Objective",
    "OtelSettings",
    "OtelSink",
    "PersistingSink",
    "PrometheusSink",
    "Recorder",
    "Redactor",
    "RollupReader",
    "Rule",
    "SeriesPoint",
    "ServerStats",
    "Sink",
    "SloAlert",
    "SloStatus",
    "SloWatcher",
    "Snapshot",
    "StoreSink",
    "ToolStats",
    "annotate_current_span",
    "classify",
    "client_usage",
    "create_meter_hook",
    "current_usage",
    "error_class_of",
    "evaluate_slos",
    "has_calls",
    "meter_health",
    "metrics_app",
    "otel_enabled",
    "otel_settings",
    "parse_layer",
    "recent_calls",
    "redact",
    "redact_text",
    "render_snapshot",
    "report_usage",
    "snapshot",
    "split_words",
]


def __getattr__(name: str) -> Any:
    # The OpenTelemetry SDK costs ~0.2 s to import: loaded on first use, not with `import airmeter`.
    if name == "OtelSink":
        from airmeter import otel

        return otel.OtelSink
    if name == "annotate_current_span":
        from airmeter import otel_span

        return otel_span.annotate_current_span
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
