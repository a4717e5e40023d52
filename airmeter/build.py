"""From what the engine saw on the call path to one :class:`CallRecord`, built once, off it.

On the call path the engine keeps references only (the call, its result, the clock readings)
in a :class:`PendingCall`. The meter's delivery task asks :meth:`PendingCall.build` once; the
:class:`RecordBuilder` then encodes each value once (the sizes come from those bytes, and so
does a captured copy), redacts, cuts every text field to its cap and creates the frozen record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

import orjson

from airhttp.identity import Identity, current_identity
from airmeter.errors import MeterConfigError
from airmeter.fields import (
    DEFAULT_MAX_FIELD_BYTES,
    ELLIPSIS,
    MAX_FIELD_BYTES_LIMIT,
    cut_id,
    cut_text,
    utf8_size,
)
from airmeter.layers import Layer
from airmeter.pseudonym import PROCESS_KEY, pseudonym
from airmeter.record import FIELD_NAMES, CallRecord, assemble
from airmeter.redact import Redactor
from airmeter.settings import raw_subject_setting
from airmeter.tokens import TokenCounter, TokenCounting, context_text
from airmeter.types import CallInfo

__all__ = ["PendingCall", "RecordBuilder", "ResultEncoder", "ToolInfo", "encode_json"]

logger = logging.getLogger(__name__)

ResultEncoder = Callable[[Any], bytes | None]
"""Encodes a call's result (or arguments) as JSON bytes, ``None`` when it cannot."""

_MIN_FIELD_BYTES: Final = 64
_ID_FIELDS: Final = (
    "server", "tool", "error_type", "request_id", "call_id", "session_id", "protocol_version",
    "transport", "client_name", "instance_id", "category", "tool_version", "client_id",
    "subject", "auth",
)  # fmt: skip

assert FIELD_NAMES == (
    "ts_ms", "server", "tool", "layer", "latency_ms", "ok", "error_type", "error_class",
    "request_id", "call_id", "session_id", "protocol_version", "transport", "client_name",
    "instance_id", "input_bytes", "output_bytes", "tokens_in", "tokens_out", "cost",
    "error_message", "error_message_bytes", "category", "tool_version", "arguments",
    "arguments_bytes", "result", "result_bytes", "result_tokens", "kind", "upstream_call_id",
    "upstream_latency_ms", "client_id", "subject", "auth", "trace_parent", "trace_state",
    "traced",
), "RecordBuilder.build passes values in this order"  # fmt: skip


def encode_json(value: Any) -> bytes | None:
    """``value`` as compact JSON (unknown types through ``str``, dict keys that are not strings
    as their JSON text, as a server sends them: ``{1: "a"}`` → ``{"1":"a"}``), or ``None``."""
    try:
        return orjson.dumps(value, default=str)
    except TypeError:  # (JSONEncodeError is one) keys that are not strings, or worse:
        pass  # the option doubles the cost, so only now
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return None


class ToolInfo:
    """What the engine caches per tool: its name, layer, category and version (the texts cut
    once, here)."""

    __slots__ = ("category", "layer", "tool", "version")

    def __init__(self, tool: str, layer: Layer, category: str | None, version: str | None) -> None:
        self.tool = cut_id(tool) or ""
        self.layer = layer
        self.category = cut_id(category)
        self.version = cut_id(version)


class PendingCall:
    """One finished call as the engine saw it: references, no copies, no encoding.

    :meth:`build` makes the :class:`CallRecord` (once; later calls return the same record) and
    drops the references to the call and its result.
    """

    __slots__ = (
        "builder",
        "call",
        "cost",
        "error_class",
        "error_type",
        "identity",
        "info",
        "latency_ms",
        "message",
        "ok",
        "record",
        "result",
        "result_tokens",
        "tokens_in",
        "tokens_out",
        "ts",
    )

    def __init__(
        self, builder: RecordBuilder, call: CallInfo | None, info: ToolInfo, ts: float,
        latency_ms: float, ok: bool, error_type: str | None, error_class: str | None,
        message: str | None, result: Any, tokens_in: int | None, tokens_out: int | None,
        cost: float | None,
    ) -> None:  # fmt: skip
        self.builder = builder
        self.identity = current_identity()  # who called (set by the HTTP guards), or None
        self.call = call
        self.info = info
        self.ts = ts
        self.latency_ms = latency_ms
        self.ok = ok
        self.error_type = error_type
        self.error_class = error_class
        self.message = message
        self.result = result
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out
        self.cost = cost
        self.result_tokens: int | None = None
        self.record: CallRecord | None = None

    def build(self) -> CallRecord:
        """The call's record, built on the first call."""
        record = self.record
        if record is None:
            try:
                record = self.builder.build(self)
            except Exception:  # a bug must not lose the call: keep what needs no conversion
                logger.exception("airmeter: building the record of a call failed")
                record = CallRecord(
                    ts_ms=int(self.ts * 1000), server=self.builder.server, tool=self.info.tool,
                    layer=self.info.layer, latency_ms=self.latency_ms, ok=self.ok,
                    error_type=cut_id(self.error_type), error_class=self.error_class,
                    instance_id=self.builder.instance_id, cost=self.cost,
                )  # fmt: skip
            self.record = record
            self.call = None
            self.result = None
        return record


