"""stdio transport: newline-delimited JSON-RPC on stdin/stdout, on asyncio streams.

Nothing but JSON-RPC goes to stdout: while serving, ``sys.stdout`` points at stderr so a stray
``print`` cannot corrupt the stream. Requests run concurrently (one task each, so
``notifications/cancelled`` can cancel them); answers are coalesced into one write per loop
turn. On stdin EOF in-flight calls get :data:`EOF_GRACE` seconds to finish; SIGTERM/SIGINT
cancel them. Either way the server's ``stop()`` (plugins' ``on_stop``) runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aircore.errors import INVALID_REQUEST
from aircore.protocol.framing import decode, encode, error_response, parse_error
from aircore.protocol.session import Connection
from aircore.transports.table import check_options

if TYPE_CHECKING:
    from aircore.server import AirServer

__all__ = ["DEFAULT_MAX_FRAME", "EOF_GRACE", "StdioSession", "StdioTransport", "serve_stdio"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
"""Largest accepted frame in bytes; longer lines get -32600 and are skipped."""

EOF_GRACE = 10.0
"""Seconds in-flight calls may run after stdin closes."""

_CHUNK = 256 * 1024


def _request_id(message: Any) -> str | int | None:
    """The id of a frame that looks like a request (a usable id and a method), else None."""
    if type(message) is not dict or "method" not in message:
        return None
    msg_id = message.get("id")
    return msg_id if type(msg_id) in (str, int) else None


class StdioSession:
    """One stdio connection: frames in from ``read``, answers out through ``write``.

    Args:
        server: the server to dispatch to.
        write: called with bytes ready for stdout (already newline-terminated, coalesced).
        max_frame: the frame size limit.
    """

    def __init__(
        self,
        server: AirServer,
        write: Callable[[bytes], None],
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.server = server
        self.dispatcher = server.dispatcher
        self._write = write
        self.max_frame = max_frame
        self.conn = Connection(transport="pipe", sender=self._send)
        self._out = bytearray()
        self._flush_scheduled = False
        self._buf = bytearray()
        self._discarding = False
        self._loop = asyncio.get_running_loop()

    async def _send(self, message: dict[str, Any]) -> None:
        self.emit(message)

    def emit(self, message: dict[str, Any]) -> None:
        """Queue one message; written at the end of this loop turn."""
        self._out += encode(message)
        self._out += b"\n"
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write everything queued."""
        self._flush_scheduled = False
        if self._out:
            data = bytes(self._out)
            self._out.clear()
            self._write(data)

    def feed(self, data: bytes) -> None:
        """Split incoming bytes into frames and handle each complete one."""
        buf = self._buf
        buf += data
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            if self._discarding:
                self._discarding = False
            elif nl - start > self.max_frame:
                self._oversize()
            else:
                self._frame(bytes(buf[start:nl]))
            start = nl + 1
        del buf[:start]
        if len(buf) > self.max_frame:
            if not self._discarding:
                self._oversize()
                self._discarding = True
            buf.clear()

    def _oversize(self) -> None:
        self.emit(
            error_response(
                None, INVALID_REQUEST, f"Invalid Request: frame larger than {self.max_frame} bytes"
            )
        )

    def _frame(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            message = decode(line)
        except ValueError as exc:
            self.emit(parse_error(str(exc)))
            return
        # a request is tracked by id (``notifications/cancelled`` finds it); the dispatcher
        # checks and routes every frame, malformed ones included
        msg_id = _request_id(message)
        if msg_id is not None and msg_id in self.conn.inflight:
            self.emit(
                error_response(msg_id, INVALID_REQUEST, "Invalid Request: duplicate id in flight")
            )
            return
        task = self._loop.create_task(self._run(message))
        if msg_id is not None:
            self.conn.inflight[msg_id] = task
            task.add_done_callback(functools.partial(self._done, msg_id))

    def _done(self, msg_id: Any, task: asyncio.Task[None]) -> None:
        if self.conn.inflight.get(msg_id) is task:
            del self.conn.inflight[msg_id]

    async def _run(self, message: Any) -> None:
        response = await self.dispatcher.handle(message, self.conn)
        if response is not None:
            self.emit(response)

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for in-flight calls, then cancel the rest."""
        tasks = list(self.conn.inflight.values())
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)
        self.conn.cancel_all()
        self.flush()


def _is_pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def _stdin_chunks(stop: asyncio.Event) -> Any:
    """Yield chunks from stdin: a pipe reader when pollable, else a reader thread."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    mode = os.fstat(fd).st_mode
    # only pipes and sockets can be polled; /dev/null and other devices use the thread
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        reader = asyncio.StreamReader(limit=_CHUNK)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0, closefd=False)
        )
        try:
            while True:
                data = await reader.read(_CHUNK)
                if not data:
                    return
                yield data
        finally:
            transport.close()
    else:
        while not stop.is_set():
            data = await asyncio.to_thread(os.read, fd, _CHUNK)
            if not data:
                return
            yield data


