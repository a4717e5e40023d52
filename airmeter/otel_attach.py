"""Which meter hook exports over OpenTelemetry: decided here, wired by the composition root.

``air serve --otel`` asks :func:`otel_meter_hook` for the hook its server should use and hands
it to ``AirServer.use_meter``; nothing reaches into a server from outside.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from airmeter.middleware import MeterMiddleware
from airmeter.otel import OtelSink
from airmeter.types import Sink

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
