"""What the parts of a FileStore (keys, logs) rely on: the attributes and methods FileStore
sets, declared once for both."""

from __future__ import annotations

import builtins
from typing import Any

from airstore._persist import Persister
from airstore._recovery import Finding
from airstore.types import Clock

__all__ = ["FileParts"]


class FileParts:
    """The FileStore attributes its key and log parts share (FileStore sets them)."""

    path: str
    read_only: bool
    _clock: Clock
    _sync: bool
    _default_ttl: float | None
    _findings: builtins.list[Finding]
    _write_ok: Persister | None

    def _writer(self) -> Persister:
        raise NotImplementedError

    def _ensure_open(self) -> None:
        raise NotImplementedError

    def _io(self, fn: Any, ns: str) -> Any:
        raise NotImplementedError
