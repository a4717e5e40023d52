"""Smuggled headers against a real metered ``air serve --transport http --token`` process.

Issue 12 item 3: the token and the Host/Origin checks held on ``/mcp`` only (``GET /`` ignored
them), and ``Content-Type`` was substring-matched. Every route is guarded alike: a bearer
credential in any scheme case with one or more spaces passes, anything else is 401; a media
type that only mentions ``application/json`` is 415. Sent on raw sockets, so that values an
HTTP client library would refuse to send still reach the server.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from tests.aircore.conftest import DEMO, HttpServer

TOKEN = "s3cret-t0k"
V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}
WAIT_S = 30.0
ROUTES = ["/mcp", "/", "/metrics"]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    srv = HttpServer(DEMO, "--token", TOKEN)  # the demo meters: /metrics is served
    try:
        yield int(srv.base.rsplit(":", 1)[1])
    finally:
        assert srv.close() == 0


def _status(port: int, path: str, headers: dict[str, str], *, target: str = "") -> int:
    """One request on its own connection (to ``target``, an absolute-form request target,
    when given); the status code of the answer."""
    body = b""
    if path == "/mcp":
        frame = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
        body = json.dumps(frame).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Mcp-Protocol-Version": V, "Mcp-Method": "server/discover",
                   **headers}  # fmt: skip
    head = f"{'POST' if body else 'GET'} {target or path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(head.encode("latin-1") + body)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.1 "), got[:100]
    return int(got.split(b" ", 2)[1])


ACCEPTED = [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"bEaReR {TOKEN}",
            f"Bearer   {TOKEN}", f"Bearer {TOKEN} "]  # fmt: skip
REFUSED = [
    None,
    TOKEN,
    "Bearer",
    "Bearer ",
    f"Basic {TOKEN}",
    f"Bearer\t{TOKEN}",
    f"Bearer {TOKEN.upper()}",
    f"Bearer {TOKEN[:-1]}",
    f"Bearer {TOKEN}x",
    f'Bearer "{TOKEN}"',
    f"Bearer {TOKEN},x",
    f"Bearer {TOKEN} {TOKEN}",
]


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_parses_the_bearer_credential_alike(port: int, path: str) -> None:
    for value in ACCEPTED:
        assert _status(port, path, {"Authorization": value}) == 200, value
    for refused in REFUSED:
        headers = {} if refused is None else {"Authorization": refused}
        assert _status(port, path, headers) == 401, refused


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_rebound_host_or_a_foreign_origin_even_with_the_token(
    port: int, path: str
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert _status(port, path, {**auth, "Host": f"attacker.example:{port}"}) == 421
    assert _status(port, path, {**auth, "Origin": "https://attacker.example"}) == 403
    assert _status(port, path, {**auth, "Origin": "null"}) == 403


@pytest.mark.parametrize("path", ROUTES)
def test_an_absolute_form_target_is_checked_by_its_own_host_not_the_host_header(
    port: int, path: str
) -> None:
    # RFC 9112 §3.2.2: the target's authority wins over Host; it was ignored, so a request
    # for attacker.example passed the DNS-rebinding check on the strength of its Host header
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for authority in (f"attacker.example:{port}", "attacker.example", f"localhost.evil.com:{port}"):
        assert _status(port, path, auth, target=f"http://{authority}{path}") == 421, authority
    for authority in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LOCALHOST"):
        assert _status(port, path, auth, target=f"http://{authority}{path}") == 200, authority


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json", 200),
        ("APPLICATION/JSON", 200),
        ("application/json; charset=utf-8", 200),
        ("application/json ; charset=UTF-8", 200),
        ("text/plain; x=application/json", 415),
        ("text/plain; charset=application/json", 415),
        ("application/jsonx", 415),
        ("application/json-seq", 415),
        ("text/application/json", 415),
        ("application/json, text/plain", 415),
        ("multipart/form-data; boundary=application/json", 415),
    ],
)
def test_the_content_type_is_a_media_type_not_a_substring(
    port: int, content_type: str, status: int
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type}
    assert _status(port, "/mcp", headers) == status
