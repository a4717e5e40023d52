"""The Load Balancer's strategies over real Replica objects."""

from __future__ import annotations

from collections import Counter

import pytest

from airgateway.balancer import Balancer
from airgateway.config import ServerConfig
from airgateway.replica import DOWN, HEALTHY, Replica
from airgateway.upstream_http import HttpUpstream


def _replicas(n: int) -> list[Replica]:
    out = []
    for i in range(n):
        config = ServerConfig(name="s", transport="http", url=f"http://127.0.0.1:1/{i}")
        replica = Replica(config, i, HttpUpstream(f"s#{i}", config.url or ""))
        replica.state = HEALTHY
        out.append(replica)
    return out


def test_round_robin_takes_turns() -> None:
    replicas = _replicas(3)
    balancer = Balancer("round_robin")
    picks = [balancer.pick(replicas) for _ in range(6)]
    assert Counter(r.label for r in picks if r) == {"s#0": 2, "s#1": 2, "s#2": 2}


def test_least_outstanding_picks_the_idlest() -> None:
    replicas = _replicas(3)
    replicas[0].in_flight, replicas[1].in_flight, replicas[2].in_flight = 5, 1, 3
    assert Balancer("least_outstanding").pick(replicas) is replicas[1]


def test_p2c_latency_prefers_the_faster_of_two() -> None:
    replicas = _replicas(2)
    replicas[0].latency_ms, replicas[1].latency_ms = 50.0, 1.0
    balancer = Balancer("p2c_latency", seed=1)
    assert all(balancer.pick(replicas) is replicas[1] for _ in range(20))


def test_session_hash_keeps_a_session_on_one_replica_and_moves_only_its_own() -> None:
    replicas = _replicas(3)
    balancer = Balancer("session_hash")
    keys = [f"session-{i}" for i in range(60)]
    first = {k: balancer.pick(replicas, session_key=k) for k in keys}
    assert all(balancer.pick(replicas, session_key=k) is first[k] for k in keys)
    gone = replicas[0]
    gone.state = DOWN
    for key in keys:
        now = balancer.pick(replicas, session_key=key)
        assert now is not gone
        if first[key] is not gone:
            assert now is first[key]


def test_no_healthy_replica_gives_none_and_excluded_ones_are_skipped() -> None:
    replicas = _replicas(2)
    balancer = Balancer("round_robin")
    assert balancer.pick(replicas, exclude=replicas[:1]) is replicas[1]
    for r in replicas:
        r.state = DOWN
    assert balancer.pick(replicas) is None


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        Balancer("random")


async def test_failed_calls_eject_a_replica_passively_and_only_safe_calls_are_retried() -> None:
    from airgateway.config import HealthConfig
    from airgateway.errors import UpstreamUnavailableError
    from airgateway.router import Router

    group = _replicas(2)
    told: list[str] = []
    router = Router({"s": group}, Balancer("round_robin"), HealthConfig(unhealthy_after=2),
                    retries=1, on_state=lambda r: told.append(f"{r.label}:{r.state}"))  # fmt: skip
    served: list[int] = []

    async def attempt(replica: Replica) -> int:
        if replica.index == 0:  # replica 0 has died: every call to it is lost
            raise UpstreamUnavailableError("connection lost", replica=replica.label)
        served.append(replica.index)
        return replica.index

    for _ in range(4):  # read-only calls: a lost one is retried on the other replica
        assert await router.run("s", attempt, retry_safe=True) == 1
    assert group[0].state == DOWN
    assert told == ["s#0:down"]  # out after two consecutive failures, told once
    assert group[0].failures == 2  # and never picked again once out
    group[0].state = HEALTHY  # back (as a health check would do) but still dead
    group[0].failures = 0
    before = len(served)
    outcomes: list[object] = []
    for _ in range(2):  # round robin: one write to each replica
        try:
            outcomes.append(await router.run("s", attempt, retry_safe=False))
        except UpstreamUnavailableError as exc:  # a write is not retried: a clean error
            outcomes.append(exc.code)
            told.append(exc.message)
    assert sorted(outcomes, key=str) == [-32003, 1]
    assert told[-1].endswith("the call may have run, so it was not retried (the tool is "
                             "neither read-only nor idempotent)")  # fmt: skip
    assert len(served) - before == 1  # the lost write did not run again on replica 1


def test_session_hash_sends_a_session_to_one_url_whatever_order_each_gateway_numbers_it_in() -> (
    None
):
    urls = ["http://127.0.0.1:3510/mcp", "http://127.0.0.1:3511/mcp", "http://[::1]:3512/mcp"]

    def group(order: list[str]) -> list[Replica]:
        out = []
        for i, url in enumerate(order):  # a gateway's own replica first, adopted ones after
            replica = Replica(ServerConfig(name="s", transport="http", url=url), i,
                              HttpUpstream(f"s#{i}", url))  # fmt: skip
            replica.state = HEALTHY
            out.append(replica)
        return out

    one, other = group(urls), group(urls[::-1])
    balancer = Balancer("session_hash")
    for k in range(200):
        a = balancer.pick(one, session_key=f"session-{k}")
        b = balancer.pick(other, session_key=f"session-{k}")
        assert a is not None
        assert b is not None
        assert a.config.url == b.config.url
