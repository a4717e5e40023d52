"""``StoreBase``: the ``async with`` plumbing and the default capabilities every backend shares."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from types import TracebackType
from typing import Self

from airstore.types import Entry

__all__ = ["StoreBase"]


class StoreBase:
    """``async with store`` opens it with ``init()`` and closes it with ``close()``.

    A backend without a faster way gets ``append_many`` as a loop over ``append``.
    """

    async def init(self) -> None:
        """Open the backend; subclasses override."""
        raise NotImplementedError

    async def close(self) -> None:
        """Close the backend; subclasses override."""
        raise NotImplementedError

    async def append(self, ns: str, entry: Entry) -> Entry:
        """Append one entry; subclasses override."""
        raise NotImplementedError

    async def append_many(self, ns: str, entries: Iterable[Entry]) -> builtins.list[Entry]:
        """Append ``entries`` one by one (backends with a batch path override this)."""
        return [await self.append(ns, entry) for entry in entries]

    async def __aenter__(self) -> Self:
        await self.init()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
