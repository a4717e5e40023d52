"""The transports by name: each factory imports its module inside the function, so a server
that serves stdio never loads the HTTP server."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from aircore.errors import DefinitionError
from aircore.transports.options import check_options
from aircore.types import Transport

__all__ = ["ALIASES", "TRANSPORTS", "TransportFactory", "check_options", "get_transport"]

TransportFactory = Callable[[], Transport]
"""Builds one transport (and imports what it needs)."""


def _stdio() -> Transport:
    from aircore.transports.stdio import StdioTransport

    return StdioTransport()


def _http() -> Transport:
    from aircore.transports.http_app import HttpTransport

    return HttpTransport()


def _sse() -> Transport:
    from aircore.transports.http_app import SseTransport

    return SseTransport()


TRANSPORTS: Mapping[str, TransportFactory] = MappingProxyType(
    {"http": _http, "sse": _sse, "stdio": _stdio}
)
"""Transport name → factory."""

ALIASES: Mapping[str, str] = MappingProxyType({"streamable-http": "http"})
"""Other names a user may give (``MCP_TRANSPORT=streamable-http``)."""


def get_transport(name: str, *, source: str = "") -> Transport:
    """The transport called ``name`` (case-insensitive; aliases allowed).

    Args:
        name: ``"stdio"``, ``"http"``…
        source: where the name came from, for the error (``"MCP_TRANSPORT"``).

    Raises:
        DefinitionError: no transport has that name (a one-line message naming the choices).
    """
    key = name.strip().lower()
    factory = TRANSPORTS.get(ALIASES.get(key, key))
    if factory is None:
        where = f" ({source})" if source else ""
        choices = ", ".join(repr(n) for n in sorted(TRANSPORTS))
        raise DefinitionError(f"unknown transport {name!r}{where}; use one of {choices}")
    return factory()
