"""The inspection side of FileStore: what recovery found, ``check()`` and ``stats()``."""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

from airstore._recovery import (
    CheckReport,
    Finding,
    NamespaceStats,
    check_directory,
    stats_directory,
)
from airstore.errors import StorageIOError

__all__ = ["Inspection"]


class Inspection:
    """Mixed into FileStore; relies on its ``path``, ``flush``, ``list`` and findings."""

    path: str
    _findings: builtins.list[Finding]

    def _ensure_open(self) -> None:
        raise NotImplementedError

    async def flush(self) -> None:
        raise NotImplementedError

    async def list(self, ns: str, prefix: str = "") -> builtins.list[str]:
        raise NotImplementedError

    @property
    def recovery(self) -> builtins.list[Finding]:
        """What recovery found and repaired in the namespaces this store has opened."""
        return list(self._findings)

    # -- inspection --------------------------------------------------------------------------
    async def check(self) -> CheckReport:
        """Read every file of the data directory (changing nothing) and report problems.

        Returns:
            Per-namespace file lists, counts and findings (torn tails, corrupt lines, corrupt
            snapshots, snapshots kept aside by an earlier recovery).

        Raises:
            StorageIOError: the directory cannot be read.
        """
        self._ensure_open()
        await self.flush()
        try:
            return await check_directory(self.path)
        except OSError as exc:
            raise StorageIOError(f"cannot read {self.path}: {exc}", path=self.path) from exc

    async def stats(self) -> builtins.list[NamespaceStats]:
        """Per namespace: live keys, log entries, files and bytes on disk.

        Raises:
            StorageIOError: a file cannot be read.
        """
        found: builtins.list[NamespaceStats] = await self._inspect(stats_directory)
        for item in found:
            if item.has_kv:
                item.keys = len(await self.list(item.namespace))
        return found

    async def _inspect(self, fn: Any) -> Any:
        self._ensure_open()
        await self.flush()
        try:
            return await asyncio.to_thread(fn, self.path)
        except OSError as exc:
            raise StorageIOError(f"cannot read {self.path}: {exc}", path=self.path) from exc