async def _stdout_writer() -> tuple[Callable[[bytes], None], Callable[[], Awaitable[None]]]:
    """A non-blocking pipe writer for stdout when possible, else blocking writes."""
    loop = asyncio.get_running_loop()
    fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
    if _is_pollable(fd) and not os.isatty(fd):
        transport, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(fd, "wb", 0, closefd=False)
        )

        async def close() -> None:
            # let buffered answers reach the client before the loop ends
            for _ in range(500):
                if transport.is_closing() or not transport.get_write_buffer_size():
                    break
                await asyncio.sleep(0.01)
            transport.close()

        return transport.write, close

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    async def done() -> None:
        return None

    return write, done


async def serve_stdio(
    server: AirServer,
    *,
    max_frame: int = DEFAULT_MAX_FRAME,
    eof_grace: float = EOF_GRACE,
) -> None:
    """Serve ``server`` on this process's stdin/stdout until EOF or SIGTERM/SIGINT.

    Args:
        server: the server; started here and stopped on the way out.
        max_frame: the frame size limit in bytes.
        eof_grace: seconds in-flight calls may finish after stdin closes.
    """
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr  # only JSON-RPC on the real stdout
    write, close_out = await _stdout_writer()
    session = StdioSession(server, write, max_frame=max_frame)
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)

    async def pump() -> None:
        async for chunk in _stdin_chunks(stop):
            session.feed(chunk)
        session.feed(b"\n")  # a last frame without a newline

    reader = loop.create_task(pump())
    stopper = loop.create_task(stop.wait())
    try:
        await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        server.dispatcher.close()  # no client to listen any more: end listen streams and tasks
        if not stop.is_set():
            # stdin EOF: let in-flight calls finish, unless a signal arrives meanwhile
            draining = loop.create_task(session.drain(eof_grace))
            await asyncio.wait({draining, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not draining.done():
                draining.cancel()
                await asyncio.gather(draining, return_exceptions=True)
        stopper.cancel()
        await asyncio.gather(stopper, return_exceptions=True)
        await session.drain(0.0)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        session.flush()
        sys.stdout = saved_stdout
        await server.stop()
        await close_out()


class StdioTransport:
    """The stdio transport (:class:`aircore.types.Transport`).

    Options: ``max_message`` (the frame limit in bytes, :data:`DEFAULT_MAX_FRAME`; also
    accepted as ``max_frame``) and ``eof_grace``.
    """

    name = "stdio"
    options = frozenset({"max_message", "max_frame", "eof_grace"})

    async def serve(self, server: AirServer, **options: Any) -> None:
        """Serve ``server`` on stdin/stdout (:func:`serve_stdio`).

        Raises:
            DefinitionError: an option this transport does not take.
        """
        check_options(self, options)
        max_message = options.pop("max_message", None)
        if max_message is not None:
            options["max_frame"] = max_message
        await serve_stdio(server, **options)
