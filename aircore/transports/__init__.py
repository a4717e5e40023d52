"""Transports: stdio (asyncio streams), Streamable HTTP and legacy SSE (on airhttp.HttpServer),
by name in :data:`TRANSPORTS`; each satisfies :class:`aircore.types.Transport`."""

from aircore.transports.table import ALIASES, TRANSPORTS, TransportFactory, get_transport

__all__ = ["ALIASES", "TRANSPORTS", "TransportFactory", "get_transport"]
