"""Who is calling: the identity an HTTP request was admitted with, for every layer above.

The HTTP guards (:class:`~airhttp.OAuthGuard`, the static-token policy) set it for the duration
of one request in a context variable; the MCP layer reads it (per-tool scopes, ``tools/list``
filtering) and so does the meter (``client_id``, ``subject``, ``auth`` in every record). Tasks
the request starts inherit it, as every context variable.
"""

from __future__ import annotations

import contextvars
import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["AuthKind", "Identity", "current_identity", "use_identity"]

AuthKind = Literal["none", "token", "oauth"]
_NOTHING: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """The caller of one request.

    Attributes:
        auth: how it was admitted: ``"none"``, a static ``"token"``, or an ``"oauth"`` token.
        client_id: the OAuth client (the configured client claim, then ``azp``), or ``None``.
        subject: the token's ``sub`` (raw: the meter pseudonymises it), or ``None``.
        scopes: the scopes the token grants.
        tool_scopes: extra scopes per tool-name glob (from the resource server's configuration).
        claims: the token's claims (verified), for allow lists keyed on claims.
    """

    auth: AuthKind
    client_id: str | None = None
    subject: str | None = None
    scopes: frozenset[str] = frozenset()
    tool_scopes: tuple[tuple[str, frozenset[str]], ...] = ()
    claims: Mapping[str, object] = field(default_factory=dict)

    def missing_for(self, tool: str, required: Iterable[str] = ()) -> frozenset[str]:
        """The scopes this caller lacks to call ``tool`` (the tool's own ``required`` plus the
        configured globs that match it); empty when it may. Without OAuth nothing is missing."""
        if self.auth != "oauth" or not (required or self.tool_scopes):
            return _NOTHING
        need = set(required)
        for glob, scopes in self.tool_scopes:
            if fnmatch.fnmatchcase(tool, glob):
                need |= scopes
        return frozenset(need - self.scopes)

    def may_call(self, tool: str, required: Iterable[str] = ()) -> bool:
        """Whether this caller holds every scope ``tool`` needs."""
        return not self.missing_for(tool, required)


_CURRENT: contextvars.ContextVar[Identity | None] = contextvars.ContextVar(
    "air_identity", default=None
)


def current_identity() -> Identity | None:
    """The identity of the request being handled, or ``None`` (stdio, tests, no guard)."""
    return _CURRENT.get()


def use_identity(identity: Identity | None) -> contextvars.Token[Identity | None]:
    """Make ``identity`` current (reset with the returned token)."""
    return _CURRENT.set(identity)
