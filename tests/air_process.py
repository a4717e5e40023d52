"""Run the ``air`` command as a real process in tests."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

_URL = re.compile(r"http://127\.0\.0\.1:\d+/")


def air(*args: str) -> list[str]:
    """The argv of ``air ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "aircli", *args]


def run_air(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``air ARGS`` to its end (stdin closed) and return what it said and its status."""
    return subprocess.run(
        air(*args),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def serving(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stop_timeout: float = 30,
) -> Iterator[str]:
    """Start ``air ARGS``, yield the loopback URL it prints first on stdout, then stop it with
    SIGINT (Ctrl+C) and assert it exits 0. A process still alive on error is killed."""
    proc = subprocess.Popen(
        air(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env=None if env is None else dict(env),
        # A test run started in the background inherits SIGINT ignored; Ctrl+C must reach air.
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()
        match = _URL.search(line)
        assert match, line
        yield match.group(0)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=stop_timeout) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
