"""Turn OpenTelemetry export on for an aircore server (``air serve --otel``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from airmeter.middleware import MeterMiddleware
from airmeter.otel import OtelSink
from airmeter.types import Sink

__all__ = ["attach_otel", "with_env_otel_sink"]

logger = logging.getLogger(__name__)


def attach_otel(
    server: object, *, requested: bool = False, env: Mapping[str, str] | None = None
) -> OtelSink | None:
    """Add an :class:`OtelSink` to the server's meter when OpenTelemetry is on.

    On when ``requested`` (``--otel``) or an ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variable is set;
    never with ``OTEL_SDK_DISABLED=true``. A server without a meter gets the default
    :class:`MeterMiddleware` (created on start with the server's store). The meter closes the
    sink when the server stops. Call it before the server starts.

    Args:
        server: An ``AirServer`` (its ``name`` and ``meter`` attributes are used).
        requested: Asked for on the command line or in code.
        env: The environment to read; ``os.environ`` by default.

    Returns:
        The sink, or ``None`` when OpenTelemetry is off or the server's meter hook is not an
        airmeter one (logged).
    """
    name = getattr(server, "name", None)
    service = name if isinstance(name, str) and name else "air"
    hook = getattr(server, "meter", None)
    if hook is not None and not isinstance(hook, MeterMiddleware):
        if requested:
            logger.warning("--otel ignored: the server's meter hook is not airmeter's")
        return None
    sink = OtelSink.from_env(env, requested=requested, service_name=service)
    if sink is None:
        return None
    if hook is None:
        server.meter = MeterMiddleware(sinks=[sink])  # type: ignore[attr-defined]
    else:
        hook.add_sink(sink)
    return sink


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
