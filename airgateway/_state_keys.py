"""One signing key for ``requestState`` per stdio server the gateway starts."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence

from aircore.settings import REQUEST_STATE_KEY_ENV, request_state_key
from airgateway.config import ServerConfig

__all__ = ["request_state_keys"]

logger = logging.getLogger(__name__)


def request_state_keys(servers: Sequence[ServerConfig], warnings: list[str]) -> dict[str, str]:
    """A shared ``AIR_REQUEST_STATE_KEY`` for each stdio server the gateway starts without
    one: replicas of one 2026-07-28 server must sign ``requestState`` with one key, or a
    retried input round that lands on another replica (or a restarted process) fails.

    Args:
        servers: the configuration's servers.
        warnings: gets a line for each server whose replicas set different keys.

    Returns:
        The key to give each stdio server's processes, by server name.
    """
    keys: dict[str, str] = {}
    inherited = request_state_key() is not None
    by_name: dict[str, list[ServerConfig]] = {}
    for server in servers:
        if server.transport == "stdio":
            by_name.setdefault(server.name, []).append(server)
    for name, group in by_name.items():
        given = {s.env.get(REQUEST_STATE_KEY_ENV) for s in group}
        if len(given) > 1:
            warnings.append(
                f"the replicas of {name!r} set different {REQUEST_STATE_KEY_ENV} values: "
                "a retried 2026-07-28 input round may fail on another replica"
            )
        elif given == {None} and not inherited:
            keys[name] = secrets.token_urlsafe(32)
            if len(group) > 1:
                logger.info("the %d replicas of %r share a %s the gateway made",
                            len(group), name, REQUEST_STATE_KEY_ENV)  # fmt: skip
    return keys
