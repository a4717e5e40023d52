"""Connecting to a legacy SSE upstream twice at once (a health round while a call reconnects
the same replica): both connects end with the one stream open, neither drops the other's
half-open stream and waits out its handshake timeout."""

from __future__ import annotations

import asyncio

from airgateway.upstream_sse import SseUpstream
from tests.airgateway.procs import sse_upstream


async def test_two_connects_at_once_share_one_stream_and_both_succeed() -> None:
    with sse_upstream() as server:
        upstream = SseUpstream("sse#0", server.url, handshake_timeout=5.0)
        try:
            results = await asyncio.gather(
                upstream.connect(), upstream.connect(), upstream.connect(),
                return_exceptions=True,
            )  # fmt: skip
            assert results == [None, None, None], results
            reader = upstream._reader
            await upstream.connect()  # open: nothing new
            assert upstream._reader is reader
            answer = await upstream.request("tools/list", {}, timeout=10)
            assert "tools" in answer, answer
        finally:
            await upstream.close()
