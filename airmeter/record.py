"""CallRecord: one metered tool call, and its one-line JSON form in the call log."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from airmeter.layers import Layer, parse_layer

__all__ = ["CALLS_NAMESPACE", "HOPS_NAMESPACE", "HOP_KIND", "CallRecord"]

CALLS_NAMESPACE = "meter.calls"
"""The store namespace whose append log holds one entry per call."""
HOPS_NAMESPACE = "meter.hops"
"""The append log of a gateway's hops (records of kind :data:`HOP_KIND`): apart from the
calls, so every reader of calls counts a proxied call once."""
HOP_KIND = "hop"

_CODES = ("L0", "L1", "L2", "L3", "L4", "L5", "L6", "L7")  # indexed by the Layer (an int)

_OPTIONAL_FIELDS = (
    "error_class",
    "call_id",
    "session_id",
    "protocol_version",
    "transport",
    "client_name",
    "instance_id",
    "input_bytes",
    "output_bytes",
    "tokens_in",
    "tokens_out",
    "cost",
    "error_message",
    "error_message_bytes",
    "category",
    "tool_version",
    "arguments",
    "arguments_bytes",
    "result",
    "result_bytes",
    "result_tokens",
    "kind",
    "upstream_call_id",
    "upstream_latency_ms",
    "client_id",
    "subject",
    "auth",
)

_TEXT_FIELDS = (
    "error_class", "call_id", "session_id", "protocol_version", "transport", "client_name",
    "instance_id", "error_message", "category", "tool_version", "kind", "upstream_call_id",
    "client_id", "subject", "auth",
)  # fmt: skip
_NUMBER_FIELDS = (
    "input_bytes", "output_bytes", "tokens_in", "tokens_out", "cost", "error_message_bytes",
    "arguments_bytes", "result_bytes", "result_tokens", "upstream_latency_ms",
)  # fmt: skip


def _check_types(data: dict[str, Any]) -> None:
    """Refuse a log entry whose fields have the wrong JSON type (written by something else):
    one such entry must be skipped, not break every page that shows recent calls."""
    if not isinstance(data.get("ok", True), bool):
        raise TypeError("ok is not a boolean")
    for name in ("error_type", *_TEXT_FIELDS):
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} is not a string")
    for name in ("latency_ms", *_NUMBER_FIELDS):
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise TypeError(f"{name} is not a number")


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """One tool call as the meter saw it.

    ``ts_ms`` is the call's start in epoch milliseconds (``_ts`` in the log). ``error_type`` is
    ``"tool_error"`` for an ``isError`` result, a JSON-RPC code as a string (``"-32602"``), or an
    exception type name; ``None`` when ``ok``. ``error_class`` is its class (see
    :mod:`airmeter.outcome`: ``tool_error``, ``exception``, ``timeout``, ``refused``,
    ``protocol``, ``cancelled``, ``budget``; ``None`` in records made before classes existed:
    :func:`airmeter.outcome.error_class_of` of the type gives it). ``arguments``/``result``
    are present only when the user opted in, already redacted. ``request_id`` is the JSON-RPC
    id (clients number requests per connection); ``call_id`` is unique per call across
    processes (aircore's ``ctx.call_id``; ``None`` from the SDK adapters). Text fields
    (``error_message``, captured ``arguments`` and ``result``) are cut to the meter's
    ``max_field_bytes``; a cut field keeps its original size in ``<field>_bytes`` (a captured
    value that was cut is kept as the start of its JSON text).
    ``result_tokens`` is the number of tokens the result adds to a model's context.
    ``kind`` is ``None`` for a call, :data:`HOP_KIND` for a gateway's hop in front of an
    upstream that metered the call itself (the call is counted once, by the upstream; the hop
    goes to :data:`HOPS_NAMESPACE`): ``upstream_call_id`` is the upstream record's ``call_id``
    and ``upstream_latency_ms`` the upstream's own time, so ``latency_ms -
    upstream_latency_ms`` is what the gateway added.
    ``trace_parent``/``trace_state`` are the W3C trace context the call's request carried (the
    parent of the span an OtelSink makes from the record) and ``traced`` says the call's span
    exists already (the gateway's live span, the SDK's annotated one): the sink makes none.
    These three never reach the call log.
    """

    ts_ms: int
    server: str
    tool: str
    layer: Layer
    latency_ms: float
    ok: bool
    error_type: str | None = None
    error_class: str | None = None
    request_id: str | None = None
    call_id: str | None = None
    session_id: str | None = None
    protocol_version: str | None = None
    transport: str | None = None
    client_name: str | None = None
    instance_id: str | None = None
    input_bytes: int | None = None
    output_bytes: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    error_message: str | None = None
    error_message_bytes: int | None = None
    category: str | None = None
    tool_version: str | None = None
    arguments: dict[str, Any] | str | None = None
    arguments_bytes: int | None = None
    result: Any = None
    result_bytes: int | None = None
    result_tokens: int | None = None
    kind: str | None = None
    upstream_call_id: str | None = None
    upstream_latency_ms: float | None = None
    client_id: str | None = None
    subject: str | None = None
    auth: str | None = None
    trace_parent: str | None = None
    trace_state: str | None = None
    traced: bool = False

    def to_log(self) -> dict[str, Any]:
        """The log form: snake_case keys, ``_ts`` and ``layer`` as ``"L1"``…; ``None`` omitted
        for optional fields (the required ones, ``error_type`` and ``request_id`` included, are
        always present)."""
        out: dict[str, Any] = {
            "_ts": self.ts_ms,
            "server": self.server,
            "tool": self.tool,
            "layer": _CODES[self.layer],
            "latency_ms": self.latency_ms,
            "ok": self.ok,
            "error_type": self.error_type,
            "request_id": self.request_id,
        }
        # Unrolled on purpose: this runs once per call on the sink's write path.
        if self.error_class is not None:
            out["error_class"] = self.error_class
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.session_id is not None:
            out["session_id"] = self.session_id
        if self.protocol_version is not None:
            out["protocol_version"] = self.protocol_version
        if self.transport is not None:
            out["transport"] = self.transport
        if self.client_name is not None:
            out["client_name"] = self.client_name
        if self.instance_id is not None:
            out["instance_id"] = self.instance_id
        if self.input_bytes is not None:
            out["input_bytes"] = self.input_bytes
        if self.output_bytes is not None:
            out["output_bytes"] = self.output_bytes
        if self.tokens_in is not None:
            out["tokens_in"] = self.tokens_in
        if self.tokens_out is not None:
            out["tokens_out"] = self.tokens_out
        if self.cost is not None:
            out["cost"] = self.cost
        if self.error_message is not None:
            out["error_message"] = self.error_message
            if self.error_message_bytes is not None:
                out["error_message_bytes"] = self.error_message_bytes
        if self.category is not None:
            out["category"] = self.category
        if self.tool_version is not None:
            out["tool_version"] = self.tool_version
        if self.arguments is not None:
            out["arguments"] = self.arguments
            if self.arguments_bytes is not None:
                out["arguments_bytes"] = self.arguments_bytes
        if self.result is not None:
            out["result"] = self.result
            if self.result_bytes is not None:
                out["result_bytes"] = self.result_bytes
        if self.result_tokens is not None:
            out["result_tokens"] = self.result_tokens
        if self.kind is not None:
            out["kind"] = self.kind
            out["upstream_call_id"] = self.upstream_call_id
            out["upstream_latency_ms"] = self.upstream_latency_ms
        if self.auth is not None:
            out["auth"] = self.auth
            if self.client_id is not None:
                out["client_id"] = self.client_id
            if self.subject is not None:
                out["subject"] = self.subject
        return out

    @classmethod
    def from_log(cls, data: dict[str, Any]) -> CallRecord:
        """Rebuild a record from its log form; unknown keys are ignored.

        Raises:
            KeyError: ``_ts`` or ``tool`` is missing.
            ValueError: a field cannot be converted (a bad layer, a non-numeric time).
            TypeError: a field of the wrong JSON type (``error_type`` that is not a string,
                ``ok`` that is not a boolean, a size that is not a number…).
        """
        _check_types(data)
        kwargs: dict[str, Any] = {name: data.get(name) for name in _OPTIONAL_FIELDS}
        request_id = data.get("request_id")
        return cls(
            ts_ms=int(data["_ts"]),
            server=str(data.get("server", "")),
            tool=str(data["tool"]),
            layer=parse_layer(data.get("layer", 4)),
            latency_ms=float(data.get("latency_ms", 0.0)),
            ok=bool(data.get("ok", True)),
            error_type=data.get("error_type"),
            request_id=None if request_id is None else str(request_id),
            **kwargs,
        )


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(CallRecord))
"""The fields of :class:`CallRecord` in declaration order."""

_new = object.__new__
# The slots' own descriptors: setting through them skips the frozen __setattr__ check, which
# costs more than the rest of building a record (the builder creates one per call).
_SETTERS = tuple(CallRecord.__dict__[name].__set__ for name in FIELD_NAMES)


def assemble(values: tuple[Any, ...]) -> CallRecord:
    """A record from values in :data:`FIELD_NAMES` order, without validation (the builder's
    fast path; everything else uses the constructor)."""
    rec = _new(CallRecord)
    for setter, value in zip(_SETTERS, values, strict=True):
        setter(rec, value)
    return rec


LEGACY_FIELDS: tuple[str, ...] = (
    "ts_ms", "server", "tool", "layer", "latency_ms", "ok", "error_type", "request_id",
    "session_id", "protocol_version", "transport", "client_name", "instance_id", "input_bytes",
    "output_bytes", "tokens_in", "tokens_out", "cost", "error_message", "category",
    "tool_version", "arguments", "result",
)  # fmt: skip
"""The order of the values of the plain tuple earlier releases' ``Meter.record`` took (it now
refuses one with ``TypeError``): :func:`from_legacy` makes the :class:`CallRecord`."""


def from_legacy(values: tuple[Any, ...]) -> CallRecord:
    """A record from values in :data:`LEGACY_FIELDS` order.

    Raises:
        ValueError: not as many values as fields.
    """
    if len(values) != len(LEGACY_FIELDS):
        raise ValueError(f"expected {len(LEGACY_FIELDS)} values, got {len(values)}")
    return CallRecord(**dict(zip(LEGACY_FIELDS, values, strict=True)))
