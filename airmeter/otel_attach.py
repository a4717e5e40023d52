"""Which meter hook exports over OpenTelemetry: decided here, wired by the composition root.

``air serve --otel`` asks :func:`otel_meter_hook` for the hook its server should use and hands
it to ``AirServer.use_meter``; nothing reaches into a server from outside. (The meter's own
start adds the sink the environment asks for with :func:`~airmeter.otel.with_env_otel_sink`,
which lives beside :class:`~airmeter.otel.OtelSink` so that the middleware and this module do
not import each other.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airmeter.middleware import MeterMiddleware
from airmeter.otel import OtelSink, with_env_otel_sink

__all__ = ["otel_meter_hook", "with_env_otel_sink"]

logger = logging.getLogger(__name__)


def otel_meter_hook(
    hook: object | None,
    *,
    service_name: str,
    requested: bool = False,
    env: Mapping[str, str] | None = None,
) -> MeterMiddleware | None:
    """The meter hook that exports a server's calls over OTLP, when OpenTelemetry is on.

    On when ``requested`` (``--otel``) or an ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variable is set;
    never with ``OTEL_SDK_DISABLED=true``. Without a hook, a new :class:`MeterMiddleware` with
    the sink (its meter is created on start with the server's store); an airmeter hook gets the
    sink added and is returned. The meter closes the sink when the server stops.

    Args:
        hook: the server's current meter hook (``None``: the server does not meter).
        service_name: ``service.name`` unless ``OTEL_SERVICE_NAME`` says otherwise.
        requested: asked for on the command line or in code.
        env: the environment to read; ``os.environ`` by default.

    Returns:
        The hook to give the server (``AirServer.use_meter``), or ``None`` when OpenTelemetry
        is off or the hook is not airmeter's (logged when export was requested).
    """
    if hook is not None and not isinstance(hook, MeterMiddleware):
        if requested:
            logger.warning("--otel ignored: the server's meter hook is not airmeter's")
        return None
    sink = OtelSink.from_env(env, requested=requested, service_name=service_name or "air")
    if sink is None:
        return None
    if hook is None:
        return MeterMiddleware(sinks=[sink])
    hook.add_sink(sink)
    return hook
