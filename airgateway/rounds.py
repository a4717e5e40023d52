"""Input rounds for 2026-07-28 clients in front of legacy-era upstreams.

A legacy-era upstream (stdio, SSE, or HTTP with sessions) asks the client something in the
middle of a call — ``elicitation/create``, ``sampling/createMessage``, ``roots/list`` — and waits
for the answer on the same call. A 2026-07-28 client can only be asked by an
``input_required`` result, answered by retrying the request with ``inputResponses`` and the
``requestState``. So the gateway holds the upstream call in this process: the client's request
is answered ``input_required`` (the upstream's request under one key, and a ``requestState``
naming the held call), and the retry's answer is passed to the waiting upstream, whose call
then goes on to its result or to the next question (another round).

A held call belongs to the client that started it and to this gateway process: a retry that
lands on another process, comes from another client, or comes after :data:`HOLD_S` seconds
(the upstream call is cancelled then) is refused with -32602. At most :data:`MAX_HELD` calls
are held at once, :data:`MAX_HELD_PER_CLIENT` of one client (past either, the client gets
-32603 and the upstream's request is refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aircore.errors import INTERNAL_ERROR, INVALID_PARAMS
from airgateway.errors import GatewayError
from airgateway.types import JSONDict

__all__ = ["HOLD_S", "MAX_HELD", "MAX_HELD_PER_CLIENT", "STATE_PREFIX", "HeldCall", "InputRounds"]

STATE_PREFIX = "gwround1."
"""How a ``requestState`` the gateway minted starts (an upstream's own pass through as they
are)."""
MAX_HELD = 256
"""Upstream calls held for a client's answer at once, at most."""
MAX_HELD_PER_CLIENT = 32
"""Upstream calls held for one client (one token; or all clients without tokens) at most."""
HOLD_S = 300.0
"""Seconds a held call waits for the client's retry."""
_METHOD_NOT_FOUND = -32601


class HeldCall:
    """One upstream call of a 2026-07-28 client, and the question it waits on."""

    __slots__ = ("answer", "asked", "client", "key", "rounds", "task", "timer")

    def __init__(self, client: str | None) -> None:
        self.client = client
        self.task: asyncio.Task[JSONDict] | None = None
        self.asked: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        """The upstream's next server→client request."""
        self.answer: asyncio.Future[JSONDict] | None = None
        """Its answer (``{"result"}`` or ``{"error"}``), once a round is open."""
        self.key = ""
        self.rounds = 0
        self.timer: asyncio.TimerHandle | None = None

    async def relay(self, message: JSONDict) -> JSONDict | None:
        """The ``on_message`` of the upstream call: a server→client request becomes the next
        round's question; this waits for the client's answer."""
        if self.asked.done():  # a second question before the first was put to the client
            return {"error": {"code": _METHOD_NOT_FOUND, "message": "one question at a time"}}
        answer: asyncio.Future[JSONDict] = asyncio.get_running_loop().create_future()
        self.answer = answer
        self.asked.set_result(message)
        return await answer


class InputRounds:
    """The held calls of this gateway process (see the module docstring).

    Args:
        max_held: calls held at once, at most.
        max_per_client: calls held for one client at most.
        hold_s: seconds a held call waits for the client's retry.
    """

    def __init__(
        self,
        *,
        max_held: int = MAX_HELD,
        max_per_client: int = MAX_HELD_PER_CLIENT,
        hold_s: float = HOLD_S,
    ) -> None:
        self.max_held = max_held
        self.max_per_client = max_per_client
        self.hold_s = hold_s
        self._held: dict[str, HeldCall] = {}

    @staticmethod
    def ours(params: Mapping[str, Any]) -> bool:
        """Whether a request continues a round this gateway opened."""
        state = params.get("requestState")
        return isinstance(state, str) and state.startswith(STATE_PREFIX)

    async def start(
        self, client: str | None, call: Callable[[HeldCall], Awaitable[JSONDict]]
    ) -> JSONDict:
        """Run ``call(held)`` (an upstream call whose ``on_message`` is ``held.relay``) until
        its result or its first question.

        Returns:
            The call's result, or an ``input_required`` result for its question.
        """
        held = HeldCall(client)
        held.task = asyncio.ensure_future(call(held))
        return await self._next(held)

    async def resume(self, client: str | None, params: Mapping[str, Any]) -> JSONDict:
        """Give a held call the client's answer and run it to its result or next question.

        Raises:
            GatewayError: -32602 for a state this process does not hold for this client, or
                a retry without the answer asked for.
        """
        state = str(params.get("requestState"))
        held = self._held.get(state)
        if held is None or held.client != client:
            raise GatewayError(
                "Invalid or expired requestState (the input round is held by another gateway "
                "process, or has expired)",
                code=INVALID_PARAMS,
            )
        responses = params.get("inputResponses")
        answer = responses.get(held.key) if isinstance(responses, Mapping) else None
        if not isinstance(answer, Mapping):
            raise GatewayError(f"inputResponses has no answer for {held.key!r}",
                               code=INVALID_PARAMS, data={"key": held.key})  # fmt: skip
        self._release(state, held)
        if held.answer is not None and not held.answer.done():
            held.answer.set_result({"result": dict(answer)})
        return await self._next(held)

    async def _next(self, held: HeldCall) -> JSONDict:
        task = held.task
        assert task is not None
        try:
            await asyncio.wait({task, held.asked}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the client closed this round's POST: end the call
            task.cancel()
            raise
        if task.done() or not held.asked.done():
            held.asked.cancel()
            return task.result()
        message = held.asked.result()
        held.asked = asyncio.get_running_loop().create_future()
        if len(self._held) >= self.max_held or self._count(held.client) >= self.max_per_client:
            self._refuse(held, "the gateway holds too many calls waiting for input")
            task.cancel()
            task.add_done_callback(_quiet)
            raise GatewayError("too many calls wait for input", code=INTERNAL_ERROR)
        held.rounds += 1
        held.key = f"gw-input-{held.rounds}"
        state = STATE_PREFIX + secrets.token_urlsafe(24)
        self._held[state] = held
        held.timer = asyncio.get_running_loop().call_later(self.hold_s, self._expire, state)
        params = message.get("params")
        return {
            "resultType": "input_required",
            "inputRequests": {
                held.key: {"method": message.get("method"),
                           "params": params if isinstance(params, dict) else {}}
            },
            "requestState": state,
        }  # fmt: skip

    def _count(self, client: str | None) -> int:
        return sum(1 for other in self._held.values() if other.client == client)

    @property
    def held(self) -> int:
        """Calls held now."""
        return len(self._held)

    def _release(self, state: str, held: HeldCall) -> None:
        self._held.pop(state, None)
        if held.timer is not None:
            held.timer.cancel()
            held.timer = None

    def _refuse(self, held: HeldCall, why: str) -> None:
        if held.answer is not None and not held.answer.done():
            held.answer.set_result({"error": {"code": _METHOD_NOT_FOUND, "message": why}})

    def _expire(self, state: str) -> None:
        held = self._held.get(state)
        if held is None:
            return
        self._release(state, held)
        self._refuse(held, "the client did not answer in time")
        if held.task is not None:
            held.task.cancel()
            held.task.add_done_callback(_quiet)

    def close(self) -> None:
        """Cancel every held call (the gateway is stopping)."""
        for state, held in list(self._held.items()):
            self._release(state, held)
            if held.task is not None:
                held.task.cancel()
                held.task.add_done_callback(_quiet)


def _quiet(task: asyncio.Task[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()
