"""What aircore needs from the OS: stdin and stdout for the stdio transport, and the loop.

The implementation is chosen by what the interpreter and the running loop offer:

- stdin and stdout: a loop whose pipe transports work on these descriptors (a selector loop
  or uvloop on POSIX, with a pipe or socket) reads and writes them without threads, the fast
  path. Elsewhere — the Proactor loop of Windows, whose pipe transports need overlapped
  handles that an inherited stdin never is, or a descriptor that is no pipe (a terminal,
  /dev/null, a file) — one reader thread feeds the loop (as the official SDK reads stdin), and
  a pipe's output goes through one writer thread that reports its queued bytes to the same
  flow control. Files and terminals are written directly (nothing piles up there).
- the loop: uvloop's where it is installed (not on Windows), else asyncio's default (the
  Proactor loop on Windows).

Everything imports on every OS; :data:`PIPE_TRANSPORTS` set to ``False`` selects the thread
path (what Windows takes) so that it runs in the tests on Linux. Stop signals are airhttp's
(:func:`airhttp.on_stop_signals`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import stat
import threading
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "PIPE_TRANSPORTS",
    "Input",
    "Output",
    "loop_factory",
    "open_stdin",
    "open_stdout",
]

PIPE_TRANSPORTS = True
"""Use the loop's pipe transports where they work; ``False`` forces the threads (what the
Proactor loop of Windows gets), so that path can be tested where pipe transports work."""

_CLOSE_WAIT = 5.0
"""Seconds answers still queued at the end may take to reach the client."""


class Input(Protocol):
    """stdin as the loop sees it."""

    async def read(self) -> bytes:
        """The next chunk; ``b""`` at end of input."""
        ...

    def close(self) -> None:
        """Stop reading (a thread blocked in a read is left to the process's end)."""
        ...


class Output(Protocol):
    """stdout as the loop sees it; ``on_pause(True)`` above the high-water mark,
    ``on_pause(False)`` once drained below the low one."""

    on_pause: Callable[[bool], None]

    def write(self, data: bytes) -> None:
        """Queue ``data`` (never blocks the loop on a pipe)."""
        ...

    def buffered(self) -> int:
        """Bytes written but not yet taken by the client (0 where that is not known)."""
        ...

    async def close(self) -> None:
        """Let queued answers reach the client (a bounded wait), then stop."""
        ...


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory when uvloop is installed (not on Windows), else ``None`` (asyncio's
    default loop: the Proactor loop on Windows)."""
    try:
        import uvloop
    except ImportError:  # Windows, or a trimmed install: plain asyncio
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def _is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _pipe_transports(loop: asyncio.AbstractEventLoop, fd: int) -> bool:
    """Whether the loop's pipe transports can serve ``fd`` (see the module docstring). Only
    pipes and sockets qualify: uvloop aborts the process on a character device."""
    proactor = getattr(asyncio, "ProactorEventLoop", None)
    if not PIPE_TRANSPORTS or (proactor is not None and isinstance(loop, proactor)):
        return False
    return _is_pipe(fd)


# ---- stdin ------------------------------------------------------------------------------
class _PipeInput:
    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.BaseTransport, chunk: int):
        self._reader = reader
        self._transport = transport
        self._chunk = chunk

    async def read(self) -> bytes:
        return await self._reader.read(self._chunk)

    def close(self) -> None:
        self._transport.close()


class ThreadInput:
    """stdin read by one daemon thread, a chunk at a time and one chunk ahead at most (the
    loop's pace is the reader's: backpressure holds). A daemon thread, not the loop's executor:
    a read blocked on a silent client must not hold up the process's exit."""

    def __init__(self, fd: int, chunk: int, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = fd
        self._chunk = chunk
        self._loop = loop
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self._credit = threading.Semaphore(1)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="air-stdin", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._credit.acquire()
            if self._closed:
                return
            try:
                data = os.read(self._fd, self._chunk)
            except OSError:  # a broken pipe reads as its end
                data = b""
            try:
                self._loop.call_soon_threadsafe(self._chunks.put_nowait, data)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                return
            if not data:
                return

    async def read(self) -> bytes:
        data = await self._chunks.get()
        if data:
            self._credit.release()  # one more read ahead
        return data

    def close(self) -> None:
        self._closed = True
        self._credit.release()


async def open_stdin(fd: int, chunk: int) -> Input:
    """stdin (``fd``) read in chunks of at most ``chunk`` bytes, by the path that works here."""
    loop = asyncio.get_running_loop()
    if _pipe_transports(loop, fd):
        reader = asyncio.StreamReader(limit=chunk)
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0, closefd=False)
            )
        except NotImplementedError:  # a loop without pipe transports: the thread
            pass
        else:
            return _PipeInput(reader, transport, chunk)
    return ThreadInput(fd, chunk, loop)


