"""OtelSink: every call record as an OpenTelemetry span and metric points, sent over OTLP.

Per the MCP semantic conventions (see :mod:`airmeter.semconv`): one SERVER span
``tools/call <tool>`` per call, timed from the record; the histogram
``mcp.server.operation.duration`` in seconds with the advised buckets; a call counter
``air.mcp.calls`` by layer. The sink owns its own ``TracerProvider``/``MeterProvider`` unless
given providers or told to use the global ones, so a user's own set-up is never replaced.

Telemetry never blocks or breaks a call: spans go to a bounded ``BatchSpanProcessor`` queue
(overflow is dropped by the SDK), every export attempt is bounded by
``export_timeout_s``, and :meth:`OtelSink.close` returns within ``CLOSE_TIMEOUT_S`` even when
the collector is down or never answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from airmeter import _otel_exporters
from airmeter.otel_settings import OtelSettings, otel_settings
from airmeter.otel_span import was_traced
from airmeter.record import CallRecord
from airmeter.semconv import (
    AIR_LAYER,
    CALLS_COUNTER,
    DURATION_BUCKETS_S,
    DURATION_HISTOGRAM,
    ERROR_TYPE,
    GEN_AI_TOOL_NAME,
    metric_attributes,
    span_attributes,
    span_name,
)

__all__ = ["CLOSE_TIMEOUT_S", "OtelSink"]

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S: Final = 1.5
"""Longest :meth:`OtelSink.close` waits for the final exports before it gives up on them."""
_INSTRUMENTATION: Final = "airmeter"
_MAX_EXPORT_BATCH: Final = 512


async def _run_bounded(fn: Callable[[], object], timeout: float, what: str) -> bool:
    """Run a blocking SDK call on a daemon thread; wait for it at most ``timeout`` seconds.

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
        """
        self._settings = settings if settings is not None else otel_settings(requested=True)
        self._closed = False
        self._write_errors = 0
        self._spans = 0
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
        meter = meter_provider.get_meter(_INSTRUMENTATION)
        self._duration = meter.create_histogram(
            DURATION_HISTOGRAM,
            unit="s",
            description="Duration of MCP requests handled by the server.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self._calls = meter.create_counter(
            CALLS_COUNTER, unit="{call}", description="MCP tool calls, by cost layer."
        )

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

    @property
    def settings(self) -> OtelSettings:
        """The resolved settings."""
        return self._settings

    @property
    def spans_started(self) -> int:
        """Spans this sink started (records already traced by the SDK are not counted)."""
        return self._spans

    @property
    def write_errors(self) -> int:
        """Records that failed to convert (logged, never raised)."""
        return self._write_errors

    def _emit(self, record: CallRecord) -> None:
        attrs = metric_attributes(record)
        self._duration.record(record.latency_ms / 1000.0, attrs)
        counter_attrs = {AIR_LAYER: attrs[AIR_LAYER], GEN_AI_TOOL_NAME: record.tool}
        if ERROR_TYPE in attrs:
            counter_attrs[ERROR_TYPE] = attrs[ERROR_TYPE]
        self._calls.add(1, counter_attrs)
        if was_traced(record):
            return
        start_ns = record.ts_ms * 1_000_000
        span = self._tracer.start_span(
            span_name(record),
            kind=SpanKind.SERVER,
            attributes=span_attributes(record),
            start_time=start_ns,
        )
        if not record.ok:
            span.set_status(Status(StatusCode.ERROR, record.error_message))
        span.end(end_time=start_ns + int(record.latency_ms * 1_000_000))
        self._spans += 1

    async def write(self, records: Sequence[CallRecord]) -> None:
        """Turn each record into a span and metric points. Never raises for a bad record.

        Args:
            records: One batch from the meter.
        """
        if self._closed:
            return
        for record in records:
            try:
                self._emit(record)
            except Exception:
                self._write_errors += 1
                logger.exception("could not export call record of tool %r", record.tool)

    async def force_flush(self, *, timeout: float = CLOSE_TIMEOUT_S) -> bool:
        """Export what is pending now (our own providers only).

        Args:
            timeout: Longest wait, in seconds.

        Returns:
            ``True`` when both flushes finished in time (a failed export still "finishes").
        """
        millis = int(timeout * 1000)
        calls: list[Callable[[], object]] = []
        if self._owned_tracer is not None:
            tracer = self._owned_tracer
            calls.append(lambda: tracer.force_flush(millis))
        if self._owned_meter is not None:
            meter = self._owned_meter
            calls.append(lambda: meter.force_flush(millis))
        results = await asyncio.gather(*(_run_bounded(c, timeout, "flush") for c in calls))
        return all(results)

    async def close(self) -> None:
        """Export what is pending and shut our providers down, within ``CLOSE_TIMEOUT_S``.

        Traces and metrics shut down in parallel; an export stuck on an unresponsive
        collector is abandoned (logged), not waited for. Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        calls: list[Callable[[], object]] = []
        if self._owned_tracer is not None:
            calls.append(self._owned_tracer.shutdown)
        if self._owned_meter is not None:
            meter = self._owned_meter
            millis = self._settings.export_timeout_s * 1000
            calls.append(lambda: meter.shutdown(timeout_millis=millis))
        await asyncio.gather(*(_run_bounded(c, CLOSE_TIMEOUT_S, "shutdown") for c in calls))

    async def __aenter__(self) -> OtelSink:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
