"""A stdio upstream: one supervised child process per replica, calls multiplexed by id.

The process is spawned on :meth:`StdioUpstream.connect`, and restarted with exponential
backoff (0.2 s doubling to 30 s) whenever it exits while the gateway runs; calls in flight
when it dies fail at once with :class:`~airgateway.errors.UpstreamUnavailableError`. A
restarted process is announced to the listener as a ``tools/list_changed``, so the replica is
checked and back in the pool at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence

import orjson

from airgateway import _platform, eras
from airgateway._mux import Mux
from airgateway.errors import GatewayError, UpstreamUnavailableError
from airgateway.types import JSONDict, MessageHandler, NotificationListener

__all__ = ["MAX_LINE", "StdioUpstream"]

logger = logging.getLogger(__name__)

MAX_LINE = 16 * 1024 * 1024
"""The longest line read from a child's stdout."""
BACKOFF_START = 0.2
BACKOFF_MAX = 30.0
STABLE_AFTER = 10.0
"""A process that lived this long resets the backoff."""
STOP_GRACE = 3.0
_RESTARTED = "notifications/tools/list_changed"


def _kill(proc: asyncio.subprocess.Process) -> None:
    """End the child with what it started (or what it left behind, once it exited)."""
    _platform.PROCESSES.kill(proc)


_REAPING: set[asyncio.Future[int]] = set()


def _reap_later(proc: asyncio.subprocess.Process) -> None:
    """Wait for a killed child in the background (a cancelled caller cannot): its exit status
    is collected and its transport closed, instead of a zombie and a "subprocess is still
    running" warning at the garbage collector."""
    waiter = asyncio.ensure_future(proc.wait())
    _REAPING.add(waiter)
    waiter.add_done_callback(_REAPING.discard)


