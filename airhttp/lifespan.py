"""The ASGI lifespan protocol: an app's startup before the first connection, its shutdown
after the last one."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from airhttp.errors import ServerError
from airhttp.types import ASGIApp, Message

__all__ = ["SHUTDOWN_TIMEOUT", "Lifespan"]

SHUTDOWN_TIMEOUT = 5.0
"""Seconds an app's lifespan shutdown may take before it is cancelled."""


class Lifespan:
    """Run ``app``'s lifespan: :meth:`startup` before serving, :meth:`shutdown` after.

    Args:
        app: the ASGI app.
        state: the dict the app may fill at startup; every request scope gets a copy.
    """

    def __init__(self, app: ASGIApp, state: dict[str, Any]) -> None:
        self.app = app
        self.state = state
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._outbox: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def _receive(self) -> Message:
        return await self._inbox.get()

    async def _send(self, message: Message) -> None:
        await self._outbox.put(message)

    async def _answer(self, expected: str) -> Message:
        """The app's next message, or a failure if the app ends first."""
        assert self._task is not None
        getter = asyncio.ensure_future(self._outbox.get())
        await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            return getter.result()
        getter.cancel()
        exc = None if self._task.cancelled() else self._task.exception()
        return {"type": f"{expected}.failed", "message": f"the app ended: {exc!r}"}

    async def startup(self) -> None:
        """Send ``lifespan.startup`` and wait for the app's answer.

        Raises:
            ServerError: the app answered ``lifespan.startup.failed`` or ended before
                answering.
        """
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": self.state}
        self._task = asyncio.ensure_future(self.app(scope, self._receive, self._send))
        await self._inbox.put({"type": "lifespan.startup"})
        answer = await self._answer("lifespan.startup")
        if answer["type"] != "lifespan.startup.complete":
            raise ServerError(f"the app's lifespan startup failed: {answer.get('message', '')}")

    async def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """Send ``lifespan.shutdown`` and wait (at most ``timeout`` seconds) for the app."""
        task = self._task
        if task is None or task.done():
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._answer("lifespan.shutdown"), timeout)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
