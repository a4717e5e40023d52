"""Input rounds held in the gateway for 2026-07-28 clients of legacy-era upstreams: the
rounds' bookkeeping in process (the end-to-end rounds are in test_gateway_e2e.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airgateway.errors import GatewayError
from airgateway.rounds import STATE_PREFIX, HeldCall, InputRounds
from airgateway.types import JSONDict

WAIT = 10.0


class _Upstream:
    """A legacy upstream call that asks ``questions`` times, then answers what it was told."""

    def __init__(self, questions: int = 1) -> None:
        self.questions = questions
        self.cancelled = asyncio.Event()
        self.ended = asyncio.Event()
        self.refusals: list[JSONDict] = []

    async def __call__(self, held: HeldCall) -> JSONDict:
        told = []
        try:
            for n in range(self.questions):
                question = {"jsonrpc": "2.0", "id": n, "method": "elicitation/create",
                            "params": {"message": f"q{n}"}}  # fmt: skip
                answer = await held.relay(question)
                assert answer is not None
                if "error" in answer:
                    self.refusals.append(answer)
                    return {"content": [], "isError": True}
                told.append(answer["result"]["action"])
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        finally:
            self.ended.set()
        return {"content": [{"type": "text", "text": ",".join(told)}]}


def _retry(first: JSONDict, action: str) -> dict[str, Any]:
    [key] = first["inputRequests"]
    return {"requestState": first["requestState"], "inputResponses": {key: {"action": action}}}


async def test_each_question_is_a_round_and_the_last_retry_gets_the_result() -> None:
    rounds = InputRounds()
    first = await rounds.start("ci", _Upstream(questions=2))
    assert first["resultType"] == "input_required"
    assert first["requestState"].startswith(STATE_PREFIX)
    [asked] = first["inputRequests"].values()
    assert asked == {"method": "elicitation/create", "params": {"message": "q0"}}
    second = await rounds.resume("ci", _retry(first, "accept"))
    assert second["resultType"] == "input_required"
    assert second["requestState"] != first["requestState"]
    done = await rounds.resume("ci", _retry(second, "decline"))
    assert done == {"content": [{"type": "text", "text": "accept,decline"}]}
    assert rounds.held == 0
    with pytest.raises(GatewayError) as again:
        await rounds.resume("ci", _retry(second, "accept"))
    assert again.value.code == -32602


async def test_a_round_belongs_to_the_client_that_opened_it() -> None:
    rounds = InputRounds()
    first = await rounds.start("ci", _Upstream())
    with pytest.raises(GatewayError) as other:
        await rounds.resume("intruder", _retry(first, "accept"))
    assert other.value.code == -32602
    assert (await rounds.resume("ci", _retry(first, "accept")))["content"][0]["text"] == "accept"


async def test_held_calls_are_bounded_per_client_and_in_all() -> None:
    rounds = InputRounds(max_held=3, max_per_client=2)
    for _ in range(2):
        await rounds.start("ci", _Upstream())
    over = _Upstream()
    with pytest.raises(GatewayError):
        await rounds.start("ci", over)
    await asyncio.wait_for(over.ended.wait(), WAIT)  # the upstream call is not left hanging
    await rounds.start("other", _Upstream())
    with pytest.raises(GatewayError):
        await rounds.start("third", _Upstream())
    assert rounds.held == 3
    rounds.close()
    assert rounds.held == 0


async def test_an_unanswered_round_expires_and_cancels_the_upstream_call() -> None:
    rounds = InputRounds(hold_s=0.05)
    upstream = _Upstream()
    first = await rounds.start("ci", upstream)
    await asyncio.wait_for(upstream.cancelled.wait(), WAIT)
    assert rounds.held == 0
    with pytest.raises(GatewayError):
        await rounds.resume("ci", _retry(first, "accept"))


@settings(max_examples=60, deadline=None)
@given(
    state=st.text(max_size=60) | st.builds(lambda t: STATE_PREFIX + t, st.text(max_size=40)),
    responses=st.none() | st.dictionaries(st.text(max_size=12), st.none() | st.integers()
                                          | st.dictionaries(st.text(max_size=5), st.integers())),
)  # fmt: skip
def test_any_forged_retry_is_refused_and_the_round_stays_open(
    state: str, responses: dict[str, Any] | None
) -> None:
    async def main() -> None:
        rounds = InputRounds()
        first = await rounds.start(None, _Upstream())
        params = {"requestState": state, "inputResponses": responses}
        if state != first["requestState"]:
            with pytest.raises(GatewayError) as refused:
                await rounds.resume(None, params)
            assert refused.value.code == -32602
        assert rounds.held == 1
        assert (await rounds.resume(None, _retry(first, "ok")))["content"][0]["text"] == "ok"
        rounds.close()

    asyncio.run(main())
