"""Serving: loopback by default, remote only with a token, 401 without it; the CLI around it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from airmeter import CALLS_NAMESPACE
from airstore import FileStore
from dashboard.errors import DashboardError
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer, is_loopback
from tests.air_process import air, serving


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    async def create() -> None:
        async with FileStore(tmp_path / "data") as store:
            await store.append(CALLS_NAMESPACE, {"tool": "echo", "layer": "L1", "ok": True})

    asyncio.run(create())
    return f"file://{tmp_path}/data"


def test_loopback_addresses_are_recognised() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.20")


@pytest.mark.parametrize(
    ("allow_remote", "token", "needle"),
    [(False, None, "--allow-remote"), (False, "t", "--allow-remote"), (True, None, "--token")],
)
def test_remote_bind_needs_allow_remote_and_a_token(
    store_url: str, allow_remote: bool, token: str | None, needle: str
) -> None:
    reader = SyncReader.open(store_url)
    try:
        with pytest.raises(DashboardError) as info:
            DashboardServer(
                reader, store_url=store_url, host="0.0.0.0", allow_remote=allow_remote, token=token
            )
        assert needle in info.value.message
    finally:
        reader.close()


def test_requests_without_the_token_get_401(store_url: str) -> None:
    reader = SyncReader.open(store_url)
    with DashboardServer(reader, store_url=store_url, port=0, token="s3cret") as server:
        base = f"http://127.0.0.1:{server.port}"
        assert server.url == f"{base}/?token=s3cret"
        with httpx.Client() as client:
            for path in ("/", "/_dash-layout", "/_dash-update-component"):
                response = client.get(base + path)
                assert response.status_code == 401, path
                assert "token" in response.text
            assert client.get(base + "/?token=wrong").status_code == 401
            bad = {"Authorization": "Bearer wrong"}
            assert client.get(base + "/", headers=bad).status_code == 401
            good = {"Authorization": "Bearer s3cret"}
            assert client.get(base + "/_dash-layout", headers=good).status_code == 200
            # The token in the URL sets a cookie, so the page's own requests get through.
            assert client.get(server.url).status_code == 200
            assert client.get(base + "/_dash-layout").status_code == 200


def test_without_a_token_loopback_serves_the_page(store_url: str) -> None:
    with DashboardServer(SyncReader.open(store_url), store_url=store_url, port=0) as server:
        with httpx.Client() as client:
            response = client.get(server.url)
        assert response.status_code == 200
        assert "air · MCP dashboard" in response.text


def test_air_help_lists_the_dashboard_command() -> None:
    out = subprocess.run(air("--help"), capture_output=True, text=True, check=True, timeout=60)
    assert "dashboard" in out.stdout


def test_air_dashboard_prints_its_url_serves_and_stops_on_ctrl_c(store_url: str) -> None:
    with serving("dashboard", "--store", store_url, "--port", "0") as url, httpx.Client() as client:
        assert client.get(url).status_code == 200


def test_air_dashboard_explains_a_missing_or_unreadable_store(tmp_path: Path) -> None:
    missing = subprocess.run(
        air("dashboard", "--store", f"file://{tmp_path}/none", "--port", "0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2
    assert "no store at" in missing.stderr
    assert "air demo" in missing.stderr
    assert "Traceback" not in missing.stderr
    (tmp_path / "bad" / "meter.calls.log.jsonl").mkdir(parents=True)
    unreadable = subprocess.run(
        air("dashboard", "--store", f"file://{tmp_path}/bad", "--port", "0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unreadable.returncode == 2
    assert "cannot read store" in unreadable.stderr
    assert "Traceback" not in unreadable.stderr


def test_air_dashboard_refuses_a_remote_bind_without_a_token(store_url: str) -> None:
    result = subprocess.run(
        air("dashboard", "--store", store_url, "--host", "0.0.0.0", "--allow-remote"),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert result.returncode == 2
    assert "--token" in result.stderr


def test_a_busy_port_is_a_clear_error(store_url: str) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        reader = SyncReader.open(store_url)
        try:
            with pytest.raises(DashboardError) as info:
                DashboardServer(reader, store_url=store_url, port=port)
            assert "in use" in info.value.message
        finally:
            reader.close()


def test_only_a_serving_reader_freezes_long_lived_objects() -> None:
    # In a child process: gc.freeze() is process-wide and must not leak into the test run.
    script = """
import gc
from dashboard.reader import SyncReader
plain = SyncReader.open("memory://")
plain.view("1h")
assert gc.get_freeze_count() == 0
plain.close()
reader = SyncReader.open("memory://", freeze_gc=True)
reader.view("1h")
frozen = gc.get_freeze_count()
assert frozen > 0, frozen
reader.close()
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
