"""What both adapters share: the :class:`CallFacts` they describe a call with, and the one
:class:`~airmeter.engine.MeterEngine` they run it through."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace

from airmeter.build import PendingCall, RecordBuilder, ResultEncoder, encode_json
from airmeter.classify import Classifier
from airmeter.engine import ErrorResult, ErrorTyper, MeterEngine, RefusedResult
from airmeter.hops import HOP_META_KEY, METERED_META_KEY, store_identity
from airmeter.layers import Layer
from airmeter.meter import Meter
from airmeter.otel_span import annotate_current_span
from airmeter.tokens import counting_for
from airmeter.types import Recorder

__all__ = ["CallFacts", "HopAnswer", "LayerOf", "make_engine", "store_url_of"]

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
    traceparent: str | None = None  # the SDK's own span carries the caller's trace
    tracestate: str | None = None


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


def store_url_of(recorder: Recorder) -> str | None:
    """The URL of the store a :class:`~airmeter.Meter` writes to (a file store's directory),
    which a hop's answer names so a gateway metering into the same store knows the call is
    counted here; ``None`` for any other recorder or store (the gateway then counts it too,
    as each store counts the call once)."""
    from pathlib import Path

    from airstore.file import FileStore

    store = recorder.store if isinstance(recorder, Meter) else None
    return f"file://{Path(store.path).resolve()}" if isinstance(store, FileStore) else None


class HopAnswer:
    """A gateway's hop (``params._meta`` carries :data:`~airmeter.hops.HOP_META_KEY`): the
    call gets a call id (which the gateway's hop record links to) and its answer's ``_meta``
    says it was metered here (:data:`~airmeter.hops.METERED_META_KEY`: that call id, the time
    it took here, the store's :func:`~airmeter.hops.store_identity`), as an aircore server
    answers; see :mod:`airmeter.hops`."""

    __slots__ = ("call_id", "started", "store_url")

    def __init__(self, store_url: str | None) -> None:
        self.call_id = uuid.uuid4().hex
        self.started = time.perf_counter()
        self.store_url = store_url

    @staticmethod
    def asked(meta: object) -> bool:
        """Whether a request's ``_meta`` marks the call as a gateway's hop."""
        return isinstance(meta, Mapping) and HOP_META_KEY in meta

    def meta(self, meta: object) -> dict[str, Any]:
        """``meta`` (a result's ``_meta``, or ``None``) with the metered marker added."""
        said = {
            "callId": self.call_id,
            "latencyMs": (time.perf_counter() - self.started) * 1000.0,
            "store": store_identity(self.store_url),  # a digest, never the URL
        }
        return {**(meta if isinstance(meta, Mapping) else {}), METERED_META_KEY: said}
