"""Real processes for the gateway tests: upstream replicas and gateways, stopped on exit."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM = str(HERE / "upstream_server.py")
SSE_SERVER = str(HERE / "sse_server.py")
_URL = re.compile(r"http://127\.0\.0\.1:\d+/\S*")
START_TIMEOUT = 30.0


class Proc:
    """A started process, the URL it printed and every stderr line so far."""

    def __init__(self, popen: subprocess.Popen[str], url: str, lines: list[str]) -> None:
        self.popen = popen
        self.url = url
        self.lines = lines
        """Its stderr lines (a thread keeps appending them)."""

    def kill(self) -> None:
        """SIGKILL, and reap."""
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(timeout=10)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        """Send ``sig`` and return the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise


def _read_url(popen: subprocess.Popen[str], lines: list[str]) -> str:
    """The first loopback URL on the process's stderr (then keep draining it into ``lines``)."""
    assert popen.stderr is not None
    found: list[str] = []
    seen = threading.Event()

    def drain() -> None:
        assert popen.stderr is not None
        for line in popen.stderr:
            lines.append(line)
            match = _URL.search(line)
            if match and not found:
                found.append(match.group(0))
                seen.set()
        seen.set()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    _drains[popen.pid] = thread
    if not seen.wait(START_TIMEOUT) or not found:
        popen.kill()
        raise AssertionError(f"no URL from {popen.args}: {''.join(lines)[-2000:]}")
    return found[0]


_drains: dict[int, threading.Thread] = {}


def _reap(popen: subprocess.Popen[str]) -> None:
    if popen.poll() is None:
        popen.kill()
    popen.wait(timeout=10)
    thread = _drains.pop(popen.pid, None)
    if thread is not None:
        thread.join(10)
    if popen.stderr is not None:
        popen.stderr.close()


def _popen(argv: Sequence[str], env: dict[str, str] | None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


@contextmanager
def started(argv: Sequence[str], env: dict[str, str] | None = None) -> Iterator[Proc]:
    """Start ``argv``; yield it with the URL it printed on stderr; kill it on the way out."""
    with started_all((argv, env)) as (proc,):
        yield proc


@contextmanager
def started_all(*specs: tuple[Sequence[str], dict[str, str] | None]) -> Iterator[list[Proc]]:
    """Start every ``(argv, env)`` at once (their start-ups overlap), then wait for each one's
    URL as :func:`started` does; yield them in order, kill them all on the way out (those
    already started too, when a later one cannot be)."""
    popens: list[subprocess.Popen[str]] = []
    try:
        for argv, env in specs:
            popens.append(_popen(argv, env))
        procs = []
        for popen in popens:
            lines: list[str] = []
            procs.append(Proc(popen, _read_url(popen, lines), lines))
        yield procs
    finally:
        for popen in popens:
            _reap(popen)


def air(*args: str) -> list[str]:
    """The argv of ``air ARGS``."""
    return [sys.executable, "-m", "aircli", *args]


def http_replica(name: str, port: int = 0) -> list[str]:
    """argv of an HTTP replica of the test upstream (``REPLICA`` goes in the environment)."""
    return air("serve", UPSTREAM, "--transport", "http", "--port", str(port))


def free_port() -> int:
    """A port free right now on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def sse_upstream() -> Iterator[Proc]:
    """The official SDK's legacy SSE server."""
    port = free_port()
    popen = subprocess.Popen(
        [sys.executable, SSE_SERVER, str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, popen)
        yield Proc(popen, f"http://127.0.0.1:{port}/sse", [])  # type: ignore[arg-type]
    finally:
        if popen.poll() is None:
            popen.kill()
        popen.wait(timeout=10)


def _wait_port(port: int, popen: subprocess.Popen[bytes]) -> None:
    import time

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            raise AssertionError("the SSE server exited")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        threading.Event().wait(0.05)  # polling a port: no event to wait on
    raise AssertionError(f"nothing listens on {port}")
