"""A real ``redis-server`` for tests: started on a free 127.0.0.1 port in a temporary directory.

Reusable by every test area::

    from tests.redis_server import RedisServer, shared_redis_server

``shared_redis_server()`` is one server per test process (started on first use, stopped by the
``redis_server`` session fixture in tests/airstore/conftest.py or at interpreter exit); tests that
kill, restart or reconfigure a server start their own ``RedisServer``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

__all__ = [
    "RedisServer",
    "shared_redis_server",
    "stop_shared_redis_server",
    "unique_prefix",
    "wait_replicas_confirm",
]

REDIS_BINARY = shutil.which("redis-server") or "redis-server"
START_TIMEOUT = 15.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))  # up (with requirepass)
    except OSError:
        return False


def wait_replicas_confirm(
    port: int, replicas: int, *, key: str = "air-test:replicas", timeout: float = START_TIMEOUT
) -> None:
    """Wait until ``replicas`` replicas of the master on ``port`` confirm a write (``WAIT``).

    A replica's ``master_link_status:up`` is not enough: after a full sync Redis 7.0 streams
    writes to it only once its next ``REPLCONF ACK`` arrives (up to a second later), so a
    ``WAIT`` in between counts it out. ``key`` (set, then deleted) must live on this master
    (in a cluster: one of its slots).
    """
    import redis

    client = redis.Redis(port=port, socket_timeout=5)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # a write sent before the master had a replication backlog is never streamed:
            # a WAIT for it would count a replica that has not started yet
            if client.info("replication").get("repl_backlog_active") == 1:
                client.set(key, 1)
                if int(client.execute_command("WAIT", replicas, 100)) >= replicas:
                    client.delete(key)
                    return
            else:
                time.sleep(0.02)
    finally:
        client.close()
    raise RuntimeError(f"{replicas} replica(s) of 127.0.0.1:{port} did not confirm a write")


class RedisServer:
    """One ``redis-server`` process without persistence, bound to 127.0.0.1.

    Args:
        extra_args: more ``redis-server`` options, e.g. ``("--replicaof", "127.0.0.1", "6379")``.
        binary: the server program (``redis-server``, or Valkey's ``valkey-server``).
        port: a fixed port (0: a free one).
    """

    def __init__(
        self, *, extra_args: tuple[str, ...] = (), binary: str = REDIS_BINARY, port: int = 0
    ) -> None:
        self.extra_args = extra_args
        self.binary = binary
        self.port = port
        self.dir = Path(tempfile.mkdtemp(prefix="air-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        """``redis://127.0.0.1:PORT/DB``."""
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        """Start (or restart on the same port) and wait until it answers PING."""
        for _attempt in range(5):
            port = self.port or _free_port()
            log = open(self.dir / "redis.log", "ab")  # noqa: SIM115 - handed to the child
            try:
                self.proc = subprocess.Popen(
                    [
                        self.binary,
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        # a replica is sent its first copy at once (the default waits 5 s for
                        # more replicas to share one diskless transfer)
                        "--repl-diskless-sync-delay",
                        "0",
                        "--dir",
                        str(self.dir),
                        *self.extra_args,
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            finally:
                log.close()
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and self.proc.poll() is None:
                if _ping(port):
                    self.port = port
                    return self
                time.sleep(0.02)
            self._reap()
            if self.port:  # a fixed port (restart) that did not come up: no second guess
                break
        raise RuntimeError(f"redis-server did not start; see {self.dir / 'redis.log'}")

    def kill(self) -> None:
        """SIGKILL the server (the port is kept for :meth:`start`)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self._reap()

    def stop(self) -> None:
        """Terminate the server and remove its directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._reap()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _reap(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_shared: RedisServer | None = None


def shared_redis_server() -> RedisServer:
    """The test process's shared server, started on first use."""
    global _shared
    if _shared is None:
        _shared = RedisServer().start()
        atexit.register(stop_shared_redis_server)
    return _shared


def stop_shared_redis_server() -> None:
    """Stop the shared server if it was started."""
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None


def unique_prefix(seed: str | None = None) -> str:
    """A key prefix private to one test (stable for the same ``seed``, e.g. a tmp path)."""
    token = uuid.uuid5(uuid.NAMESPACE_URL, seed).hex[:12] if seed else uuid.uuid4().hex[:12]
    return f"t{os.getpid()}-{token}:"
