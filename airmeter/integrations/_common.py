"""What both adapters share: the :class:`CallFacts` they describe a call with, and the one
:class:`~airmeter.engine.MeterEngine` they run it through."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

from airmeter.build import PendingCall, RecordBuilder, ResultEncoder, encode_json
from airmeter.classify import Classifier
from airmeter.engine import ErrorResult, ErrorTyper, MeterEngine, RefusedResult
from airmeter.layers import Layer
from airmeter.meter import Meter
from airmeter.otel_span import annotate_current_span
from airmeter.tokens import counting_for
from airmeter.types import Recorder

__all__ = ["CallFacts", "LayerOf", "make_engine"]

LayerOf = Callable[[str], Layer]
"""Maps a tool name to its layer; :meth:`airmeter.Classifier.layer_of` is one."""


@dataclass(slots=True, kw_only=True)
class CallFacts:
    """A :class:`~airmeter.types.CallInfo` an adapter fills from its framework's request."""

    tool_name: str
    arguments: Mapping[str, Any] | None = None
    request_id: str | None = None
    call_id: str | None = None
    session_id: str | None = None
    protocol_version: str | None = None
    transport: str | None = None
    client_name: str | None = None
    server_name: str | None = None
    layer: int | None = None
    annotations: Mapping[str, Any] | None = None
    tool_meta: Mapping[str, Any] | None = None
    input_schema: Mapping[str, Any] | None = None
    usage: MutableMapping[str, Any] = field(default_factory=dict)


def _annotate(pending: PendingCall) -> None:
    """Put the record on the framework's SERVER span when one records this call (the record
    is built here only then)."""
    if trace.get_current_span().is_recording():
        annotate_current_span(pending.build())


def make_engine(
    recorder: Recorder,
    *,
    server_name: str | None,
    layer_of: LayerOf | None,
    classifier: Classifier | None,
    measure_sizes: bool,
    error_type: ErrorTyper,
    error_result: ErrorResult,
    refused_result: RefusedResult | None = None,
    encode_result: ResultEncoder = encode_json,
) -> tuple[MeterEngine, LayerOf | None]:
    """The engine of one adapter; defaults come from the recorder when it is a
    :class:`~airmeter.Meter` (its classifier, shared cache and user rules, and its server name
    and instance id). Result tokens are counted as ``$AIR_TOKENS`` says.

    Returns:
        The engine, and ``layer_of`` (the adapter passes its answer as the explicit layer).
    """
    meter = recorder if isinstance(recorder, Meter) else None
    if classifier is None:
        classifier = meter.classifier if meter is not None else Classifier()
    if server_name is None:
        server_name = meter.server if meter is not None else ""
    builder = RecordBuilder(
        server=server_name,
        instance_id=meter.instance_id if meter is not None else None,
        measure_sizes=measure_sizes,
        encode_result=encode_result,
        tokens=counting_for(),  # $AIR_TOKENS, as aircore's meter reads it
    )
    engine = MeterEngine(
        recorder,
        builder=builder,
        classifier=classifier,
        error_type=error_type,
        error_result=error_result,
        refused_result=refused_result,
        on_record=_annotate,
    )
    return engine, layer_of
