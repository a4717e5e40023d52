"""airmeter: classify, record, aggregate and export every MCP tool call."""

from airmeter.layers import LAYERS, Layer, LayerInfo, parse_layer
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airmeter.types import Recorder, Sink

__all__ = [
    "CALLS_NAMESPACE",
    "LAYERS",
    "CallRecord",
    "Layer",
    "LayerInfo",
    "Recorder",
    "Sink",
    "parse_layer",
]
