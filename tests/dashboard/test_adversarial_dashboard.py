"""Hostile clients against a real ``air dashboard`` process (loopback only, bounded waits).

Beside ``test_hardening.py``: a body sent in chunked coding (no ``Content-Length`` for the guard
to check) once grew the dashboard by twice its size (200 MiB sent: +400 MiB RSS), and the
bearer token is parsed as on ``/mcp`` (RFC 6750: the scheme in any case, one or more spaces).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from airmeter import CALLS_NAMESPACE
from airstore import FileStore
from tests.air_process import serving

WAIT_S = 30.0
TOKEN = "dash-t0ken"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    data = tmp_path_factory.mktemp("dash") / "data"

    async def create() -> None:
        async with FileStore(data) as store:
            await store.append(CALLS_NAMESPACE, {"tool": "echo", "layer": "L1", "ok": True})

    asyncio.run(create())
    return f"file://{data}"


def _rss_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def _pid_on(port: int) -> Iterator[int]:
    """The pids of processes holding a socket listening on ``port`` (via /proc)."""
    inode = ""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
            inode = fields[9]
    assert inode, f"nothing listens on {port}"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
        except OSError:
            continue
        if f"socket:[{inode}]" in links:
            yield int(proc.name)


def test_a_chunked_body_far_past_the_cap_does_not_grow_the_dashboard(store_url: str) -> None:
    with serving("dashboard", "--store", store_url, "--port", "0") as url:
        port = int(url.rsplit(":", 1)[1].strip("/"))
        (pid,) = set(_pid_on(port))
        assert httpx.get(url, timeout=WAIT_S).status_code == 200
        before = _rss_mib(pid)
        chunk = b"[" * MIB
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
            sock.sendall(
                b"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            answer = b""
            try:
                for _ in range(96):  # 96 MiB against a 1 MiB cap
                    sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sock.sendall(b"0\r\n\r\n")
            except OSError:
                pass  # the server may hang up on the rest: refused, as wanted
            with contextlib.suppress(OSError):
                answer = sock.recv(64)
        assert not answer.startswith(b"HTTP/1.1 200"), answer
        assert _rss_mib(pid) - before < 64, "the body was held in memory"
        assert httpx.get(url, timeout=WAIT_S).status_code == 200


def test_the_bearer_token_is_parsed_as_on_the_mcp_endpoint(store_url: str) -> None:
    env = {**os.environ, "AIR_DASHBOARD_TOKEN": TOKEN}
    accepted = [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer   {TOKEN}"]
    refused = [
        "",
        TOKEN,
        f"Basic {TOKEN}",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN.upper()}",
        f"Bearer {TOKEN} extra",
        f"Bearer,{TOKEN}",
    ]
    with (
        serving("dashboard", "--store", store_url, "--port", "0", env=env) as url,
        httpx.Client(base_url=url, timeout=WAIT_S) as http,
    ):
        for value in accepted:
            assert http.get("/", headers={"Authorization": value}).status_code == 200, value
        for value in refused:
            headers = {"Authorization": value} if value else {}
            assert http.get("/", headers=headers).status_code == 401, value


def test_a_body_that_is_no_callback_request_is_answered_400_not_500(store_url: str) -> None:
    with (
        serving("dashboard", "--store", store_url, "--port", "0") as url,
        httpx.Client(base_url=url, timeout=WAIT_S) as http,
    ):
        spec = http.get("/_dash-dependencies").json()[0]
        output = spec["output"]
        outputs = [
            {"id": name.split(".")[0], "property": name.split(".")[1]}
            for name in output[2:-2].split("...")
        ]
        good = {
            "output": output,
            "outputs": outputs,
            "inputs": [{**item, "value": None} for item in spec["inputs"]],
            "state": [{**item, "value": None} for item in spec["state"]],
            "changedPropIds": [],
        }
        bad: list[object] = [
            {},
            [],
            {"output": 1},
            {**good, "output": "nothing.here"},
            {**good, "inputs": []},
            {**good, "inputs": [1] * len(spec["inputs"])},
            {**good, "state": "x"},
            {**good, "outputs": []},
            {**good, "outputs": {"id": "x"}},
            {**good, "changedPropIds": [1]},
        ]
        for body in bad:
            answer = http.post("/_dash-update-component", json=body)
            assert answer.status_code == 400, (body, answer.text)
        assert http.post("/_dash-update-component", content=b"{").status_code == 400
        assert http.post("/_dash-update-component", json=good).status_code == 200
