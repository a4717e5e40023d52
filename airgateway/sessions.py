"""Legacy-era client sessions, kept in the store so any gateway replica can serve them.

A session is small (protocol version, client capabilities and name, log level) and never
changes after ``initialize`` except for ``logging/setLevel``; each gateway keeps the ones it
has seen in a bounded cache and reads the store only on a miss. With a shared store
(``redis://``) a request may land on any gateway process. The 2026-07-28 era has no sessions.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from airstore.errors import AirstoreError
from airstore.types import Store

__all__ = [
    "MAX_CLIENT_NAME",
    "MAX_OWN_SESSIONS",
    "SESSIONS_NAMESPACE",
    "SESSION_TTL_S",
    "Session",
    "SessionBook",
]

SESSIONS_NAMESPACE = "gateway.sessions"
SESSION_TTL_S = 24 * 3600.0
"""A session unused this long is forgotten by the store."""
CACHE_SIZE = 4096
MAX_OWN_SESSIONS = 10_000
"""Sessions one gateway process keeps open in the store; opening one more ends one of them
(its client gets 404 and initializes again, as the spec has clients do): the oldest never used
after its ``initialize`` first, else the least recently used, so a flood of ``initialize``
calls cannot end the sessions clients are using (as aircore's own session table). "Used" is
what this process saw: behind a load balancer, a session that opened here and is used only
through another gateway process counts as unused here. Every
``initialize`` is stored for a day, so without a bound a client could grow the store (and a
FileStore's memory) without limit."""
MAX_CLIENT_NAME = 256
"""Characters of ``clientInfo.name`` kept (for logs and metering)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """One legacy-era client session."""

    sid: str
    version: str
    capabilities: dict[str, Any]
    client: str | None = None
    level: str = "debug"

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {"v": self.version, "caps": self.capabilities, "client": self.client,
                "level": self.level}  # fmt: skip


class SessionBook:
    """Creates, finds and forgets sessions (see the module docstring).

    Args:
        store: where sessions live (shared between gateways when it is ``redis://``).
        max_sessions: sessions this process keeps open (:data:`MAX_OWN_SESSIONS`).
    """

    def __init__(self, store: Store, *, max_sessions: int = MAX_OWN_SESSIONS) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self.store = store
        self.max_sessions = max_sessions
        self._cache: OrderedDict[str, Session] = OrderedDict()
        # opened here: not yet used after initialize (oldest first), and used (least recent first)
        self._probation: OrderedDict[str, None] = OrderedDict()
        self._used: OrderedDict[str, None] = OrderedDict()

    async def create(
        self, *, version: str, capabilities: dict[str, Any], client: str | None
    ) -> Session:
        """Open a new session and store it; the oldest session this process opened ends when
        it already keeps :attr:`max_sessions` (the endpoint has checked the declaration's size:
        ``aircore.protocol.legacy.check_declaration``)."""
        session = Session(
            sid=uuid.uuid4().hex,
            version=version,
            capabilities=capabilities,
            client=None if client is None else client[:MAX_CLIENT_NAME],
        )
        while len(self._probation) + len(self._used) >= self.max_sessions:
            victim, _ = (self._probation or self._used).popitem(last=False)
            await self.end(victim)
        await self.store.set(SESSIONS_NAMESPACE, session.sid, session.to_json(), SESSION_TTL_S)
        self._probation[session.sid] = None
        self._remember(session)
        return session

    async def get(self, sid: str) -> Session | None:
        """The session with that id (``None`` when unknown or expired)."""
        if sid in self._probation:  # one of ours, used for the first time: off probation
            del self._probation[sid]
            self._used[sid] = None
        elif sid in self._used:
            self._used.move_to_end(sid)
        session = self._cache.get(sid)
        if session is not None:
            self._cache.move_to_end(sid)
            return session
        if len(sid) > 64 or not sid.isalnum():
            return None
        try:
            data = await self.store.get(SESSIONS_NAMESPACE, sid)
        except AirstoreError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("v"), str):
            return None
        caps = data.get("caps")
        client, level = data.get("client"), data.get("level")
        session = Session(
            sid=sid,
            version=data["v"],
            capabilities=caps if isinstance(caps, dict) else {},
            client=client if isinstance(client, str) else None,
            level=level if isinstance(level, str) else "debug",
        )
        self._remember(session)
        return session

    async def set_level(self, session: Session, level: str) -> Session:
        """Store a new log level for the session."""
        changed = replace(session, level=level)
        await self.store.set(SESSIONS_NAMESPACE, session.sid, changed.to_json(), SESSION_TTL_S)
        self._remember(changed)
        return changed

    async def end(self, sid: str) -> bool:
        """Forget a session (``DELETE``); True if it existed."""
        self._cache.pop(sid, None)
        self._probation.pop(sid, None)
        self._used.pop(sid, None)
        if len(sid) > 64 or not sid.isalnum():
            return False
        return await self.store.delete(SESSIONS_NAMESPACE, sid)

    def _remember(self, session: Session) -> None:
        self._cache[session.sid] = session
        self._cache.move_to_end(session.sid)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
