"""airmeter: classify, record, aggregate and export every MCP tool call."""

import importlib
from typing import TYPE_CHECKING, Any

from airmeter.classify import Classification, Classifier, Rule, classify, split_words
from airmeter.layers import LAYERS, Layer, LayerInfo, parse_layer
from airmeter.metrics_app import metrics_app
from airmeter.otel_settings import OtelSettings, otel_enabled, otel_settings
from airmeter.prometheus import PrometheusSink
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.types import Recorder, Sink

if TYPE_CHECKING:
    from airmeter.otel import OtelSink
    from airmeter.otel_span import annotate_current_span

__all__ = [
    "CALLS_NAMESPACE",
    "LAYERS",
    "CallRecord",
    "Classification",
    "Classifier",
    "Layer",
    "LayerInfo",
    "OtelSettings",
    "OtelSink",
    "PrometheusSink",
    "Recorder",
    "Rule",
    "Sink",
    "annotate_current_span",
    "classify",
    "metrics_app",
    "otel_enabled",
    "otel_settings",
    "parse_layer",
    "split_words",
]

# The OpenTelemetry SDK costs ~0.2 s to import: loaded on first use, not with `import airmeter`.
_LAZY = {"OtelSink": "airmeter.otel", "annotate_current_span": "airmeter.otel_span"}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
