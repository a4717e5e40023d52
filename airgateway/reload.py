"""Reloading a running gateway's configuration file.

``air gateway`` reloads its ``--config`` on SIGHUP, and, where the interpreter has no SIGHUP
(Windows), when the file changes (:class:`ConfigWatch`, a portable poll of its size,
modification time and content hash; ``AIR_GATEWAY_WATCH_CONFIG=on`` turns it on beside
SIGHUP too). Which of the two is used is decided in :mod:`airgateway._platform`.

A new configuration is read and checked completely before anything changes: a file that
cannot be read or is refused (:class:`~airgateway.errors.ConfigError`) is logged with its
reason, and the running configuration stays as it was. A good one is applied by
:meth:`airgateway.gateway.Gateway.reload`: its ``servers:`` at once (unchanged entries keep
their connections), the other sections at the next start (said in the log).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from airgateway import _platform
from airgateway.config import GatewayConfig, ServerConfig, load_config
from airgateway.errors import ConfigError
from airgateway.replica import Replica
from airgateway.settings import watch_config

__all__ = ["WATCH_INTERVAL_S", "ConfigReloader", "ConfigWatch", "Reloadable", "diff_entries",
           "unapplied_sections"]  # fmt: skip

logger = logging.getLogger(__name__)

WATCH_INTERVAL_S = 1.0
"""How often the file watch looks at the configuration file."""
MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The watch hashes at most this much of the file (a configuration is far smaller)."""
_SECTIONS = ("health", "balancer", "clients", "per_tool_rate_per_s", "auth")
_NAMES = {"per_tool_rate_per_s": "limits"}


class Reloadable(Protocol):
    """What is reloaded: :class:`airgateway.gateway.Gateway` satisfies it."""

    async def reload(self, config: GatewayConfig) -> list[str]:
        """Serve ``config`` from now on; what changed, one line each."""
        ...


def unapplied_sections(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """The sections besides ``servers:`` that differ (applied at the next start only)."""
    return [_NAMES.get(s, s) for s in _SECTIONS if getattr(old, s) != getattr(new, s)]


def diff_entries(
    own: Sequence[Replica], servers: Sequence[ServerConfig]
) -> tuple[list[tuple[Replica, ServerConfig]], list[ServerConfig], list[Replica]]:
    """Match the running replicas of the configuration with a new configuration's entries.

    An entry equal to a running replica's (its line in the file aside) keeps that replica.

    Returns:
        ``(kept, added, removed)``: replicas kept with their new entry, entries to start,
        replicas to remove.
    """
    left = list(own)
    kept: list[tuple[Replica, ServerConfig]] = []
    added: list[ServerConfig] = []
    for server in servers:
        same = replace(server, line=0)
        match = next((r for r in left if replace(r.config, line=0) == same), None)
        if match is None:
            added.append(server)
        else:
            left.remove(match)
            kept.append((match, server))
    return kept, added, left


class ConfigWatch:
    """Tells when a file changed: its size, modification time or (when those are equal) the
    hash of its content. Portable: only ``os.stat`` and reads.

    Args:
        path: the file.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen = self._look()

    def _look(self) -> tuple[int, int, str] | None:
        try:
            stat = os.stat(self.path)
            # hashed every time: a coarse clock (FAT, some network shares) or an editor
            # restoring the time can keep size and mtime while the content changed
            with open(self.path, "rb") as file:
                digest = hashlib.sha256(file.read(MAX_CONFIG_BYTES)).hexdigest()
        except OSError:
            return None  # gone for now (an editor replacing it): a change once it is back
        return (stat.st_size, stat.st_mtime_ns, digest)

    def changed(self) -> bool:
        """Whether the file's content differs from the last time this said so (or from the
        start). A file missing for now is no change."""
        now = self._look()
        if now is None or now == self._seen:
            return False
        same_content = self._seen is not None and now[2] == self._seen[2]
        self._seen = now
        return not same_content


class ConfigReloader:
    """Reloads ``path`` into ``gateway`` on SIGHUP (or a file change, see the module
    docstring); reloads asked for while one runs fold into one more after it.

    Args:
        gateway: the running gateway.
        path: its configuration file.
        watch: poll the file (``None``: as ``AIR_GATEWAY_WATCH_CONFIG`` and the platform say).
        interval_s: how often the watch polls.
    """

    def __init__(
        self,
        gateway: Reloadable,
        path: str,
        *,
        watch: bool | None = None,
        interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        self.gateway = gateway
        self.path = path
        setting = watch_config()
        self.watch = (
            watch
            if watch is not None
            else setting == "on" or (setting == "auto" and _platform.needs_file_watch())
        )
        self.interval_s = interval_s
        self.reloads = 0
        """Reloads applied so far."""
        self.refused = 0
        """New configurations refused so far."""
        self._running: asyncio.Task[None] | None = None
        self._again = False
        self._watcher: asyncio.Task[None] | None = None
        self._uninstall: list[Callable[[], None]] = []

    def start(self) -> None:
        """Listen for SIGHUP (where the interpreter has it) and start the watch if on."""
        uninstall = _platform.on_reload_signal(self.trigger)
        if uninstall is not None:
            self._uninstall.append(uninstall)
        if self.watch:
            self._watcher = asyncio.ensure_future(self._watch())
        how = ["SIGHUP"] if uninstall is not None else []
        how += ["a change of the file"] if self.watch else []
        logger.info("the configuration %s is reloaded on %s", self.path, " or ".join(how) or
                    "nothing (no SIGHUP here and the file watch is off)")  # fmt: skip

    def trigger(self) -> None:
        """Reload soon (a signal handler's callback: never blocks)."""
        if self._running is not None and not self._running.done():
            self._again = True
            return
        self._running = asyncio.ensure_future(self._reload_until_settled())

    async def _reload_until_settled(self) -> None:
        while True:
            self._again = False
            await self.reload()
            if not self._again:
                return

    async def reload(self) -> bool:
        """Read, check and apply the file now; return whether it was applied."""
        try:
            config = await asyncio.to_thread(load_config, self.path)
        except ConfigError as exc:
            self.refused += 1
            logger.error("reload refused, the running configuration is kept: %s", exc)
            return False
        except Exception:  # a bug in the checks: refused all the same, with its traceback
            self.refused += 1
            logger.exception("reload refused, the running configuration is kept: reading %s "
                             "failed", self.path)  # fmt: skip
            return False
        try:
            await self.gateway.reload(config)
        except Exception:  # a bug must not take the gateway down with it
            logger.exception("reload failed")
            return False
        self.reloads += 1
        logger.warning("reload: %s applied (%d servers)", self.path,
                       len({s.name for s in config.servers}))  # fmt: skip
        return True

    async def _watch(self) -> None:
        watch = ConfigWatch(self.path)
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                changed = await asyncio.to_thread(watch.changed)
            except Exception:  # a bug must not stop the watch for good
                logger.exception("watching %s failed", self.path)
                continue
            if changed:
                logger.info("%s changed: reloading it", self.path)
                self.trigger()

    async def stop(self) -> None:
        """Stop listening and watching; wait for a reload under way. Idempotent."""
        for uninstall in self._uninstall:
            uninstall()
        self._uninstall.clear()
        tasks = [t for t in (self._watcher, self._running) if t is not None]
        self._watcher = self._running = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
