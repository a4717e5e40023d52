"""airhttp's platform seam (``airhttp._platform``): stop signals through process handlers (the
Windows path, where the Proactor loop has no ``add_signal_handler``), with real signals; and
every package of the stop/stdin/child-process seams importing where POSIX-only modules are
missing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

import airhttp._platform as plat
from tests.aircore.conftest import ROOT

WAIT = 30.0


@pytest.fixture
def process_handlers() -> Iterator[None]:
    plat.LOOP_HANDLERS = False
    try:
        yield
    finally:
        plat.LOOP_HANDLERS = True


async def test_a_stop_signal_reaches_the_loop_through_a_process_handler(
    process_handlers: None,
) -> None:
    before = signal.getsignal(signal.SIGTERM)
    before_int = signal.getsignal(signal.SIGINT)
    got = asyncio.Event()
    uninstall = plat.on_stop_signals(got.set)
    try:
        assert signal.getsignal(signal.SIGTERM) is not before  # a process handler, not the loop's
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(WAIT):
            await got.wait()
    finally:
        uninstall()
    assert signal.getsignal(signal.SIGTERM) == before
    assert signal.getsignal(signal.SIGINT) == before_int


async def test_loop_handlers_are_used_where_the_loop_has_them() -> None:
    got = asyncio.Event()
    uninstall = plat.on_stop_signals(got.set, signals=[signal.SIGTERM])
    try:
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)
        async with asyncio.timeout(WAIT):
            await got.wait()
    finally:
        uninstall()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_off_the_main_thread_nothing_is_installed(process_handlers: None) -> None:
    def body() -> None:
        async def run() -> None:
            plat.on_stop_signals(lambda: None)()

        asyncio.run(run())

    before = signal.getsignal(signal.SIGINT)
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            body()
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    thread = threading.Thread(target=guarded)
    thread.start()
    thread.join(WAIT)
    assert errors == []
    assert signal.getsignal(signal.SIGINT) is before


WINDOWS_LIKE = textwrap.dedent(
    """
    import os, select, signal, sys
    for name in ("fcntl", "resource", "uvloop", "termios"):
        sys.modules[name] = None  # POSIX-only: importing them fails, as on Windows
    del os.killpg, os.pread, os.fdatasync
    del select.poll
    import aircli, aircli._platform, aircli.dashboard, aircli.demo, aircli.gateway
    import aircli.serve, aircore, aircore._platform, aircore.transports.stdio
    import aircore.transports.http_app, airgateway, airgateway._platform
    import airgateway.upstream_stdio, airhttp, airhttp._platform, airhttp.server, dashboard
    import airmeter
    assert airhttp._platform.descriptor_limit() is None
    assert aircore._platform.loop_factory() is None
    assert type(airgateway._platform.PROCESSES).__name__ == "ConsoleGroups"
    assert aircli._platform.reader_gone(1) is False
    print("ok")
    """
)


def test_every_package_imports_without_posix_only_modules_and_takes_the_other_path() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WINDOWS_LIKE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
