"""airmeter: classify, record, aggregate and export every MCP tool call."""

from airmeter.budget import Budget, BudgetStatus
from airmeter.classify import Classification, Classifier, Rule, classify, split_words
from airmeter.errors import (
    AirmeterError,
    BudgetExceededError,
    MeterClosedError,
    MeterConfigError,
)
from airmeter.layers import LAYERS, Layer, LayerInfo, parse_layer
from airmeter.meter import Meter, MeterStats
from airmeter.middleware import MeterMiddleware, create_meter_hook
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.redact import Redactor, redact
from airmeter.rollups import ROLLUPS_NAMESPACE
from airmeter.snapshot import snapshot
from airmeter.snapshot_types import LayerStats, SeriesPoint, ServerStats, Snapshot, ToolStats
from airmeter.store_sink import StoreSink
from airmeter.testing import MemorySink
from airmeter.types import Recorder, Sink
from airmeter.usage import CallUsage, current_usage, report_usage

__all__ = [
    "CALLS_NAMESPACE",
    "LAYERS",
    "ROLLUPS_NAMESPACE",
    "AirmeterError",
    "Budget",
    "BudgetExceededError",
    "BudgetStatus",
    "CallRecord",
    "CallUsage",
    "Classification",
    "Classifier",
    "Layer",
    "LayerInfo",
    "LayerStats",
    "MemorySink",
    "Meter",
    "MeterClosedError",
    "MeterConfigError",
    "MeterMiddleware",
    "MeterStats",
    "Recorder",
    "Redactor",
    "Rule",
    "SeriesPoint",
    "ServerStats",
    "Sink",
    "Snapshot",
    "StoreSink",
    "ToolStats",
    "classify",
    "create_meter_hook",
    "current_usage",
    "parse_layer",
    "redact",
    "report_usage",
    "snapshot",
    "split_words",
]
