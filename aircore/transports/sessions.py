"""Legacy-era HTTP sessions (``Mcp-Session-Id``), bounded so a flood of ``initialize`` calls
cannot evict the sessions clients are using.

Two tiers, as in a segmented LRU: a new session waits on probation until it carries a second
request; then it is established. To make room, the oldest session on probation goes first; an
established session is evicted only when none is on probation, least recently used first. So a
flood of ``initialize`` calls costs the clients in use at most one (the most idle) session.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from aircore.protocol.session import Connection

__all__ = ["DEFAULT_MAX_SESSIONS", "SessionTable"]

DEFAULT_MAX_SESSIONS = 1024
"""Legacy sessions kept at once."""


class SessionTable:
    """Session id → :class:`Connection`, at most ``max_sessions`` of them.

    Args:
        max_sessions: the cap; the evicted session's calls are cancelled.
    """

    def __init__(self, *, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._probation: OrderedDict[str, Connection] = OrderedDict()
        self._established: OrderedDict[str, Connection] = OrderedDict()
        self.evicted = 0
        """Sessions closed to make room so far."""

    def __len__(self) -> int:
        return len(self._probation) + len(self._established)

    def __contains__(self, sid: object) -> bool:
        return sid in self._probation or sid in self._established

    def values(self) -> Iterator[Connection]:
        """Every live session."""
        yield from list(self._probation.values())
        yield from list(self._established.values())

    def open(self, sid: str, conn: Connection) -> None:
        """Add a new session (on probation), evicting beyond the cap."""
        while len(self) >= self.max_sessions:
            # an older session on probation goes first; else the least recently used one
            tier = self._probation if self._probation else self._established
            _old, victim = tier.popitem(last=False)
            victim.cancel_all()
            self.evicted += 1
        self._probation[sid] = conn

    def use(self, sid: str) -> Connection | None:
        """The session ``sid`` as a request arrives: it becomes the most recently used (and
        established); ``None`` when unknown."""
        conn = self._established.pop(sid, None)
        if conn is None:
            conn = self._probation.pop(sid, None)
            if conn is None:
                return None
        self._established[sid] = conn
        return conn

    def peek(self, sid: str) -> Connection | None:
        """The session ``sid`` without marking it used (notifications, client responses)."""
        return self._established.get(sid) or self._probation.get(sid)

    def close(self, sid: str) -> Connection | None:
        """Remove ``sid``; the caller cancels its calls."""
        return self._established.pop(sid, None) or self._probation.pop(sid, None)

    def close_all(self) -> None:
        """Cancel every session's calls and forget them."""
        for conn in self.values():
            conn.cancel_all()
        self._probation.clear()
        self._established.clear()