class StdioUpstream:
    """One child process speaking MCP on stdin/stdout (see the module docstring).

    Args:
        label: the replica's label.
        command: the argv.
        env: variables added to the gateway's environment.
        cwd: the working directory.
        listener: told about notifications that belong to no call.
        handshake_timeout: seconds for the spawn + handshake.
    """

    def __init__(
        self,
        label: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        listener: NotificationListener | None = None,
        handshake_timeout: float = 10.0,
    ) -> None:
        self.label = label
        self.command = tuple(command)
        self.env = dict(env or {})
        self.cwd = cwd
        self.era: str | None = None
        self.restarts = 0
        self._mux = Mux(label, self._write, listener)
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closed = False
        self._timeout = handshake_timeout

    @property
    def pid(self) -> int | None:
        """The child's pid while it runs."""
        return None if self._proc is None or self._proc.returncode is not None else self._proc.pid

    async def connect(self) -> None:
        """Spawn the process and run the handshake; supervise it from now on."""
        if self._supervisor is None:
            await self._spawn()
            self._supervisor = asyncio.ensure_future(self._supervise())
        elif not self._ready.is_set():
            raise UpstreamUnavailableError(f"{self.label} is restarting", replica=self.label)

    async def _spawn(self) -> None:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env={**os.environ, **self.env},
                limit=MAX_LINE,
                **_platform.PROCESSES.spawn_options(),  # its own group: Ctrl+C is the gateway's
            )
        except OSError as exc:
            raise UpstreamUnavailableError(
                f"{self.label}: cannot start {self.command[0]}: {exc}", replica=self.label
            ) from exc
        proc = self._proc
        self._reader = asyncio.ensure_future(self._read(proc))
        try:
            self.era = await eras.handshake(self._handshake_send, self.notify)
        except asyncio.CancelledError:  # the caller gave up (a health check's deadline): a
            _kill(proc)  # child left running would be orphaned by the next spawn, one
            _reap_later(proc)  # more at every check; its reader ends at the pipe's EOF
            raise
        except (GatewayError, TimeoutError) as exc:
            await self._stop_process()
            raise UpstreamUnavailableError(
                f"{self.label}: handshake failed: {exc}", replica=self.label
            ) from exc
        self._ready.set()

    async def _handshake_send(self, method: str, params: JSONDict) -> JSONDict:
        return await self._mux.call(method, params, timeout=self._timeout, on_message=None)

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        reason = "the process exited"
        try:
            while True:
                try:
                    line = await proc.stdout.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    reason = f"it wrote a line over {MAX_LINE} bytes (stopped)"
                    logger.warning("%s: %s", self.label, reason)
                    break
                if not line:
                    break
                try:
                    message = orjson.loads(line)
                except orjson.JSONDecodeError:
                    logger.debug("%s: not JSON on stdout: %r", self.label, line[:200])
                    continue
                await self._mux.deliver(message)
        except Exception:  # whatever breaks the reading, the process is restarted, not left mute
            reason = "reading its stdout failed (stopped)"
            logger.exception("%s: %s", self.label, reason)
        finally:
            if proc is self._proc:  # a former process's reader must not touch its successor
                self._ready.clear()
                self._mux.fail_all(f"{self.label}: {reason}")
            _kill(proc)

    async def _supervise(self) -> None:
        delay = BACKOFF_START
        loop = asyncio.get_running_loop()
        while not self._closed:
            started = loop.time()
            proc = self._proc
            if proc is not None:
                await proc.wait()
                _kill(proc)  # what it started dies with it: the pipe's EOF ends the reader
                if self._reader is not None:
                    await asyncio.gather(self._reader, return_exceptions=True)
            if self._closed:
                return
            if loop.time() - started > STABLE_AFTER:
                delay = BACKOFF_START
            logger.warning(
                "%s exited (%s); restarting in %.1f s",
                self.label,
                None if proc is None else proc.returncode,
                delay,
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)
            try:
                await self._spawn()
                self.restarts += 1
                self._restarted()
            except UpstreamUnavailableError as exc:
                logger.warning("%s", exc)
                self._proc = None

    def _restarted(self) -> None:
        """A new process is a new server: its listings may differ, and the health checker
        (told as by an upstream's own ``list_changed``) brings the replica back into the pool
        now rather than at its next interval."""
        if self._mux.listener is not None:
            self._mux.listener(self.label, {"jsonrpc": "2.0", "method": _RESTARTED})

    async def _write(self, message: JSONDict) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise UpstreamUnavailableError(
                f"{self.label}: the process is not running", replica=self.label
            )
        try:
            proc.stdin.write(orjson.dumps(message) + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise UpstreamUnavailableError(f"{self.label}: write failed: {exc}",
                                           replica=self.label) from exc  # fmt: skip

    async def request(
        self,
        method: str,
        params: JSONDict,
        *,
        timeout: float,
        on_message: MessageHandler | None = None,
    ) -> JSONDict:
        """Send one request over the pipe (see ``UpstreamClient.request``)."""
        if not self._ready.is_set():
            raise UpstreamUnavailableError(f"{self.label} is not running", replica=self.label)
        return await self._mux.call(
            method, eras.for_era(params, self.era), timeout=timeout, on_message=on_message
        )

    async def notify(self, method: str, params: JSONDict) -> None:
        """Send one notification (dropped when the process is down)."""
        with contextlib.suppress(UpstreamUnavailableError):
            await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def _stop_process(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is not None:
            _kill(proc)  # the wrapper is gone; what it started may not be
            return
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE)
        except TimeoutError:
            _platform.PROCESSES.ask_to_stop(proc)
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                _kill(proc)
                await proc.wait()
        _kill(proc)  # whatever it started and left behind

    async def close(self) -> None:
        """Stop supervising and stop the process: stdin closed, then asked to stop (SIGTERM;
        Ctrl+Break on Windows), then killed with what it started."""
        if self._closed:
            return
        self._closed = True
        self._ready.clear()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        await self._stop_process()
        if self._reader is not None:
            _, pending = await asyncio.wait({self._reader}, timeout=STOP_GRACE)
            for task in pending:  # a pipe some other process still holds open
                task.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        self._mux.fail_all(f"{self.label}: closed")
