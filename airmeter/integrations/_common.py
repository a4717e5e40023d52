"""What both adapters share: classifying, timing, sizing and handing a record over safely."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from airmeter.classify import Classifier
from airmeter.layers import Layer
from airmeter.otel_span import annotate_current_span
from airmeter.record import CallRecord
from airmeter.types import Recorder

__all__ = ["CallMeter", "LayerOf", "json_size", "make_call_meter"]

logger = logging.getLogger(__name__)

LayerOf = Callable[[str], Layer]
"""Maps a tool name to its layer; :meth:`airmeter.Classifier.layer_of` is one."""

TOOL_ERROR = "tool_error"


def make_call_meter(
    recorder: Recorder,
    *,
    server_name: str | None,
    layer_of: LayerOf | None,
    classifier: Classifier | None,
    measure_sizes: bool,
) -> CallMeter:
    """Fill the defaults from the recorder when it is a :class:`~airmeter.Meter`: its
    classifier (shared cache and user rules) and its server name."""
    if classifier is None:
        own = getattr(recorder, "classifier", None)
        classifier = own if isinstance(own, Classifier) else Classifier()
    if server_name is None:
        own_name = getattr(recorder, "server", None)
        server_name = own_name if isinstance(own_name, str) else ""
    return CallMeter(
        recorder=recorder,
        server=server_name,
        layer_of=layer_of,
        classifier=classifier,
        measure_sizes=measure_sizes,
    )


def json_size(value: object) -> int | None:
    """Bytes of ``value`` as compact JSON, or ``None`` when it is not JSON-serializable."""
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class CallMeter:
    """The adapter-independent half of a metering middleware."""

    recorder: Recorder
    server: str
    layer_of: LayerOf | None
    classifier: Classifier
    measure_sizes: bool

    def layer(self, tool: str, arguments: Mapping[str, Any] | None) -> Layer:
        """The tool's layer: ``layer_of`` when given, else the (cached) classifier, which sees
        the first call's arguments (a URL argument means L5)."""
        if self.layer_of is not None:
            return self.layer_of(tool)
        return self.classifier.classify(tool, arguments).layer

    def input_bytes(self, arguments: object) -> int | None:
        """Size of the arguments as JSON, when sizes are measured."""
        return json_size(arguments if arguments is not None else {}) if self.measure_sizes else None

    def emit(self, **fields: Any) -> CallRecord | None:
        """Build the record, annotate the SDK's call span if one is current, record it.

        Never raises: a metering failure is logged, the tool call goes on.
        """
        try:
            record = CallRecord(server=self.server, **fields)
            annotate_current_span(record)
            self.recorder.record(record)
        except Exception:
            logger.exception("metering the call of tool %r failed", fields.get("tool"))
            return None
        return record


def start_clock() -> tuple[int, int]:
    """``(ts_ms, perf_ns)`` at the start of a call."""
    return time.time_ns() // 1_000_000, time.perf_counter_ns()


def elapsed_ms(perf_ns: int) -> float:
    """Milliseconds since ``perf_ns``."""
    return (time.perf_counter_ns() - perf_ns) / 1_000_000
