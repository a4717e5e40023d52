"""Helpers that start real aircore servers in subprocesses (stdio and HTTP)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "demo_server.py")
LIFECYCLE = str(ROOT / "tests" / "aircore" / "fixtures" / "lifecycle_server.py")
MODERN = str(ROOT / "tests" / "aircore" / "fixtures" / "modern_server.py")
STARTUP_TIMEOUT = 30.0


def serve_args(target: str, *extra: str) -> list[str]:
    """argv of ``air serve TARGET`` run by this interpreter."""
    return [sys.executable, "-m", "aircli", "serve", target, *extra]


def lifecycle_over_stdio(frames: list[bytes], events: Path) -> subprocess.CompletedProcess[bytes]:
    """Feed ``frames`` (one per line) to the lifecycle server over stdio, then close its stdin;
    what it answered is in ``stdout``."""
    return subprocess.run(
        serve_args(LIFECYCLE, "--transport", "stdio"),
        input=b"\n".join(frames) + b"\n",
        capture_output=True,
        timeout=60,
        env={**os.environ, "AIR_TEST_EVENTS": str(events)},
        check=False,
    )


class HttpServer:
    """An ``air serve --transport http --port 0`` subprocess and its URL."""

    def __init__(self, target: str, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            serve_args(
                target, "--transport", "http", "--port", "0", "--store", "memory://", *extra
            ),
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
            cwd=ROOT,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # blocks until the server prints its URL (or dies)
        found = re.search(r"http://\S+", line)
        if found is None:
            self.close()
            raise RuntimeError(f"server did not start: {line!r}")
        self.url = found.group(0)
        self.base = self.url.rsplit("/", 1)[0]

    def close(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code = self.proc.wait(timeout=STARTUP_TIMEOUT)
        finally:
            if self.proc.stderr is not None:
                self.proc.stderr.close()
        return code


@pytest.fixture(scope="module")
def demo_http() -> Iterator[HttpServer]:
    server = HttpServer(DEMO)
    try:
        yield server
    finally:
        assert server.close() == 0
