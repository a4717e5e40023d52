"""``air scaffold tool`` on a real terminal (a pty), quit at its first question: Ctrl+D or Ctrl+C
end it with one line that says so, no traceback, and nothing written."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
PRESSES = 3
PRESS_WAIT = 15.0


def _own_terminal() -> None:
    """In the child, after ``setsid``: make stdin (the pty) the controlling terminal, as a shell
    does, so Ctrl+C typed on it becomes SIGINT; and take SIGINT's default back, as a shell gives
    it (a test run started in the background by a script inherits SIGINT ignored)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_reading_the_terminal(pid: int, deadline: float) -> None:
    """Wait until the child sleeps in its read of the terminal: a Ctrl+C typed between the
    prompt's write and that read is only seen by Python at the next line (CPython's input())."""
    while time.monotonic() < deadline:
        try:
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            return  # no /proc: go on at once
        if wchan == "wait_woken":  # n_tty_read waiting for input
            return
        threading.Event().wait(0.01)  # polling /proc: there is no event to wait on
    raise AssertionError(f"the child never waited for input; last wait channel {wchan!r}")


def _read_until(fd: int, marker: bytes | None, deadline: float) -> bytes:
    """What the terminal shows until ``marker`` appears (``None``: until the child closes it)."""
    seen = b""
    while marker is None or marker not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"waited for {marker!r}; the terminal showed {seen!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                if marker is None:
                    return seen
                raise AssertionError(f"the terminal closed before {marker!r}: {seen!r}")
            seen += chunk
    return seen


def _press(fd: int, key: bytes, said: bytes, deadline: float) -> bytes:
    """Type ``key`` until the terminal shows ``said`` (a key that lands between the prompt and
    the read may be seen by CPython's input() only at the next key, as a person would press it
    again)."""
    for _ in range(PRESSES):
        os.write(fd, key)
        try:
            return _read_until(fd, said, min(deadline, time.monotonic() + PRESS_WAIT))
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
    raise AssertionError(f"{said!r} never showed after {PRESSES} presses of {key!r}")


@pytest.mark.parametrize(
    ("key", "said", "code"),
    [(b"\x04", b"air scaffold: input ended; nothing written", 2),
     (b"\x03", b"air scaffold: interrupted; nothing written", 130)],
    ids=["ctrl-d", "ctrl-c"],
)  # fmt: skip
def test_quitting_at_a_question_says_so_and_writes_nothing(
    tmp_path: Path, key: bytes, said: bytes, code: int
) -> None:
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "aircli", "scaffold", "tool", "smp_rate_inquiry"],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
        start_new_session=True, preexec_fn=_own_terminal,
    )  # fmt: skip
    os.close(terminal)
    deadline = time.monotonic() + WAIT
    try:
        _read_until(controller, b"Display name", deadline)
        _wait_reading_the_terminal(proc.pid, deadline)
        shown = _press(controller, key, said, deadline)
        shown += _read_until(controller, None, deadline)
        assert proc.wait(timeout=WAIT) == code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT)  # reaped here, not reported by a later test's warnings
        os.close(controller)
    assert said in shown
    assert b"Traceback" not in shown
    assert list(tmp_path.iterdir()) == []
