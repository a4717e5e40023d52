from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from airstore._batch import Batcher


async def test_ops_submitted_in_one_turn_run_as_one_batch() -> None:
    batches: list[list[int]] = []

    async def run(ops: Sequence[int]) -> list[int]:
        batches.append(list(ops))
        await asyncio.sleep(0)
        return [op * 2 for op in ops]

    batcher: Batcher[int] = Batcher(run)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(100)))
    assert results == [i * 2 for i in range(100)]
    assert batches == [list(range(100))]


async def test_ops_arriving_during_a_batch_form_the_next_batch() -> None:
    batches: list[list[int]] = []
    release = asyncio.Event()

    async def run(ops: Sequence[int]) -> list[None]:
        batches.append(list(ops))
        if len(batches) == 1:
            await release.wait()
        return [None] * len(ops)

    batcher: Batcher[int] = Batcher(run, max_batch=3)
    first = batcher.submit(0)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    later = [batcher.submit(i) for i in range(1, 6)]
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *later), timeout=5)
    assert batches == [[0], [1, 2, 3], [4, 5]]


async def test_a_failed_op_fails_only_its_caller_and_a_failed_batch_fails_all() -> None:
    async def run(ops: Sequence[int]) -> list[object]:
        if 99 in ops:
            raise OSError("disk gone")
        return [ValueError(op) if op < 0 else op for op in ops]

    batcher: Batcher[int] = Batcher(run)
    ok, bad = batcher.submit(1), batcher.submit(-1)
    assert await ok == 1
    with pytest.raises(ValueError):
        await bad
    futs = [batcher.submit(1), batcher.submit(99)]
    for fut in futs:
        with pytest.raises(OSError):
            await fut
    await batcher.drain()
    assert batcher.pending == 0
