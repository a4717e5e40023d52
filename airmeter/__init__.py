"""airmeter: classify, record, aggregate and export every MCP tool call."""

from airmeter.classify import Classification, Classifier, Rule, classify, split_words
from airmeter.layers import LAYERS, Layer, LayerInfo, parse_layer
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.types import Recorder, Sink

__all__ = [
    "CALLS_NAMESPACE",
    "LAYERS",
    "CallRecord",
    "Classification",
    "Classifier",
    "Layer",
    "LayerInfo",
    "Recorder",
    "Rule",
    "Sink",
    "classify",
    "parse_layer",
    "split_words",
]