# ---- stdout -----------------------------------------------------------------------------
class _Flow(asyncio.Protocol):
    """The pipe transport's flow control, handed on to the output's ``on_pause``."""

    def __init__(self, output: _PipeOutput) -> None:
        self._output = output

    def pause_writing(self) -> None:
        self._output.on_pause(True)

    def resume_writing(self) -> None:
        self._output.on_pause(False)


class _PipeOutput:
    def __init__(self) -> None:
        self.on_pause: Callable[[bool], None] = lambda _blocked: None
        self.transport: asyncio.WriteTransport | None = None

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def buffered(self) -> int:
        assert self.transport is not None
        return self.transport.get_write_buffer_size()

    async def close(self) -> None:
        transport = self.transport
        assert transport is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CLOSE_WAIT
        while not transport.is_closing() and transport.get_write_buffer_size():
            if loop.time() >= deadline:
                break
            await asyncio.sleep(0.01)
        transport.close()


class ThreadOutput:
    """A pipe written by one daemon thread with blocking writes; the loop only queues. The
    queued bytes are the flow control: ``on_pause(True)`` when they pass ``high``,
    ``on_pause(False)`` once the thread has written them down to ``low``."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, high: int) -> None:
        self.on_pause: Callable[[bool], None] = lambda _blocked: None
        self._fd = fd
        self._loop = loop
        self._high = high
        self._low = high // 4
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._paused = False
        self._broken = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="air-stdout", daemon=True)
        self._thread.start()

    def write(self, data: bytes) -> None:
        if self._broken:
            return  # the client is gone: answers have nowhere to go
        with self._cond:
            self._queue.append(data)
            self._queued += len(data)
            self._cond.notify()
            if not self._paused and self._queued > self._high:
                self._paused = True
                self._loop.call_soon(self.on_pause, True)

    def buffered(self) -> int:
        return self._queued

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                data = self._queue[0]
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:  # the client closed its end
                self._broken = True
            with self._cond:
                self._queue.popleft()
                self._queued -= len(data)
                self._cond.notify_all()
                if self._broken:
                    self._queue.clear()
                    self._queued = 0
                if self._paused and self._queued <= self._low:
                    self._paused = False
                    with contextlib.suppress(RuntimeError):  # the loop is closed
                        self._loop.call_soon_threadsafe(self.on_pause, False)

    async def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join, _CLOSE_WAIT)


class _DirectOutput:
    """A terminal or a file: blocking writes, nothing piles up."""

    def __init__(self, fd: int) -> None:
        self.on_pause: Callable[[bool], None] = lambda _blocked: None
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def buffered(self) -> int:
        return 0

    async def close(self) -> None:
        return None


async def open_stdout(fd: int, high: int) -> Output:
    """stdout (``fd``) for answers, with flow control at ``high`` bytes queued (resuming below
    a quarter of it), by the path that works here."""
    loop = asyncio.get_running_loop()
    if _pipe_transports(loop, fd):
        output = _PipeOutput()
        try:
            transport, _ = await loop.connect_write_pipe(
                lambda: _Flow(output), os.fdopen(fd, "wb", 0, closefd=False)
            )
        except NotImplementedError:
            pass
        else:
            transport.set_write_buffer_limits(high=high, low=high // 4)
            output.transport = transport
            return output
    if _is_pipe(fd):
        return ThreadOutput(fd, loop, high)
    return _DirectOutput(fd)
