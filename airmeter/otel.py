"""OtelSink: every call record as an OpenTelemetry span and metric points, sent over OTLP.

Per the MCP semantic conventions (see :mod:`airmeter.semconv`): one SERVER span
``tools/call <tool>`` per call, timed from the record; the histogram
``mcp.server.operation.duration`` in seconds with the advised buckets; a call counter
``air.mcp.calls`` by layer. The sink owns its own ``TracerProvider``/``MeterProvider`` unless
given providers or told to use the global ones, so a user's own set-up is never replaced.

Telemetry never blocks or breaks a call: :meth:`OtelSink.write` only hands the batch to a
worker thread through a bounded queue (a full queue drops the batch and counts it), spans go
to a bounded ``BatchSpanProcessor`` queue, every export attempt is bounded by
``export_timeout_s``, and :meth:`OtelSink.close` returns within ``CLOSE_TIMEOUT_S`` even when
the collector is down or never answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import TracerProvider

from airmeter import _otel_exporters
from airmeter._otel_emit import Emitter
from airmeter.errors import MeterConfigError
from airmeter.otel_settings import OtelSettings, otel_settings
from airmeter.otel_span import CallSpan, parent_context
from airmeter.record import CallRecord
from airmeter.types import Sink

__all__ = ["CLOSE_TIMEOUT_S", "DEFAULT_MAX_PENDING_BATCHES", "OtelSink", "with_env_otel_sink"]

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S: Final = 1.5
"""Longest :meth:`OtelSink.close` waits for the final exports before it gives up on them."""
DEFAULT_MAX_PENDING_BATCHES: Final = 64
"""Batches queued for the worker before new ones are dropped (and counted)."""
_INSTRUMENTATION: Final = "airmeter"
_MAX_EXPORT_BATCH: Final = 512

_Batch = tuple[Sequence[CallRecord], list[bool], list[Context | None]]


async def _run_bounded(fn: Callable[[], object], timeout: float, what: str) -> bool:
    """Run a blocking call on a daemon thread; wait for it at most ``timeout`` seconds.

    A daemon thread (not the loop's executor) so that an export stuck on a dead collector can
    neither hold the caller nor the interpreter's exit.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    def target() -> None:
        try:
            fn()
        except Exception:
            logger.exception("OpenTelemetry %s failed", what)
        finally:
            # RuntimeError: the loop closed while we were exporting, so nobody waits.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(finish)

    threading.Thread(target=target, name=f"airmeter-otel-{what}", daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(done), timeout)
    except TimeoutError:
        logger.warning("OpenTelemetry %s did not finish within %.1fs; abandoned", what, timeout)
        return False
    return True


def _in_parallel(*calls: Callable[[], object]) -> None:
    threads = [threading.Thread(target=c, daemon=True) for c in calls[1:]]
    for t in threads:
        t.start()
    if calls:
        calls[0]()
    for t in threads:
        t.join()


class OtelSink:
    """A :class:`~airmeter.Sink` that exports records as OTLP spans and metrics.

    Construct it directly (it is then on, whatever the environment says) or with
    :meth:`from_env` (on only when :func:`~airmeter.otel_enabled` says so).
    """

    def __init__(
        self,
        *,
        settings: OtelSettings | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        use_global_providers: bool = False,
        span_exporter: SpanExporter | None = None,
        metric_exporter: MetricExporter | None = None,
        max_pending_batches: int = DEFAULT_MAX_PENDING_BATCHES,
    ) -> None:
        """Create the sink and, unless given providers, its own providers and exporters.

        Args:
            settings: Endpoints, protocol, timeouts; :func:`~airmeter.otel_settings` of the
                process environment by default.
            tracer_provider: Use this provider for spans (not shut down by :meth:`close`).
            meter_provider: Use this provider for metrics (not shut down by :meth:`close`).
            use_global_providers: Use the globally installed providers instead of our own.
            span_exporter: Replace the OTLP span exporter of our own provider (tests, benches).
            metric_exporter: Replace the OTLP metric exporter of our own provider.
            max_pending_batches: Batches waiting for the worker before new ones are dropped.

        Raises:
            MeterConfigError: ``max_pending_batches`` is not positive.
        """
        if max_pending_batches <= 0:
            raise MeterConfigError("max_pending_batches must be > 0")
        self._settings = settings if settings is not None else otel_settings(requested=True)
        self._closed = False
        self._dropped = 0
        self._owned_tracer: SdkTracerProvider | None = None
        self._owned_meter: SdkMeterProvider | None = None
        resource = Resource.create({"service.name": self._settings.service_name})
        if tracer_provider is None and use_global_providers:
            tracer_provider = trace.get_tracer_provider()
        if tracer_provider is None:
            self._owned_tracer = SdkTracerProvider(resource=resource, shutdown_on_exit=False)
            self._owned_tracer.add_span_processor(
                BatchSpanProcessor(
                    span_exporter or _otel_exporters.span_exporter(self._settings),
                    max_queue_size=self._settings.max_queue_size,
                    schedule_delay_millis=self._settings.schedule_delay_ms,
                    max_export_batch_size=min(_MAX_EXPORT_BATCH, self._settings.max_queue_size),
                    export_timeout_millis=self._settings.export_timeout_s * 1000,
                )
            )
            tracer_provider = self._owned_tracer
        if meter_provider is None and use_global_providers:
            meter_provider = metrics.get_meter_provider()
        if meter_provider is None:
            reader = PeriodicExportingMetricReader(
                metric_exporter or _otel_exporters.metric_exporter(self._settings),
                export_interval_millis=self._settings.metric_interval_ms,
                export_timeout_millis=self._settings.export_timeout_s * 1000,
            )
            self._owned_meter = SdkMeterProvider(
                resource=resource, metric_readers=[reader], shutdown_on_exit=False
            )
            meter_provider = self._owned_meter
        self._tracer = tracer_provider.get_tracer(_INSTRUMENTATION)
        self._emitter = Emitter(self._tracer, meter_provider.get_meter(_INSTRUMENTATION))
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=max_pending_batches)
        self._worker = threading.Thread(target=self._work, name="airmeter-otel", daemon=True)
        self._worker.start()

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        requested: bool = False,
        service_name: str = "air",
    ) -> OtelSink | None:
        """The sink when the environment (or ``requested``) turns it on, else ``None``.

        Args:
            env: The environment to read; ``os.environ`` by default.
            requested: Asked for in code or with ``--otel``.
            service_name: ``service.name`` unless ``OTEL_SERVICE_NAME`` says otherwise.

        Returns:
            A running sink, or ``None`` when OpenTelemetry is off (including
            ``OTEL_SDK_DISABLED=true``).
        """
        settings = otel_settings(env, requested=requested, service_name=service_name)
        return cls(settings=settings) if settings.enabled else None

    def start_call_span(
        self,
        tool: str,
        *,
        carrier: Mapping[str, Any] | None = None,
        attributes: Mapping[str, str] | None = None,
    ) -> CallSpan:
        """Open a call's SERVER span now (finished later with its record, see
        :class:`~airmeter.otel_span.CallSpan`), child of the trace context in ``carrier``.

        For a caller that must pass its own span on while the call runs (a gateway); calls
        recorded the usual way get their span from their record.

        Args:
            tool: the tool's name.
            carrier: the request's ``params._meta`` (``traceparent``, ``tracestate``).
            attributes: more attributes known at the start.

        Returns:
            The open span.
        """
        return CallSpan(self._tracer, tool, carrier=carrier, attributes=attributes)

    @property
    def settings(self) -> OtelSettings:
        """The resolved settings."""
        return self._settings

    @property
    def spans_started(self) -> int:
        """Spans this sink started (records already traced by the SDK are not counted)."""
        return self._emitter.spans

    @property
    def write_errors(self) -> int:
        """Records that failed to convert (never raised)."""
        return self._emitter.errors

    @property
    def dropped(self) -> int:
        """Records dropped because the worker's queue was full."""
        return self._dropped

    def _work(self) -> None:
        while True:
            batch = self._queue.get()
            try:
                if batch is None:
                    return
                self._emitter.emit(*batch)
            except Exception:  # the worker must survive anything a batch does
                logger.exception("OpenTelemetry export of a batch failed")
            finally:
                self._queue.task_done()

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Queue the batch for the worker; never blocks, never raises.

        Args:
            records: One batch from the meter.
        """
        if self._closed or not records:
            return
        traced = [record.traced for record in records]
        parents = [None if t else parent_context(r) for r, t in zip(records, traced, strict=True)]
        try:
            self._queue.put_nowait((tuple(records), traced, parents))
        except queue.Full:
            self._dropped += len(records)
            logger.warning("OpenTelemetry sink overloaded: dropped %d records", len(records))

    async def force_flush(self, *, timeout: float = CLOSE_TIMEOUT_S) -> bool:
        """Convert what is queued and export what is pending now.

        Args:
            timeout: Longest wait, in seconds.

        Returns:
            ``True`` when everything finished in time (a failed export still "finishes").
        """
        millis = int(timeout * 1000)
        tracer, meter = self._owned_tracer, self._owned_meter

        def flush() -> None:
            self._queue.join()
            _in_parallel(
                *([lambda: tracer.force_flush(millis)] if tracer is not None else []),
                *([lambda: meter.force_flush(millis)] if meter is not None else []),
            )

        return await _run_bounded(flush, timeout, "flush")

    async def close(self) -> None:
        """Convert what is queued, export it and shut our providers down, within
        ``CLOSE_TIMEOUT_S``.

        Traces and metrics shut down in parallel; an export stuck on an unresponsive
        collector is abandoned (logged), not waited for. Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        tracer, meter = self._owned_tracer, self._owned_meter
        timeout_ms = self._settings.export_timeout_s * 1000

        def finish() -> None:
            self._queue.put(None)
            self._worker.join()
            _in_parallel(
                *([tracer.shutdown] if tracer is not None else []),
                *([lambda: meter.shutdown(timeout_millis=timeout_ms)] if meter is not None else []),
            )

        await _run_bounded(finish, CLOSE_TIMEOUT_S, "shutdown")

    async def __aenter__(self) -> OtelSink:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def with_env_otel_sink(
    sinks: Iterable[Sink], service_name: str, *, env: Mapping[str, str] | None = None
) -> list[Sink]:
    """``sinks`` plus an :class:`OtelSink` when the environment turns OpenTelemetry on and
    none is there yet (the meter a :class:`MeterMiddleware` creates on start uses it).

    Args:
        sinks: The sinks already configured.
        service_name: ``service.name`` unless ``OTEL_SERVICE_NAME`` says otherwise.
        env: The environment to read; ``os.environ`` by default.

    Returns:
        A new list.
    """
    out = list(sinks)
    if not any(isinstance(s, OtelSink) for s in out):
        sink = OtelSink.from_env(env, service_name=service_name)
        if sink is not None:
            out.append(sink)
    return out
