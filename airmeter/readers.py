"""Readers of the meter's call log: recent calls as :class:`CallRecord` objects, with filters.

airmeter owns the format of its records in a store (``meter.calls``, one entry per call) and
of its rollups; the dashboard and ``air meter report`` read them through these functions and
:func:`airmeter.snapshot`, never as raw dicts. Every reader works on a read-only store.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

from airmeter.buckets import Bound, to_ms
from airmeter.errors import MeterConfigError
from airmeter.layers import Layer, parse_layer
from airmeter.outcome import ERROR_CLASSES, error_class_of
from airmeter.record import CALLS_NAMESPACE, CallRecord
from airstore.types import JSONValue, Store

__all__ = ["MAX_RECENT", "has_calls", "recent_calls"]

logger = logging.getLogger(__name__)

MAX_RECENT: Final = 10_000
"""The most records one :func:`recent_calls` returns."""
_PAGE: Final = 500


def _filter(
    tool: str | None,
    layer: Layer | int | str | None,
    server: str | None,
    instance: str | None,
    ok: bool | None,
    client: str | None = None,
) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {}
    if client is not None:
        out["client_id"] = client
    if tool is not None:
        out["tool"] = tool
    if layer is not None:
        try:
            out["layer"] = parse_layer(layer).code
        except ValueError as exc:
            raise MeterConfigError(str(exc)) from exc
    if server is not None:
        out["server"] = server
    if instance is not None:
        out["instance_id"] = instance
    if ok is not None:
        out["ok"] = ok
    return out


def _records(entries: list[dict[str, Any]]) -> list[CallRecord]:
    out = []
    for entry in entries:
        try:
            out.append(CallRecord.from_log(entry))
        except (KeyError, TypeError, ValueError):  # not a call record: skipped
            logger.debug("airmeter: skipped a call-log entry that is not a record: %r", entry)
    return out


async def recent_calls(
    store: Store,
    *,
    limit: int = 100,
    since: Bound = None,
    until: Bound = None,
    tool: str | None = None,
    layer: Layer | int | str | None = None,
    server: str | None = None,
    instance: str | None = None,
    ok: bool | None = None,
    error_class: str | None = None,
    client: str | None = None,
    now_ms: int | None = None,
) -> list[CallRecord]:
    """The newest recorded calls matching every filter given, newest first.

    Args:
        store: an opened store (read-only is enough).
        limit: how many records at most (1 … :data:`MAX_RECENT`).
        since: inclusive start (``datetime``, epoch ms, or ``timedelta`` ago).
        until: exclusive end.
        tool, layer, server, instance: only calls of this tool, layer, server name, instance.
        ok: only successful (``True``) or failed (``False``) calls.
        error_class: only failed calls of this class (``tool_error``, ``exception``,
            ``timeout``, ``refused``, ``protocol``, ``cancelled``, ``budget``); records written
            before classes existed are classified by their error type.
        client: only calls of this OAuth client (the records' ``client_id``).
        now_ms: the clock for ``timedelta`` bounds (tests).

    Returns:
        Up to ``limit`` :class:`CallRecord` objects.

    Raises:
        MeterConfigError: a bad limit, bound, layer or error class.
        airstore.AirstoreError: the store cannot be read.
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_RECENT:
        raise MeterConfigError(f"limit must be 1…{MAX_RECENT}, got {limit!r}")
    if error_class is not None and error_class not in ERROR_CLASSES:
        raise MeterConfigError(f"unknown error class {error_class!r}; use one of {ERROR_CLASSES}")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    since_ms, until_ms = to_ms(since, now), to_ms(until, now)
    flt = _filter(tool, layer, server, instance, False if error_class is not None else ok, client)
    if error_class is None:
        entries = await store.query(
            CALLS_NAMESPACE, limit=limit, since=since_ms, until=until_ms, filter=flt or None
        )
        return _records(entries)
    out: list[CallRecord] = []
    offset = 0
    while len(out) < limit:  # classes are read from each record: page through failed calls
        page = await store.query(
            CALLS_NAMESPACE, limit=_PAGE, offset=offset, since=since_ms, until=until_ms,
            filter=flt,
        )  # fmt: skip
        for rec in _records(page):
            if (rec.error_class or error_class_of(rec.error_type)) == error_class:
                out.append(rec)
        if len(page) < _PAGE or offset >= MAX_RECENT * 10:
            break
        offset += _PAGE
    return out[:limit]


async def has_calls(store: Store) -> bool:
    """Whether the store holds at least one recorded call.

    Raises:
        airstore.AirstoreError: the store cannot be read.
    """
    return bool(await store.query(CALLS_NAMESPACE, limit=1))
