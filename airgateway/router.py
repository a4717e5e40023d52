"""The Request Router: a call to the right server, a replica from the balancer, safe retries.

A call that fails because its replica is gone (connection lost, process died, timeout) is
tried on another replica only when that cannot run it twice: the tool is annotated
``readOnlyHint`` or ``idempotentHint``, or the request never left (connection refused before
a byte was written). A request whose bytes were written may have run, whatever the
connection did next; for any other tool the client gets ``-32003`` at once, saying the call
may have run (``-32001`` for a timeout). Every failure counts towards the replica's passive
ejection; every success towards bringing it back.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from airgateway.balancer import Balancer
from airgateway.config import HealthConfig
from airgateway.errors import UpstreamTimeoutError, UpstreamUnavailableError
from airgateway.replica import Replica
from airgateway.types import JSONDict, MessageHandler

__all__ = ["Router"]

_perf = time.perf_counter
T = TypeVar("T")


class Router:
    """Sends requests to replicas of a named server.

    Args:
        replicas: server name -> its replicas.
        balancer: picks a replica per attempt.
        health: thresholds for passive ejection / return.
        retries: how many other replicas a safe call may try after the first.
        on_state: told ``(replica)`` whenever a replica leaves or rejoins the pool.
    """

    def __init__(
        self,
        replicas: Mapping[str, Sequence[Replica]],
        balancer: Balancer,
        health: HealthConfig,
        *,
        retries: int,
        on_state: Callable[[Replica], None] | None = None,
    ) -> None:
        self.replicas = replicas
        self.balancer = balancer
        self.health = health
        self.retries = retries
        self.on_state = on_state

    async def send(
        self,
        server: str,
        method: str,
        params: JSONDict,
        *,
        retry_safe: bool,
        session_key: str | None = None,
        on_message: MessageHandler | None = None,
        picked: list[Replica] | None = None,
    ) -> JSONDict:
        """Send one request to a replica of ``server`` and return its result.

        Args:
            server: the server's name.
            method: the JSON-RPC method.
            params: the params as the upstream should see them.
            retry_safe: whether the request may run twice (read-only / idempotent).
            session_key: keeps a client on one replica (``session_hash``).
            on_message: gets messages the upstream sends before its answer.
            picked: if given, each replica tried is appended (metering names the last).

        Raises:
            UpstreamError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: no replica could answer.
        """

        def attempt(replica: Replica) -> Awaitable[JSONDict]:
            return replica.client.request(
                method, params, timeout=replica.config.timeout_s, on_message=on_message
            )

        return await self.run(
            server, attempt, retry_safe=retry_safe, session_key=session_key, picked=picked
        )

    async def run(
        self,
        server: str,
        attempt: Callable[[Replica], Awaitable[T]],
        *,
        retry_safe: bool,
        session_key: str | None = None,
        picked: list[Replica] | None = None,
    ) -> T:
        """Run ``attempt`` on a replica of ``server`` picked by the balancer, retrying on
        another one as :meth:`send` does.

        Raises:
            UpstreamError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: no replica could answer.
        """
        group = self.replicas.get(server, ())  # a server that just left: none to pick
        tried: list[Replica] = []
        last: UpstreamUnavailableError | None = None
        while True:
            replica = self.balancer.pick(group, exclude=tried, session_key=session_key)
            if replica is None:
                if last is not None:
                    raise last
                raise UpstreamUnavailableError(
                    f"no healthy replica of {server!r}", replica=server, sent=False
                )
            tried.append(replica)
            if picked is not None:
                picked.append(replica)
            replica.in_flight += 1
            started = _perf()
            try:
                result = await attempt(replica)
            except UpstreamUnavailableError as exc:
                self._failed(replica, exc.message)
                last = exc
                if exc.sent and not retry_safe:
                    if isinstance(exc, UpstreamTimeoutError):
                        raise  # "did not answer within …" says it may still run
                    raise _may_have_run(exc) from exc
                if len(tried) > self.retries:
                    raise
                continue
            finally:
                replica.in_flight -= 1
            replica.observe(started)
            if replica.failures or not replica.healthy:
                self._succeeded(replica)
            return result

    def _failed(self, replica: Replica, error: str) -> None:
        if replica.failed(error, self.health.unhealthy_after) and self.on_state is not None:
            self.on_state(replica)

    def _succeeded(self, replica: Replica) -> None:
        if replica.succeeded(self.health.healthy_after) and self.on_state is not None:
            self.on_state(replica)

    def all(self) -> list[Replica]:
        """Every replica, in configuration order."""
        return [r for group in self.replicas.values() for r in group]

    def find(self, label: str) -> Replica | None:
        """The replica with that label."""
        return next((r for r in self.all() if r.label == label), None)


def _may_have_run(exc: UpstreamUnavailableError) -> UpstreamUnavailableError:
    """The error a client gets for a call that may have run and is not retried."""
    return UpstreamUnavailableError(
        f"{exc.message}; the call may have run, so it was not retried (the tool is neither "
        "read-only nor idempotent)",
        replica=exc.replica,
        code=exc.code,
    )