class RecordBuilder:
    """Builds records from pending calls with one set of options.

    Args:
        server: the server name when the call does not carry one.
        instance_id: this process's id, stamped on every record.
        capture_arguments: keep the (redacted, cut) arguments; off by default.
        capture_results: keep the (redacted, cut) results; off by default.
        redactor: masks secrets in captured values and error messages.
        measure_sizes: record ``input_bytes``/``output_bytes``.
        max_field_bytes: cap of an error message and of each captured value, in encoded bytes.
        encode_result: how a result becomes JSON bytes (adapters pass their framework's).
        tokens: counts the context tokens of each result (``None``: not counted).

    Raises:
        MeterConfigError: ``max_field_bytes`` is outside 64 … 16384.
    """

    def __init__(
        self,
        *,
        server: str,
        instance_id: str | None,
        capture_arguments: bool = False,
        capture_results: bool = False,
        redactor: Redactor | None = None,
        measure_sizes: bool = True,
        max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
        encode_result: ResultEncoder = encode_json,
        tokens: TokenCounting | None = None,
    ) -> None:
        if not _MIN_FIELD_BYTES <= max_field_bytes <= MAX_FIELD_BYTES_LIMIT:
            raise MeterConfigError(
                f"max_field_bytes must be {_MIN_FIELD_BYTES}…{MAX_FIELD_BYTES_LIMIT}, "
                f"got {max_field_bytes!r}"
            )
        self.server = server
        self.instance_id = instance_id
        self.capture_arguments = capture_arguments
        self.capture_results = capture_results
        self.redactor = redactor or Redactor()
        self.subject_key = PROCESS_KEY
        """The key of the subject's pseudonym (the meter's store sets its own at start)."""
        self.raw_subject = raw_subject_setting()
        self.measure_sizes = measure_sizes
        self.max_field_bytes = max_field_bytes
        self.encode_result = encode_result
        self.tokens = tokens
        self._server_in: str | None = None
        self._server_out = server
        self._transport_in: str | None = None
        self._transport_out: str | None = None

    def build(self, p: PendingCall) -> CallRecord:
        """The record of ``p`` (never raises for what a call carries)."""
        call = p.call
        input_bytes = output_bytes = None
        arguments: Any = None
        arguments_bytes = result_bytes = None
        captured: Any = None
        if call is not None:
            args = call.arguments
            if args is not None and (self.measure_sizes or self.capture_arguments):
                raw = encode_json(args)
                if self.measure_sizes and raw is not None:
                    input_bytes = len(raw)
                if self.capture_arguments and args:
                    arguments, arguments_bytes = self._capture(args, raw)
        result = p.result
        result_tokens = p.result_tokens
        if result is not None and (self.measure_sizes or self.capture_results):
            raw = self.encode_result(result)
            if self.measure_sizes and raw is not None:
                output_bytes = len(raw)
            if self.capture_results:
                captured, result_bytes = self._capture(result, raw)
        if result_tokens is None and result is not None and self.tokens is not None:
            counter = self.tokens.counter  # None while the tokenizer is still loading
            if counter is not None:
                result_tokens = self._count(counter, result)
        message = p.message
        message_bytes = None
        if message is not None:
            message, message_bytes = self._text(message)
        info = p.info
        if call is None:
            server, request_id, call_id, session_id, version, transport, client = (
                self.server, None, None, None, None, None, None)  # fmt: skip
            parent = state = None
        else:
            server = self._server(call.server_name)
            transport = self._transport(call.transport)
            request_id, session_id = cut_id(call.request_id), cut_id(call.session_id)
            call_id = cut_id(call.call_id)
            version, client = cut_id(call.protocol_version), cut_id(call.client_name)
            parent = call.traceparent
            state = None if parent is None else call.tracestate
        etype = p.error_type
        # In FIELD_NAMES order (checked at import).
        return assemble((
            int(p.ts * 1000), server, info.tool, info.layer, p.latency_ms, p.ok,
            None if etype is None else cut_id(etype), p.error_class, request_id, call_id,
            session_id,
            version, transport, client, self.instance_id, input_bytes, output_bytes,
            p.tokens_in, p.tokens_out, p.cost, message, message_bytes, info.category,
            info.version, arguments, arguments_bytes, captured, result_bytes, result_tokens,
            None, None, None,  # kind, upstream_call_id, upstream_latency_ms: a call
            *self._caller(p.identity),
            parent, state, False,  # trace_parent, trace_state, traced (not yet)
        ))  # fmt: skip

    def _caller(self, identity: Identity | None) -> tuple[str | None, str | None, str | None]:
        """``(client_id, subject, auth)`` of the caller; the subject pseudonymised (a keyed
        hash) unless the builder keeps it raw."""
        if identity is None:
            return None, None, None
        subject = identity.subject
        if subject is not None and not self.raw_subject:
            subject = pseudonym(self.subject_key, subject)
        return cut_id(identity.client_id), cut_id(subject), identity.auth

    def _count(self, counter: TokenCounter, result: Any) -> int | None:
        try:
            text = self.context_text(result)
            return None if text is None else counter.count(text)
        except Exception:  # a tokenizer failure costs the count, not the record
            logger.exception("airmeter: counting a result's tokens failed")
            return None

    def context_text(self, result: Any) -> str | None:
        """The text ``result`` adds to a model's context (see :func:`airmeter.tokens.context_text`);
        a framework's result object goes through its JSON form."""
        if result is None or isinstance(result, str | Mapping | list | int | float | bool):
            return context_text(result)
        raw = self.encode_result(result)
        if raw is None:
            return None
        try:
            return context_text(orjson.loads(raw))
        except orjson.JSONDecodeError:
            return None

    def _server(self, name: str | None) -> str:
        """The server name (cut), remembered for the next call, which has the same one."""
        if name is not self._server_in:
            self._server_in, self._server_out = name, cut_id(name) or self.server
        return self._server_out

    def _transport(self, name: str | None) -> str | None:
        if name is not self._transport_in:
            self._transport_in, self._transport_out = name, cut_id(name)
        return self._transport_out

    def sanitize(self, rec: CallRecord) -> CallRecord:
        """A record made elsewhere (not by :meth:`build`), bounded and redacted like one:
        the same object when nothing in it needs a change.

        Args:
            rec: a record an application or another package created itself.

        Returns:
            ``rec``, or a copy with its texts cut and redacted.
        """
        changes: dict[str, Any] = {}
        if rec.error_message is not None:
            message, size = self._text(rec.error_message)
            if message is not rec.error_message:
                changes["error_message"] = message
                changes["error_message_bytes"] = size
        for name in _ID_FIELDS:
            value = getattr(rec, name)
            if value is not None and cut_id(value) is not value:
                changes[name] = cut_id(value)
        for name in ("arguments", "result"):
            value = getattr(rec, name)
            if value is not None:
                bounded, size = self._bounded(value)
                if bounded is not value:
                    changes[name] = bounded
                    changes[f"{name}_bytes"] = size
        return replace(rec, **changes) if changes else rec

    def _bounded(self, value: Any) -> tuple[Any, int | None]:
        """``value`` itself when it is free of secrets and fits the cap, else its capture."""
        redacted = self.redactor(value, max_text=self.max_field_bytes)
        if redacted is value:
            text = encode_json(value)
            if text is not None and len(text) <= self.max_field_bytes:
                return value, None
        return self._capture(value, encode_json(value))

    def _text(self, text: str) -> tuple[str, int | None]:
        """``text`` redacted and cut to the cap, with its original UTF-8 size when cut.

        A long text is cut to twice the cap before it is searched for secrets (what lies
        beyond is dropped anyway), so a megabyte message costs what a short one does.
        """
        cap = self.max_field_bytes
        head = text if len(text) <= 2 * cap else text[: 2 * cap]
        out, cut = cut_text(self.redactor.text(head), cap)
        if cut is None and head is text:
            return out, None
        if cut is None:
            out += ELLIPSIS
        return out, utf8_size(text)

    def _capture(self, value: Any, raw: bytes | None) -> tuple[Any, int | None]:
        """A redacted copy of ``value`` for the record, cut to the cap: the JSON value itself
        when it fits, else the start of its JSON text (and the full size)."""
        redacted = self.redactor(value, max_text=self.max_field_bytes)
        text = raw if redacted is value and raw is not None else encode_json(redacted)
        if text is None:
            return None, None
        if len(text) <= self.max_field_bytes:
            try:
                return orjson.loads(text), None
            except orjson.JSONDecodeError:  # pragma: no cover - we encoded it ourselves
                return None, None
        cut, _ = cut_text(text.decode("utf-8", "replace"), self.max_field_bytes)
        return cut, len(raw) if raw is not None else len(text)
