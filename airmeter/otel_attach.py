"""Turn OpenTelemetry export on for an aircore server (``air serve --otel``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airmeter.middleware import MeterMiddleware
from airmeter.otel import OtelSink

__all__ = ["attach_otel"]

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
