"""``Meter``: takes finished calls on the hot path and delivers them to sinks in the background.

``record()`` is synchronous and O(1): it appends to a ring buffer (the live view) and to a
pending batch. A background task hands batches to the sinks. The pending batch is bounded:
past ``max_pending`` records are dropped and counted, never blocking a tool call. ``stop()``
delivers everything pending before it returns (zero loss on a clean shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self, TypeAlias

from airmeter.aggregate import aggregate
from airmeter.buckets import DEFAULT_MAX_BUCKETS, Bound, to_ms
from airmeter.build import PendingCall, RecordBuilder
from airmeter.classify import Classifier
from airmeter.client_labels import TopClients
from airmeter.clients import client_key
from airmeter.errors import MeterClosedError, MeterConfigError
from airmeter.fields import DEFAULT_MAX_FIELD_BYTES
from airmeter.health import HealthReporter, MeterHealth
from airmeter.instance import default_instance_id
from airmeter.layers import LAYERS, Layer
from airmeter.record import CallRecord
from airmeter.redact import Redactor
from airmeter.rollup_reader import RollupReader
from airmeter.rollups import RollupBook
from airmeter.settings import INSTANCE_ID_ENV, prom_top_clients
from airmeter.sink_calls import DEFAULT_SINK_TIMEOUT, SinkCalls
from airmeter.snapshot_types import Snapshot
from airmeter.store_sink import DEFAULT_LOG_MAX_AGE, DEFAULT_LOG_MAX_BYTES, StoreSink
from airmeter.tokens import count_all
from airmeter.types import PersistingSink, Sink
from airstore.types import Store

__all__ = ["INSTANCE_ID_ENV", "Entry", "Meter", "MeterStats", "default_instance_id"]

logger = logging.getLogger(__name__)

_NOT_A_RECORD = (
    "Meter.record takes a CallRecord, not a {kind}; a tuple of values in "
    "airmeter.record.LEGACY_FIELDS order converts with airmeter.record.from_legacy(values)"
)

DEFAULT_RING_SIZE = 10_000
DEFAULT_MAX_PENDING = 100_000
DEFAULT_BATCH_SIZE = 2_048
DEFAULT_FLUSH_INTERVAL = 0.25
DEFAULT_MEMORY_RETENTION_MINUTES = 24 * 60
_WEIGHTS = tuple(info.weight for info in LAYERS)


Entry: TypeAlias = CallRecord | PendingCall
"""What the meter queues: a record (:meth:`Meter.record`) or the engine's pending call
(:meth:`Meter.defer`), built off the call path."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MeterStats:
    """Counters of a meter: what it took, delivered, dropped, and what failed in sinks."""

    recorded: int
    delivered: int
    dropped: int
    pending: int
    sink_errors: int
    sink_timeouts: int = 0


