"""stdio transport: newline-delimited JSON-RPC on stdin/stdout, on asyncio streams.

Nothing but JSON-RPC goes to stdout: while serving, ``sys.stdout`` points at stderr so a stray
``print`` cannot corrupt the stream. Requests run concurrently (one task each, so
``notifications/cancelled`` can cancel them); answers are coalesced into one write per loop
turn. On stdin EOF in-flight calls get :data:`EOF_GRACE` seconds to finish; SIGTERM, Ctrl+C (and
Ctrl+Break on Windows) cancel them. Either way the server's ``stop()`` (plugins' ``on_stop``)
runs. stdin and stdout are read and written by the path this OS and loop offer
(``aircore._platform``: pipe transports, or threads on Windows).

Backpressure: at most ``max_inflight`` frames are handled at once, and when answers pile up
unread (more than ``max_buffer`` bytes waiting for the client), no new frame is read until
they drain below a quarter of it. The answers of calls already running when the client stopped
reading cannot be refused, so how many run matters: requests of a kind (a tool, or a method)
whose answers were over 4 KiB lately, or that has not answered yet, start at most four per loop
turn, and once an answer of N bytes was seen, no more calls run at once than N-byte answers fit
in ``max_buffer`` (at least four). A client that never reads stdout stalls; the unread answers
stay near ``max_buffer`` (1 MiB answers to small requests: 12 MiB above the idle RSS, where 64
calls at once took 128 MiB).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aircore._platform import open_stdin, open_stdout
from aircore.errors import INVALID_REQUEST, DefinitionError
from aircore.protocol.framing import decode, encode, error_response, parse_error
from aircore.protocol.session import Connection
from aircore.transports.options import check_options
from airhttp import on_stop_signals

if TYPE_CHECKING:
    from aircore.types import Served

__all__ = [
    "DEFAULT_MAX_BUFFER",
    "DEFAULT_MAX_FRAME",
    "DEFAULT_MAX_INFLIGHT",
    "EOF_GRACE",
    "StdioSession",
    "StdioTransport",
    "serve_stdio",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_FRAME = 16 * 1024 * 1024
"""Largest accepted frame in bytes; longer lines get -32600 and are skipped."""

EOF_GRACE = 10.0
"""Seconds in-flight calls may run after stdin closes."""

DEFAULT_MAX_INFLIGHT = 64
"""Frames handled at once; reading pauses beyond it."""

DEFAULT_MAX_BUFFER = 4 * 1024 * 1024
"""Bytes of answers waiting for the client above which reading pauses (it resumes below a
quarter of it)."""

_CHUNK = 256 * 1024
_ADMIT_PER_TURN = 4
"""Requests started in one loop turn whose answers may be large (their kind — a tool, or a
method — answered more than :data:`_SMALL` bytes lately, or never yet); the rest start in the
next turns, so the answers of the first can fill the output (and pause reading) before a whole
burst is running. Requests of kinds that answer small are not paced."""
_KINDS = 1024
"""Kinds of request whose answer sizes are remembered (a client's made-up names are dropped
beyond it)."""
_SMALL = 4096
"""Answers up to this size never slow admission down (``max_buffer`` holds plenty)."""
_MIN_WINDOW = 4
"""Calls that may run at once however large the answers are."""


def _kind(message: dict[str, Any]) -> Any:
    """What a request's answer size is remembered by: its method, and a tool's name."""
    method = message.get("method")
    params = message.get("params")
    if method == "tools/call" and type(params) is dict:
        name = params.get("name")
        if type(name) is str:
            return name
    return (method,) if type(method) is str else None


def _request_id(message: Any) -> str | int | None:
    """The id of a frame that looks like a request (a usable id and a method), else None."""
    if type(message) is not dict or "method" not in message:
        return None
    msg_id = message.get("id")
    return msg_id if type(msg_id) in (str, int) else None


class StdioSession:
    """One stdio connection: frames in from ``feed``, answers out through ``write``.

    Args:
        server: the server to dispatch to.
        write: called with bytes ready for stdout (already newline-terminated, coalesced).
        max_frame: the frame size limit.
        max_inflight: frames handled at once.
        max_buffer: unread answer bytes above which reading pauses.
        buffered: how many written bytes still wait for the client (0 if unknown).
    """

    def __init__(
        self,
        server: Served,
        write: Callable[[bytes], None],
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        max_buffer: int = DEFAULT_MAX_BUFFER,
        buffered: Callable[[], int] = lambda: 0,
    ) -> None:
        self.server = server
        self.dispatcher = server.dispatcher
        self._write = write
        self._buffered = buffered
        self.max_frame = max_frame
        self.max_inflight = max_inflight
        self.max_buffer = max_buffer
        self.conn = Connection(transport="pipe", sender=self._send)
        self._out = bytearray()
        self._flush_scheduled = False
        self._buf = bytearray()
        self._discarding = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._write_blocked = False
        self._big = 0  # the largest recent answer, decaying
        self._window = max_inflight  # calls that may run at once (see _fit)
        self._sizes: dict[Any, int] = {}  # the recent answer size of each kind of request
        self._capped = False
        self._loop = asyncio.get_running_loop()
        self._ready = asyncio.Event()
        self._ready.set()
        self.pauses = 0
        """Times reading paused (in-flight cap or unread answers)."""

    async def _send(self, message: dict[str, Any]) -> None:
        self.emit(message)

    def emit(self, message: dict[str, Any]) -> None:
        """Queue one message; written at the end of this loop turn."""
        self._emit(message)

    def _emit(self, message: dict[str, Any]) -> int:
        data = encode(message)
        size = len(data)
        if size > self._big:
            self._big = size
            self._fit()
        self._out += data
        self._out += b"\n"
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self.flush)
        return size

    def flush(self) -> None:
        """Write everything queued."""
        self._flush_scheduled = False
        if self._big > _SMALL:  # large answers are forgotten gradually, once per write
            self._big -= self._big >> 3
            self._fit()
        if self._out:
            data = bytes(self._out)
            self._out = bytearray()  # not clear(): a large one's memory goes back at once
            self._write(data)
            if not self._write_blocked and self._buffered() > self.max_buffer:
                self.writing_paused(True)

    # ---- backpressure -------------------------------------------------------------------
    def _fit(self) -> None:
        """Calls that may run at once: as many as answers of the largest recent size fit in
        ``max_buffer`` (at least :data:`_MIN_WINDOW`, at most ``max_inflight``). The answers of
        calls already running cannot be refused when the client stops reading; this keeps
        what they add to the unread bytes near ``max_buffer``."""
        if self._big:
            fits = self.max_buffer // self._big
            self._window = min(self.max_inflight, max(_MIN_WINDOW, fits))
        if self._capped and len(self._tasks) < self._window:
            self._capped = False
            self._settle()

    @property
    def paused(self) -> bool:
        """Whether new frames wait (too many in flight, or too many answers unread)."""
        return self._write_blocked or len(self._tasks) >= self._window

    def writing_paused(self, blocked: bool) -> None:
        """The output side's flow control: ``True`` above the high-water mark, ``False``
        once it drained below the low one."""
        self._write_blocked = blocked
        self._settle()

    def _settle(self) -> None:
        if self.paused:
            self._capped = True
            if self._ready.is_set():
                self.pauses += 1
                self._ready.clear()
            return
        if self._has_frame():
            self._loop.call_soon(self._frames)  # the next few, in the next turn
            if len(self._buf) > _CHUNK:
                self._ready.clear()  # read on once these are taken
                return
        self._ready.set()

    def _has_frame(self) -> bool:
        return self._buf.find(b"\n") >= 0

    async def wait_ready(self) -> None:
        """Return when the session can take more input (nothing paused, no frame waiting)."""
        await self._ready.wait()

    # ---- input --------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Split incoming bytes into frames and handle complete ones while not paused."""
        self._buf += data
        self._frames()

    def _frames(self) -> None:
        buf = self._buf
        start = 0
        admitted = 0
        while not self.paused and admitted < _ADMIT_PER_TURN:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            if self._discarding:
                self._discarding = False
            elif nl - start > self.max_frame:
                self._oversize()
            elif self._frame(bytes(buf[start:nl])):
                admitted += 1
            start = nl + 1
        del buf[:start]
        if len(buf) > self.max_frame and not self._has_frame():
            if not self._discarding:
                self._oversize()
                self._discarding = True
            buf.clear()
        self._settle()

    def _oversize(self) -> None:
        self.emit(
            error_response(
                None, INVALID_REQUEST, f"Invalid Request: frame larger than {self.max_frame} bytes"
            )
        )

    def _frame(self, line: bytes) -> bool:
        """Handle one frame; whether it started a request whose answer may be large (its kind
        answered more than :data:`_SMALL` bytes lately, or has not answered yet)."""
        line = line.strip()
        if not line:
            return False
        try:
            message = decode(line)
        except ValueError as exc:
            self.emit(parse_error(str(exc)))
            return False
        # a request is tracked by id (``notifications/cancelled`` finds it); the dispatcher
        # checks and routes every frame, malformed ones included
        msg_id = _request_id(message)
        if msg_id is not None and msg_id in self.conn.inflight:
            self.emit(
                error_response(msg_id, INVALID_REQUEST, "Invalid Request: duplicate id in flight")
            )
            return False
        kind = _kind(message) if msg_id is not None else None
        task = self._loop.create_task(self._run(message, kind))
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        if msg_id is None:
            return False
        self.conn.inflight[msg_id] = task
        task.add_done_callback(functools.partial(self._done, msg_id))
        return not 0 <= self._sizes.get(kind, -1) <= _SMALL

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._capped and len(self._tasks) < self._window:
            self._capped = False
            self._settle()  # we were at the cap: take more input

    def _done(self, msg_id: Any, task: asyncio.Task[None]) -> None:
        if self.conn.inflight.get(msg_id) is task:
            del self.conn.inflight[msg_id]

    async def _run(self, message: Any, kind: Any) -> None:
        response = await self.dispatcher.handle(message, self.conn)
        if response is not None:
            size = self._emit(response)
            if kind is not None:
                sizes = self._sizes
                if len(sizes) >= _KINDS:
                    sizes.clear()  # names a client made up: forget them all
                former = sizes.get(kind, 0)
                sizes[kind] = size if size > former else former - (former >> 3)

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for in-flight calls (and frames still waiting behind
        the in-flight cap), then cancel the rest."""
        deadline = self._loop.time() + grace
        while self._loop.time() < deadline:
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=deadline - self._loop.time())
            elif self._has_frame() and not self.paused:
                self._frames()  # frames that waited behind the cap
            else:
                break
        pending = set(self._tasks)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)
        self.conn.cancel_all()
        self.flush()


async def serve_stdio(
    server: Served,
    *,
    max_frame: int = DEFAULT_MAX_FRAME,
    eof_grace: float = EOF_GRACE,
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    max_buffer: int = DEFAULT_MAX_BUFFER,
) -> None:
    """Serve ``server`` on this process's stdin/stdout until EOF or SIGTERM/SIGINT.

    Args:
        server: the server; started here and stopped on the way out.
        max_frame: the frame size limit in bytes.
        eof_grace: seconds in-flight calls may finish after stdin closes.
        max_inflight: frames handled at once (reading pauses beyond it).
        max_buffer: unread answer bytes above which reading pauses.

    Raises:
        DefinitionError: a limit that is not a positive whole number.
    """
    for option, value in (
        ("max_frame", max_frame),
        ("max_inflight", max_inflight),
        ("max_buffer", max_buffer),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DefinitionError(f"{option}={value!r} must be a positive whole number")
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr  # only JSON-RPC on the real stdout
    writer = await open_stdout(
        sys.__stdout__.fileno() if sys.__stdout__ is not None else 1, max_buffer
    )
    session = StdioSession(
        server,
        writer.write,
        max_frame=max_frame,
        max_inflight=max_inflight,
        max_buffer=max_buffer,
        buffered=writer.buffered,
    )
    writer.on_pause = session.writing_paused
    stdin = await open_stdin(sys.stdin.fileno(), _CHUNK)
    uninstall = on_stop_signals(stop.set)  # SIGTERM, Ctrl+C, Ctrl+Break

    async def pump() -> None:
        while chunk := await stdin.read():
            session.feed(chunk)
            await session.wait_ready()  # backpressure: read on only when it can take more
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
        uninstall()
        stdin.close()
        session.flush()
        sys.stdout = saved_stdout
        await server.stop()
        await writer.close()


class StdioTransport:
    """The stdio transport (:class:`aircore.types.Transport`).

    Options: ``max_message`` (the frame limit in bytes, :data:`DEFAULT_MAX_FRAME`; also
    accepted as ``max_frame``), ``eof_grace``, ``max_inflight`` and ``max_buffer``.
    """

    name = "stdio"
    options = frozenset({"max_message", "max_frame", "eof_grace", "max_inflight", "max_buffer"})

    async def serve(self, server: Served, **options: Any) -> None:
        """Serve ``server`` on stdin/stdout (:func:`serve_stdio`).

        Raises:
            DefinitionError: an option this transport does not take.
        """
        check_options(self, options)
        max_message = options.pop("max_message", None)
        if max_message is not None:
            options["max_frame"] = max_message
        await serve_stdio(server, **options)
