"""Metering at the gateway: every proxied ``tools/call`` becomes one airmeter record.

``server`` is the upstream's name, ``instance_id`` the replica that answered (``notes#1``),
the layer comes from the upstream's definition (its ``_meta`` layer hint, annotations and
name, through the meter's classifier), and an ``isError`` result is a failure of type
``tool_error``. Errors the gateway raises carry their JSON-RPC code as the type.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import orjson

from airgateway.config import ClientConfig
from airgateway.index import IndexedTool
from airgateway.replica import Replica
from airmeter.layers import Layer
from airmeter.meter import Meter

__all__ = ["GatewayMeter", "MeteredCall"]

_perf = time.perf_counter
_now = time.time


class MeteredCall:
    """One call on its way: what the record needs when it ends."""

    __slots__ = ("client", "entry", "params", "protocol_version", "request_id", "session_id",
                 "started", "ts")  # fmt: skip

    def __init__(self, entry: IndexedTool, params: dict[str, Any]) -> None:
        self.entry = entry
        self.params = params
        self.ts = _now()
        self.started = _perf()
        self.client: str | None = None
        self.request_id: str | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None


class GatewayMeter:
    """Records proxied calls into a :class:`~airmeter.Meter` (see the module docstring).

    Args:
        meter: the meter (its store and sinks decide where records go).
    """

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self._layers: dict[tuple[str, str], Layer] = {}

    async def start(self) -> None:
        """Start the meter's delivery."""
        await self.meter.start()

    async def stop(self) -> None:
        """Deliver everything pending and stop."""
        await self.meter.stop()

    def _layer(self, entry: IndexedTool) -> Layer:
        key = (entry.server, entry.name)
        layer = self._layers.get(key)
        if layer is None:
            meta = entry.definition.get("_meta")
            hint = meta.get("layer") if isinstance(meta, dict) else None
            try:
                found = self.meter.classifier.classify(
                    entry.upstream_name, entry.definition.get("inputSchema"), entry.annotations,
                    hint if isinstance(hint, int | str) else None,
                )  # fmt: skip
            except Exception:  # a bad hint in an upstream's _meta: classify by name
                found = self.meter.classifier.classify(entry.upstream_name, None, entry.annotations)
            layer = self._layers[key] = found.layer
        return layer

    def begin(
        self,
        entry: IndexedTool,
        params: dict[str, Any],
        *,
        client: ClientConfig | None,
        request_id: Any,
        session_id: str | None,
        protocol_version: str | None,
    ) -> MeteredCall:
        """Start timing a call."""
        call = MeteredCall(entry, params)
        call.client = None if client is None else client.name
        call.request_id = None if request_id is None else str(request_id)
        call.session_id = session_id
        call.protocol_version = protocol_version
        return call

    def end(
        self,
        call: MeteredCall,
        picked: Sequence[Replica],
        result: dict[str, Any] | None,
        error: BaseException | None,
    ) -> None:
        """Record the call: O(1), never raises into the caller."""
        latency = (_perf() - call.started) * 1000.0
        entry = call.entry
        message: str | None = None
        if error is None:
            ok = not (result is not None and result.get("isError") is True)
            etype = None if ok else "tool_error"
        elif isinstance(error, asyncio.CancelledError):
            ok, etype, message = False, "cancelled", "the call was cancelled before it finished"
        else:
            code = getattr(error, "code", None)
            ok = False
            etype = str(code) if isinstance(code, int) else type(error).__name__
            message = str(error)
        arguments = call.params.get("arguments")
        meta = entry.definition.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        self.meter.record((
            int(call.ts * 1000), entry.server, entry.name, self._layer(entry), latency, ok, etype,
            call.request_id, call.session_id, call.protocol_version, "tcp", call.client,
            picked[-1].label if picked else None,
            _size(arguments), _size(result), None, None, None, message,
            # the standard's "categoryKey"; "category_key" from servers before it
            _text(meta.get("categoryKey", meta.get("category_key"))), _text(meta.get("version")),
            None, None,
        ))  # fmt: skip


def _size(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
