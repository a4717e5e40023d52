"""The MCP protocol layer: framing, sessions, the two eras and dispatch.

Each module owns one concern so that following a spec revision is a local change:
:mod:`~aircore.protocol.framing` (JSON-RPC 2.0 envelopes), :mod:`~aircore.protocol.session`
(one client connection), :mod:`~aircore.protocol.legacy` (the ``initialize`` era),
:mod:`~aircore.protocol.modern` (2026-07-28), :mod:`~aircore.protocol.dispatch` (methods).
"""

from aircore.protocol.dispatch import Dispatcher
from aircore.protocol.session import Connection, Peer

__all__ = ["Connection", "Dispatcher", "Peer"]
