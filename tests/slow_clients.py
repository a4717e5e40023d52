"""Hostile HTTP clients for availability tests: many connections on one thread that trickle a
head (slowloris), trickle a body, or stream a chunked body that never ends, and reconnect as
soon as the server closes them; plus plain idle connections. Loopback only."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Iterator

TICK = 0.25
"""Seconds between two sends on one attacking connection."""

MODES = ("slowloris", "slow-body", "endless-chunked")


class _Conn:
    def __init__(self, sock: socket.socket, mode: str) -> None:
        self.sock = sock
        self.mode = mode
        self.sent = 0


class Attack:
    """``count`` connections to ``127.0.0.1:port`` in ``mode``, kept up until :meth:`stop`.

    Modes: ``slowloris`` (a request head one header byte per tick, never finished),
    ``slow-body`` (a whole head declaring a 1 MB body, then one body byte per tick),
    ``endless-chunked`` (a chunked POST, then a 1 KiB chunk per tick, never the last chunk).

    Attributes:
        connects: connections opened so far (reconnects included).
        closed_by_server: connections the server closed.
    """

    def __init__(
        self,
        port: int,
        mode: str,
        count: int,
        *,
        path: str = "/mcp",
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        assert mode in MODES
        self.port = port
        self.mode = mode
        self.count = count
        self.path = path
        self.headers = headers
        self.connects = 0
        self.closed_by_server = 0
        self._selector = selectors.DefaultSelector()
        self._conns: dict[socket.socket, _Conn] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"attack-{mode}", daemon=True)

    def __enter__(self) -> Attack:
        for _ in range(self.count):
            self._open()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
        for sock in list(self._conns):
            self._drop(sock)
        self._selector.close()

    def _head(self) -> bytes:
        lines = [f"POST {self.path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
        lines += [f"{k}: {v}" for k, v in self.headers]
        lines.append("Content-Type: application/json")
        if self.mode == "slowloris":
            return ("\r\n".join(lines) + "\r\n").encode()
        if self.mode == "slow-body":
            lines.append("Content-Length: 1000000")
        else:
            lines.append("Transfer-Encoding: chunked")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def _open(self) -> None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            sock.sendall(self._head())
        except OSError:
            return
        sock.setblocking(False)
        self.connects += 1
        self._conns[sock] = _Conn(sock, self.mode)
        self._selector.register(sock, selectors.EVENT_READ)

    def _drop(self, sock: socket.socket) -> None:
        self._conns.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(sock)
        sock.close()

    def _piece(self) -> bytes:
        if self.mode == "slowloris":
            return b"X"  # one byte of a header line that never ends
        if self.mode == "slow-body":
            return b" "
        return b"400\r\n" + b" " * 1024 + b"\r\n"

    def _run(self) -> None:
        next_send = time.monotonic()
        while not self._stop.is_set():
            timeout = max(0.0, next_send - time.monotonic())
            for key, _ in self._selector.select(timeout):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:  # the server hung up (answered or cut): come back at once
                    self.closed_by_server += 1
                    self._drop(sock)
            if time.monotonic() >= next_send:
                next_send = time.monotonic() + TICK
                for sock in list(self._conns):
                    try:
                        sock.send(self._piece())
                    except BlockingIOError:
                        pass
                    except OSError:
                        self.closed_by_server += 1
                        self._drop(sock)
                while len(self._conns) < self.count and not self._stop.is_set():
                    self._open()


@contextlib.contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to ``127.0.0.1:port`` that never send a byte."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            with contextlib.suppress(OSError):
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        yield socks
    finally:
        for sock in socks:
            sock.close()
