"""A hanging SLO webhook (issue 31, item 7): a real hook on 127.0.0.1 that answers one byte at a
time and never finishes. Each alert used to hold a worker thread of the default pool forever
(the socket timeout restarts with every byte); after six, the pool was gone and nothing that
needs it ran again. Now each POST has a total deadline, no thread, and a bounded number in
flight; the other sinks alert on."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from airmeter.slo_alerts import SloAlert, SloWatcher, WebhookAlerts
from airmeter.slo_config import Objective
from tests.airmeter.test_slo import NOW_MS, _calls, _clock, _store

TOOLS = [f"tool_{n}" for n in range(8)]


class DribblingHook:
    """Accepts POSTs and answers each with one byte every ``every`` seconds, forever (until
    the test ends); counts the connections it saw and those the client closed."""

    def __init__(self, every: float = 0.5) -> None:
        self._every = every
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/hook"
        self.accepted = 0
        self.closed_by_client = 0
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.accepted += 1
            t = threading.Thread(target=self._dribble, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _dribble(self, conn: socket.socket) -> None:
        answer = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 1000
        with conn:
            for byte in answer:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the client gave up and closed
                    with self._lock:
                        self.closed_by_client += 1
                    return
                if self._stop.wait(self._every):
                    return

    def close(self) -> None:
        self._stop.set()
        for t in list(self._threads):
            t.join(10)
        self._sock.close()


@pytest.fixture
def dribbling_hook() -> Iterator[DribblingHook]:
    hook = DribblingHook()
    try:
        yield hook
    finally:
        hook.close()


async def _breaching_store() -> object:
    records = []
    for n, tool in enumerate(TOOLS):
        records += _calls(200, start_ms=NOW_MS - 300_000, span_ms=300_000, tool=tool,
                          fail_every=2, seed=n)  # fmt: skip
    return await _store(records)


async def test_a_hanging_webhook_neither_holds_threads_nor_silences_other_sinks(
    dribbling_hook: DribblingHook,
) -> None:
    store = await _breaching_store()
    hook = WebhookAlerts(dribbling_hook.url, timeout=2.0)
    seen: list[SloAlert] = []
    objectives = [Objective(tool=t, availability=0.99) for t in TOOLS]
    watcher = SloWatcher(store, objectives, sinks=[hook, seen.append], clock=_clock())  # type: ignore[arg-type]
    _, sent = await asyncio.wait_for(watcher.check(), 30)
    assert len(sent) == len(TOOLS)
    assert sorted(a.status.tool for a in seen) == TOOLS  # the other sink got every alert
    # the default thread pool is free: nothing that needs it waits behind the hook
    probes = [asyncio.to_thread(lambda: 1) for _ in range(16)]
    assert await asyncio.wait_for(asyncio.gather(*probes), 10) == [1] * 16
    await asyncio.wait_for(hook.drain(), 30)  # each POST ends within its deadline
    assert (hook.sent, hook.failures, hook.dropped, hook.pending) == (0, len(TOOLS), 0, 0)
    assert dribbling_hook.accepted == len(TOOLS)


async def test_alerts_past_the_bound_in_flight_are_dropped_and_counted(
    dribbling_hook: DribblingHook,
) -> None:
    store = await _breaching_store()
    hook = WebhookAlerts(dribbling_hook.url, timeout=2.0, max_pending=3)
    seen: list[SloAlert] = []
    objectives = [Objective(tool=t, availability=0.99) for t in TOOLS]
    watcher = SloWatcher(store, objectives, sinks=[hook, seen.append], clock=_clock())  # type: ignore[arg-type]
    await asyncio.wait_for(watcher.check(), 30)
    assert len(seen) == len(TOOLS)
    assert hook.dropped == len(TOOLS) - 3
    await asyncio.wait_for(hook.aclose(), 30)
    assert hook.pending == 0
    assert hook.failures == 3
