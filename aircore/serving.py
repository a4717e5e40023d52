"""Running a server over a transport: what :meth:`AirServer.run <aircore.AirServer.run>` and
``air serve`` call.

It sits beside the server, not in it: the server knows no transport, and the transports know
the server only as a :class:`~aircore.types.Served` (a message handler with a lifecycle), so
no import circle joins them. The transport is picked by name from
:data:`aircore.transports.TRANSPORTS` (``"auto"`` or ``None``: detected), the server started,
where it meters told on stderr (:func:`aircore.storage.announce_store`: a script's ``run()``
and ``air serve`` both say it once), then served until EOF or a signal.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aircore.storage import announce_store
from aircore.transports.detect import TRANSPORT_ENV, detect_transport
from aircore.transports.loop import run_loop
from aircore.transports.options import check_options
from aircore.transports.table import get_transport
from aircore.types import MessageHandler, MeterSlot, Served, Transport

if TYPE_CHECKING:
    from aircore.tool import Tool
    from airstore import StoreLocation

__all__ = ["AUTO", "choose_transport", "run_server"]

logger = logging.getLogger(__name__)

AUTO = "auto"
"""The transport name that means "detect it" (``air serve --transport auto``, the default)."""


def choose_transport(name: str | None = None) -> Transport:
    """The transport called ``name``; ``None`` or ``"auto"``: ``MCP_TRANSPORT``, else stdio
    for a piped stdin and HTTP for a terminal (:func:`~aircore.transports.detect.detect_transport`).

    Raises:
        DefinitionError: no transport has that name.
    """
    given = None if name is None or name.strip().lower() == AUTO else name
    kind = given or detect_transport(os.environ, sys.stdin)
    return get_transport(kind, source="" if given else TRANSPORT_ENV)


class _Announced:
    """``server`` as the transport serves it: once started, where it meters is told (so a
    refusal before the start, a bad token say, prints nothing else)."""

    def __init__(self, server: Served) -> None:
        self.server = server
        self._told = False

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def version(self) -> str:
        return self.server.version

    @property
    def tools(self) -> Mapping[str, Tool]:
        return self.server.tools

    @property
    def meter(self) -> MeterSlot | None:
        return self.server.meter

    @property
    def store_location(self) -> StoreLocation | None:
        return self.server.store_location

    @property
    def dispatcher(self) -> MessageHandler:
        return self.server.dispatcher

    async def start(self) -> None:
        await self.server.start()
        if not self._told:
            self._told = True
            announce_store(self.server.name, self.server.store_location)

    async def stop(self) -> None:
        await self.server.stop()


def run_server(server: Served, transport: str | None = None, **options: Any) -> None:
    """Serve ``server`` until stopped, on a new event loop (uvloop where installed).

    Args:
        server: the server (an :class:`~aircore.AirServer`).
        transport: a name in :data:`aircore.transports.TRANSPORTS` (or an alias); ``None`` or
            ``"auto"``: detected (see :func:`choose_transport`).
        options: that transport's options (``max_message`` for both; ``host``, ``port``,
            ``token``… for HTTP).

    Raises:
        DefinitionError: an unknown transport name, or an option it does not take.
    """
    chosen = choose_transport(transport)
    check_options(chosen, options)  # refused before anything starts
    run_loop(chosen.serve(_Announced(server), **options))