class Meter:
    """The object a server holds: records calls, delivers them to sinks, answers snapshots.

    Args:
        store: when given, a :class:`StoreSink` writing to it is added, and snapshots read it.
        sinks: more sinks (OpenTelemetry, ``airmeter.testing.MemorySink`` …).
        server: the server name stamped by adapters on records.
        instance_id: this process's id (default ``$AIR_INSTANCE_ID``, else ``host-pid``).
        classifier: the :class:`Classifier` adapters use (a default one otherwise).
        ring_size: how many newest records :meth:`recent` keeps.
        max_pending: the bound of the pending batch; more records are dropped and counted.
        batch_size: a pending batch this large wakes the delivery task early.
        flush_interval: seconds between deliveries otherwise.
        sink_timeout: longest wait on one sink call; a sink that does not answer in time is
            abandoned for that call and counted (``stats.sink_timeouts``), so a hung sink
            never blocks :meth:`stop`, :meth:`snapshot` or ``/metrics``.
        log_max_age: seconds the store keeps the raw call log (7 days; ``None``: no cap); the
            rollups stay 400 days.
        log_max_bytes: most bytes of raw call log the store keeps (1 GiB; ``None``: no cap).
        top_clients: clients named by the ``client`` label of ``/metrics`` (the rest:
            ``other``; default ``AIR_METER_PROM_TOP_CLIENTS``, else 10).
        max_field_bytes: cap of the texts of records made elsewhere (the metering engine cuts
            its own with its own cap).
        redactor: redacts records made elsewhere (the engine redacts its own).

    Raises:
        MeterConfigError: a size or interval is not positive, or a bad ``max_field_bytes``.
    """

    def __init__(
        self,
        *,
        store: Store | None = None,
        sinks: Iterable[Sink] = (),
        server: str = "air",
        instance_id: str | None = None,
        classifier: Classifier | None = None,
        ring_size: int = DEFAULT_RING_SIZE,
        max_pending: int = DEFAULT_MAX_PENDING,
        batch_size: int = DEFAULT_BATCH_SIZE,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        max_field_bytes: int = DEFAULT_MAX_FIELD_BYTES,
        redactor: Redactor | None = None,
        sink_timeout: float = DEFAULT_SINK_TIMEOUT,
        log_max_age: float | None = DEFAULT_LOG_MAX_AGE,
        log_max_bytes: int | None = DEFAULT_LOG_MAX_BYTES,
        top_clients: int | None = None,
    ) -> None:
        if min(ring_size, max_pending, batch_size) <= 0 or min(flush_interval, sink_timeout) <= 0:
            raise MeterConfigError(
                "ring_size, max_pending, batch_size, flush_interval, sink_timeout must be > 0"
            )
        self.server = server
        self.instance_id = instance_id or default_instance_id()
        self.classifier = classifier or Classifier()
        self._sinks: list[Sink] = []
        # the sinks that persist rollups and may hold records back (a StoreSink): sorted out
        # once here, not matched on every delivery
        self._persisting: list[PersistingSink] = []
        self._store = store
        if store is not None:
            self._add(StoreSink(store, writer=self.instance_id, log_max_age=log_max_age,
                                log_max_bytes=log_max_bytes))  # fmt: skip
        for sink in sinks:
            self._add(sink)
        if self._store is None and self._persisting:
            self._store = self._persisting[0].store
        self._reader: RollupReader | None = None
        self._book = None if self._store is not None else RollupBook(
            retention_minutes=DEFAULT_MEMORY_RETENTION_MINUTES
        )  # fmt: skip
        self._ring: deque[Entry] = deque(maxlen=ring_size)
        self._pending: list[Entry] = []
        self._sanitizer = RecordBuilder(
            server=server, instance_id=self.instance_id, redactor=redactor,
            max_field_bytes=max_field_bytes,
        )  # fmt: skip
        self._max_pending = max_pending
        self._batch_size = batch_size
        self._interval = flush_interval
        self._recorded = 0
        self._delivered = 0
        self._dropped = 0
        self._calls = SinkCalls(timeout=sink_timeout)
        self._health = HealthReporter()
        self._wake: asyncio.Event | None = None
        self._woken = False
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._stopping = False
        self._closed = False
        self._clients = TopClients(top=prom_top_clients() if top_clients is None else top_clients)

    # -- hot path --------------------------------------------------------------------------
    def record(self, record: CallRecord) -> None:
        """Accept one finished call: O(1), never blocks (a full queue drops and counts).

        Its texts are cut and redacted by the delivery task, like every record's.

        Raises:
            TypeError: ``record`` is not a :class:`CallRecord`. The tuple of values in
                ``airmeter.record.LEGACY_FIELDS`` order that earlier releases took
                (deprecated) is refused: convert it with
                ``airmeter.record.from_legacy(values)``.
        """
        if not isinstance(record, CallRecord):
            raise TypeError(_NOT_A_RECORD.format(kind=type(record).__name__))
        self._enqueue(record)

    def defer(self, pending: PendingCall) -> None:
        """Accept one finished call from :class:`~airmeter.MeterEngine` whose record is not
        built yet: it is built once, by the delivery task or by :meth:`recent`, which keeps
        the call path short (building means sizes, redaction and cutting). O(1),
        never blocks, never raises."""
        self._enqueue(pending)

    def _enqueue(self, record: Entry) -> None:
        self._recorded += 1
        self._ring.append(record)
        pending = self._pending
        if len(pending) >= self._max_pending or self._closed:
            self._dropped += 1
            return
        pending.append(record)
        if len(pending) >= self._batch_size and not self._woken and self._wake is not None:
            self._woken = True
            self._wake.set()

    def layer_of(self, tool: str) -> Layer:
        """The cached layer of ``tool`` from this meter's classifier."""
        return self.classifier.layer_of(tool)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the delivery task. Idempotent.

        Raises:
            MeterClosedError: the meter was stopped.
        """
        if self._closed:
            raise MeterClosedError("the meter was stopped; create a new one")
        if self._task is not None:
            return
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task = asyncio.create_task(self._run(), name="airmeter-delivery")
        from airstore.file import FileStore
        from airstore.locations_index import register_location

        store = self._store
        if isinstance(store, FileStore) and not store.read_only:
            # one machine, one view: readers find every data directory a meter writes to
            register_location(store.path)

    async def stop(self) -> None:
        """Deliver everything pending, close the sinks and stop. Idempotent."""
        if self._closed:
            return
        self._stopping = True
        task = self._task
        if task is not None and not task.done() and self._wake is not None:
            self._wake.set()
            await task  # (a task the loop's end cancelled delivered what it held then)
        await self._deliver()
        self._closed = True
        for sink in self._sinks:
            await self._calls.call(sink, sink.close(), "close", 0)
        # after the sinks closed: what they could not persist by then is counted as dropped
        await self._report_health(final=True)

    async def flush(self) -> None:
        """Deliver everything pending now (also without a running delivery task)."""
        await self._deliver()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _run(self) -> None:
        wake = self._wake
        assert wake is not None
        try:
            while not self._stopping:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), self._interval)
                wake.clear()
                self._woken = False
                await self._deliver()
                await self._persist_due()
                await self._report_health()
        except asyncio.CancelledError:
            # the loop is ending without stop() (asyncio.run cancels every task): hand what is
            # pending to the sinks and write their rollups, so a store that is flushed at exit
            # gets both (without the rollups, `air meter report` never counted these calls)
            await self._deliver()
            await self._persist_due(every=True)
            raise

    async def _persist_due(self, *, every: bool = False) -> None:
        """Persist the rollups of calls a store sink took when its interval has passed (or,
        with ``every``, whenever it took any), even with no call since (bounded like a sink
        call; under the delivery lock, so never beside the persist a delivery makes)."""
        lock = self._lock
        if lock is None:
            lock = self._lock = asyncio.Lock()
        async with lock:
            for sink in self._persisting:
                if every or sink.persist_due():
                    await self._calls.call(sink, sink.persist(), "persist", 0)

    async def _deliver(self) -> None:
        lock = self._lock
        if lock is None:
            lock = self._lock = asyncio.Lock()
        async with lock:
            while self._pending:
                await self._count_tokens(self._pending)
                final = self._final
                batch = [rec for r in self._pending if (rec := final(r)) is not None]
                self._pending = []
                if self._book is not None:
                    add = self._book.add
                    for rec in batch:
                        add(rec)
                observe = self._clients.observe
                for rec in batch:
                    cost = _WEIGHTS[rec.layer - 1] if rec.cost is None else rec.cost
                    observe(client_key(rec.client_id, rec.auth), ok=rec.ok, cost=cost)
                for sink in self._sinks:
                    await self._calls.call(sink, sink.write(batch), "write", len(batch))
                self._delivered += len(batch)

    async def _count_tokens(self, entries: list[Entry]) -> None:
        """Count the context tokens of the results about to be built: with the exact tokenizer
        on a worker thread (the estimate counts inline when the record is built)."""
        todo = [p for p in entries if isinstance(p, PendingCall) and p.record is None
                and p.result is not None and p.builder.tokens is not None
                and p.result_tokens is None]  # fmt: skip
        if not todo:
            return
        tokens = todo[0].builder.tokens
        assert tokens is not None
        counter = tokens.counter
        if counter is None:  # still loading: these records carry no count
            tokens.preload()
            return
        if not counter.exact:  # the estimate counts inline when the record is built
            return
        mine = [p for p in todo if p.builder.tokens is tokens]
        texts = [p.builder.context_text(p.result) or "" for p in mine]
        try:
            counts = await asyncio.to_thread(count_all, counter, texts)
        except Exception:  # a tokenizer failure must not stop delivery: no counts then
            logger.exception("airmeter: counting result tokens failed")
            return
        for p, n in zip(mine, counts, strict=True):
            p.result_tokens = n

    async def _report_health(self, *, final: bool = False) -> None:
        """Warn about drops and sink failures (rate-limited) and keep the health document in
        the store (bounded like a sink call)."""
        health = self.health
        self._health.check(health, final=final)
        if self._store is not None and self._health.due(health, final=final):
            await self._calls.call(self._store, self._health.persist(self._store, health),
                               "health report", 0)  # fmt: skip

    # -- reading ---------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """Whether :meth:`stop` ran (a stopped meter cannot start again)."""
        return self._closed

    def _counts(self) -> tuple[int, int, int]:
        """``(delivered, dropped, pending)``: a record a store sink could not persist is not
        delivered: dropped when lost for good (or left in its backlog once the meter
        stopped), pending while it waits in the sink's backlog for a retry."""
        lost = waiting = 0
        for sink in self._persisting:  # several stores: the one that lost most
            lost = max(lost, sink.unpersisted)
            waiting = max(waiting, sink.backlog)
        if self._closed:
            lost, waiting = lost + waiting, 0
        delivered = max(0, self._delivered - lost - waiting)
        return delivered, self._dropped + lost, len(self._pending) + waiting

    @property
    def stats(self) -> MeterStats:
        """The meter's counters right now (see :attr:`health` for what counts as delivered)."""
        delivered, dropped, pending = self._counts()
        return MeterStats(
            recorded=self._recorded, delivered=delivered, dropped=dropped, pending=pending,
            sink_errors=self._calls.errors, sink_timeouts=self._calls.timeouts,
        )  # fmt: skip

    @property
    def health(self) -> MeterHealth:
        """The counters as the :class:`~airmeter.health.MeterHealth` this meter reports.

        ``delivered`` counts records every store sink persisted; ``dropped`` the records lost
        to a full pending queue and those a store sink could not persist (a full disk: dropped
        from its retry backlog, refused, or acknowledged and then lost by the store); records
        waiting in a sink's retry backlog are ``pending`` until the meter stops.
        """
        delivered, dropped, pending = self._counts()
        return MeterHealth(
            instance_id=self.instance_id, server=self.server, recorded=self._recorded,
            delivered=delivered, dropped=dropped, pending=pending,
            sink_errors=self._calls.errors, sink_timeouts=self._calls.timeouts,
            updated_ms=int(time.time() * 1000),
        )  # fmt: skip

    @property
    def clients(self) -> TopClients:
        """Calls and cost per client since start, for the ``client`` label of ``/metrics``."""
        return self._clients

    @property
    def sinks(self) -> Sequence[Sink]:
        """The sinks records go to, in order."""
        return tuple(self._sinks)

    def add_sink(self, sink: Sink) -> None:
        """Deliver to one more sink from the next batch on (``air serve --otel`` uses it).

        Raises:
            MeterClosedError: the meter was stopped.
        """
        if self._closed:
            raise MeterClosedError("the meter was stopped; create a new one")
        self._add(sink)

    def _add(self, sink: Sink) -> None:
        self._sinks.append(sink)
        if isinstance(sink, PersistingSink):
            self._persisting.append(sink)

    @property
    def store(self) -> Store | None:
        """The store snapshots read, if any."""
        return self._store

    def recent(self, n: int | None = None) -> list[CallRecord]:
        """The newest ``n`` records seen (all the ring holds by default), oldest first."""
        items = list(self._ring)
        items = items if n is None else items[-n:] if n > 0 else []
        return [rec for r in items if (rec := self._final(r)) is not None]

    def _final(self, entry: Entry) -> CallRecord | None:
        """The record of an entry: built (once) for a pending call, bounded and redacted for a
        record made elsewhere."""
        if isinstance(entry, PendingCall):
            return entry.build()
        try:
            return self._sanitizer.sanitize(entry)
        except Exception:  # a record that cannot be cut must not stop delivery: skipped
            logger.exception("airmeter: a recorded call could not be bounded; skipped")
            return None

    def live(self, *, tool: str | None = None, layer: Layer | int | str | None = None) -> Snapshot:
        """A snapshot of the records in the ring buffer only (the newest ``ring_size`` calls,
        including ones not yet delivered): no store I/O, for live views.

        Raises:
            MeterConfigError: a bad layer.
        """
        book = RollupBook()
        for rec in self.recent():
            book.add(rec)
        return aggregate(book.groups(), tool=tool, layer=layer)

    async def snapshot(
        self,
        *,
        since: Bound = None,
        until: Bound = None,
        tool: str | None = None,
        layer: Layer | int | str | None = None,
        server: str | None = None,
        instance: str | None = None,
        bucket_ms: int | None = None,
        max_buckets: int = DEFAULT_MAX_BUCKETS,
    ) -> Snapshot:
        """Deliver what is pending, then summarize: see :func:`airmeter.snapshot`.

        Reads the store's rollups when the meter has a store, else its in-memory rollups
        (the last 24 hours).

        Raises:
            MeterConfigError: a bad bound, layer or bucket size.
        """
        await self._deliver()
        if self._store is not None:
            for sink in self._persisting:  # bounded: a hung store answers what it has
                await self._calls.call(sink, sink.persist(), "persist", 0)
            if self._reader is None or self._reader.store is not self._store:
                self._reader = RollupReader(self._store)  # kept: a repeated snapshot is warm
            return await self._reader.snapshot(
                since=since, until=until, tool=tool, layer=layer, server=server,
                instance=instance, bucket_ms=bucket_ms, max_buckets=max_buckets,
            )  # fmt: skip
        assert self._book is not None
        now_ms = int(time.time() * 1000)
        since_ms, until_ms = to_ms(since, now_ms), to_ms(until, now_ms)
        return aggregate(
            self._book.groups(), since_ms=since_ms, until_ms=until_ms, tool=tool, layer=layer,
            server=server, instance=instance, bucket_ms=bucket_ms, max_buckets=max_buckets,
            now_ms=now_ms,
        )  # fmt: skip
