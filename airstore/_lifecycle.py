"""``StoreBase``: the ``async with`` plumbing every backend shares."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["StoreBase"]


class StoreBase:
    """``async with store`` opens it with ``init()`` and closes it with ``close()``."""

    async def init(self) -> None:
        """Open the backend; subclasses override."""
        raise NotImplementedError

    async def close(self) -> None:
        """Close the backend; subclasses override."""
        raise NotImplementedError

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
