"""What the gateway needs from the OS: starting, stopping and killing a stdio upstream's process
together with whatever it started, and the signal that reloads the configuration.

The reload signal is SIGHUP where the interpreter has it (:func:`reload_signal`); elsewhere
(Windows) the configuration file is watched instead (:func:`needs_file_watch`, the watch
itself is portable: :class:`airgateway.reload.ConfigWatch`).

The implementation is chosen by what the interpreter offers:

- :class:`ProcessGroups` where ``os.killpg`` exists (Linux, macOS): the child leads a new
  session (so a terminal's Ctrl+C reaches the gateway only), is asked to stop with SIGTERM to
  its group and killed with SIGKILL to its group, so a wrapper's own children (``npx``,
  ``uv run``, ``sh -c``) go too: one left behind keeps the stdout pipe open, and with it the
  reader, the transport and the process itself.
- :class:`ConsoleGroups` elsewhere (Windows, which has neither process groups of that kind nor
  SIGKILL): the child starts in a new console process group (``CREATE_NEW_PROCESS_GROUP``, so
  Ctrl+C at the gateway's console does not reach it), is asked to stop with Ctrl+Break
  (``CTRL_BREAK_EVENT``; air's own servers stop cleanly on it), and is killed with its tree by
  ``taskkill /T /F`` (``TerminateProcess`` alone would leave its children running).

Both import on every OS; each step that a Windows-only name serves falls back to ``terminate``
/``kill`` where that name is missing, so :class:`ConsoleGroups` runs in the tests on Linux.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "PROCESSES",
    "ConsoleGroups",
    "Process",
    "ProcessGroups",
    "Processes",
    "needs_file_watch",
    "on_reload_signal",
    "reload_signal",
]

_TASKKILL_TIMEOUT = 10.0


class Process(Protocol):
    """The part of ``asyncio.subprocess.Process`` used here."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...

    def send_signal(self, sig: int) -> None: ...


class Processes(Protocol):
    """One OS's way of running a child with what it starts."""

    name: str

    def spawn_options(self) -> dict[str, Any]:
        """Keyword arguments for ``create_subprocess_exec``."""
        ...

    def ask_to_stop(self, proc: Process) -> None:
        """Ask the child (and what it started) to stop."""
        ...

    def kill(self, proc: Process) -> None:
        """End the child and what it started, now; after the child exited, end what it left
        behind where the OS can still find it."""
        ...


class ProcessGroups:
    """POSIX: a new session per child, signals to its process group (module docstring)."""

    name = "process-groups"

    def spawn_options(self) -> dict[str, Any]:
        return {"start_new_session": True}  # Ctrl+C in a terminal reaches the gateway only

    def ask_to_stop(self, proc: Process) -> None:
        self._signal_group(proc, signal.SIGTERM)

    def kill(self, proc: Process) -> None:
        self._signal_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))

    @staticmethod
    def _signal_group(proc: Process, sig: int) -> None:
        """Once the child is reaped its pid is free, but the kernel hands it out again only
        when no process group of that number is left: a live process with that pid means our
        group is gone, and the group of that number (if any) belongs to someone else — never
        signalled."""
        if proc.returncode is not None:
            try:
                os.kill(proc.pid, 0)
            except ProcessLookupError:
                pass  # nobody has the pid: a group of that number can only be ours
            except PermissionError:
                return  # another user's process has the pid now
            else:
                return  # another process of ours has the pid now
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):  # the group is gone (or was never ours)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)


class ConsoleGroups:
    """Windows: a new console process group per child, Ctrl+Break to ask, ``taskkill /T /F``
    to end the tree (module docstring)."""

    name = "console-groups"

    def spawn_options(self) -> dict[str, Any]:
        flag = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", None)
        return {} if flag is None else {"creationflags": flag}

    def ask_to_stop(self, proc: Process) -> None:
        if proc.returncode is not None:
            return
        ctrl_break = getattr(signal, "CTRL_BREAK_EVENT", None)
        if ctrl_break is not None:
            try:
                proc.send_signal(ctrl_break)
                return
            except OSError:  # no console to send it through (a GUI client spawned us)
                pass
        with contextlib.suppress(ProcessLookupError, OSError):
            proc.terminate()

    def kill(self, proc: Process) -> None:
        if proc.returncode is not None:
            return  # no group outlives its leader here: what it left behind is out of reach
        taskkill = shutil.which("taskkill")
        if taskkill is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                done = subprocess.run(
                    [taskkill, "/T", "/F", "/PID", str(proc.pid)],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=_TASKKILL_TIMEOUT,
                    check=False,
                )
                if done.returncode == 0:
                    return
        with contextlib.suppress(ProcessLookupError, OSError):
            proc.kill()


def _choose() -> Processes:
    return ProcessGroups() if hasattr(os, "killpg") else ConsoleGroups()


PROCESSES: Processes = _choose()
"""The implementation in use (a test may put the other one here)."""


def reload_signal() -> signal.Signals | None:
    """The signal that asks the gateway to reload its configuration: SIGHUP, where the
    interpreter has it (not on Windows)."""
    found = getattr(signal, "SIGHUP", None)
    return found if isinstance(found, signal.Signals) else None


def needs_file_watch() -> bool:
    """Whether the configuration file must be watched to be reloaded (no reload signal)."""
    return reload_signal() is None


def on_reload_signal(callback: Callable[[], None]) -> Callable[[], None] | None:
    """Run ``callback`` on the running loop at each reload signal.

    Returns:
        The function that puts the former handler back, or ``None`` where there is no
        reload signal (:func:`needs_file_watch`).
    """
    sig = reload_signal()
    if sig is None:
        return None
    from airhttp import on_stop_signals  # loop handler, or a process handler (no loop one)

    return on_stop_signals(callback, signals=[sig])
