"""A TCP proxy that keeps every byte a gateway sends its upstream (to prove what reached it)."""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["Recorder"]


class Recorder:
    """A TCP proxy in front of the upstream keeping every byte the gateway sends it."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.sent = bytearray()
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(conn, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, conn, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        try:
            while data := src.recv(65536):
                if record:
                    with self.lock:
                        self.sent += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def close(self) -> None:
        self.listener.close()
