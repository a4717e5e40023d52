"""Many calls over one upstream channel (a stdio pipe, an SSE stream), told apart by id.

The gateway numbers its own requests, so clients' ids never collide, and rewrites each call's
``progressToken`` to its own, so progress goes back to the right client. A notification or a
server→client request that names no call (a log message, an elicitation over a shared
channel) goes to the client's call in flight when exactly one is (the gateway's own requests,
health checks, do not count); otherwise notifications go to the listener and requests are
refused.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from airgateway.errors import UpstreamError, UpstreamUnavailableError
from airgateway.types import JSONDict, MessageHandler, NotificationListener

__all__ = ["Mux"]

logger = logging.getLogger(__name__)

_METHOD_NOT_FOUND = -32601


class _Call:
    __slots__ = ("future", "on_message", "token")

    def __init__(self, future: asyncio.Future[JSONDict], on_message: MessageHandler | None) -> None:
        self.future = future
        self.on_message = on_message
        self.token: Any = None


class Mux:
    """The in-flight calls of one channel.

    Args:
        label: the replica's label (for errors).
        write: sends one message on the channel.
        listener: told about notifications that belong to no call.
    """

    def __init__(
        self,
        label: str,
        write: Callable[[JSONDict], Awaitable[None]],
        listener: NotificationListener | None = None,
    ) -> None:
        self.label = label
        self._write = write
        self.listener = listener
        self._ids = itertools.count(1)
        self._calls: dict[int, _Call] = {}
        self._tokens: dict[str, int] = {}
        self._background: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        """How many calls wait for an answer."""
        return len(self._calls)

    async def call(
        self, method: str, params: JSONDict, *, timeout: float, on_message: MessageHandler | None
    ) -> JSONDict:
        """Send a request and wait for its result (see ``UpstreamClient.request``)."""
        from airgateway.errors import UpstreamTimeoutError

        msg_id = next(self._ids)
        call = _Call(asyncio.get_running_loop().create_future(), on_message)
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            call.token = meta["progressToken"]
            own = f"gw-{msg_id}"
            params = {**params, "_meta": {**meta, "progressToken": own}}
            self._tokens[own] = msg_id
        self._calls[msg_id] = call
        try:
            await self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            async with asyncio.timeout(timeout):
                return await call.future
        except TimeoutError:
            await self._cancel(msg_id, "timeout")
            raise UpstreamTimeoutError(
                f"{self.label} did not answer {method} within {timeout:g} s", replica=self.label
            ) from None
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(msg_id, "cancelled by the client"))
            raise
        finally:
            self._calls.pop(msg_id, None)
            self._tokens.pop(f"gw-{msg_id}", None)
            if call.future.done() and not call.future.cancelled():
                call.future.exception()  # retrieved: failed after the wait ended, never logged

    async def _cancel(self, msg_id: int, reason: str) -> None:
        if msg_id in self._calls:
            try:
                await self._write(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": msg_id, "reason": reason},
                    }
                )
            except Exception:  # the channel is gone: nothing to cancel
                logger.debug("could not send a cancellation to %s", self.label)

    def fail_all(self, message: str) -> None:
        """Fail every waiting call (the channel closed)."""
        for call in self._calls.values():
            if not call.future.done():
                call.future.set_exception(UpstreamUnavailableError(message, replica=self.label))

    async def deliver(self, message: Any) -> None:
        """Route one message read from the channel."""
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if method is None:
            msg_id = message.get("id")
            # the gateway's ids are ints; any other (a list or an object: unhashable) is
            # garbage from the upstream and answers no call
            call = self._calls.get(msg_id) if type(msg_id) is int else None
            if call is None or call.future.done():
                return
            if "error" in message and isinstance(message["error"], dict):
                call.future.set_exception(UpstreamError(message["error"]))
            else:
                result = message.get("result")
                call.future.set_result(result if isinstance(result, dict) else {})
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" in message:
            task = asyncio.ensure_future(self._serve(message, method, params))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            return
        target = self._owner(params)
        if target is not None and target.on_message is not None:
            if target.token is not None and "progressToken" in params:
                message = {**message, "params": {**params, "progressToken": target.token}}
            await target.on_message(message)
        elif self.listener is not None:
            self.listener(self.label, message)

    def _owner(self, params: JSONDict) -> _Call | None:
        token = params.get("progressToken")
        if token is not None:
            msg_id = self._tokens.get(str(token))
            return None if msg_id is None else self._calls.get(msg_id)
        owner = None
        for call in self._calls.values():  # the gateway's own requests (health checks) ask
            if call.on_message is not None:  # no client anything: they never own one
                if owner is not None:
                    return None
                owner = call
        return owner

    async def _serve(self, message: JSONDict, method: str, params: JSONDict) -> None:
        """Answer a server→client request through the call it belongs to."""
        target = self._owner(params)
        answer: JSONDict | None = None
        if target is not None and target.on_message is not None:
            try:
                answer = await target.on_message(message)
            except Exception as exc:
                logger.debug("%s: %s failed: %s", self.label, method, exc)
        if answer is None:
            answer = {"error": {"code": _METHOD_NOT_FOUND, "message": f"cannot route {method}"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], **answer}
        try:
            await self._write(reply)
        except Exception:
            logger.debug("could not answer %s on %s", method, self.label)
