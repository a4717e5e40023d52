"""The transport table: names → factories, one-line errors, options checked per transport."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from aircore import DefinitionError, define_server
from aircore.transports import ALIASES, TRANSPORTS, get_transport
from aircore.transports.detect import detect_transport
from aircore.types import Transport


class _Stdin:
    def __init__(self, tty: bool) -> None:
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_every_transport_in_the_table_satisfies_the_protocol() -> None:
    for name in TRANSPORTS:
        transport: Transport = get_transport(name)
        assert transport.name == name
        assert "max_message" in transport.options
    assert get_transport("Streamable-HTTP").name == ALIASES["streamable-http"]


def test_an_unknown_transport_is_a_one_line_error_naming_the_choices() -> None:
    with pytest.raises(DefinitionError) as info:
        get_transport("carrier-pigeon", source="MCP_TRANSPORT")
    message = str(info.value)
    assert "\n" not in message
    assert "'carrier-pigeon' (MCP_TRANSPORT)" in message
    assert all(repr(name) in message for name in TRANSPORTS)


def test_mcp_transport_is_passed_through_as_named_not_mapped_to_http() -> None:
    assert detect_transport({"MCP_TRANSPORT": " SSE "}, _Stdin(True)) == "sse"
    assert detect_transport({"MCP_TRANSPORT": "streamable-http"}, _Stdin(False)) == (
        "streamable-http"
    )


async def test_a_transport_refuses_options_it_does_not_take() -> None:
    server = define_server(name="t")
    with pytest.raises(DefinitionError) as info:
        await get_transport("stdio").serve(server, host="0.0.0.0", port=1)
    assert "host, port" in str(info.value)
    assert not server._started  # refused before anything started


def test_run_refuses_an_unknown_transport_before_serving() -> None:
    server = define_server(name="t")
    with pytest.raises(DefinitionError, match="'pigeon'"):
        server.run("pigeon")


_AUTO_SERVER = """
from aircore import define_server
server = define_server(name="auto-run")
server.run(transport="auto")
"""


@pytest.mark.parametrize("spelling", ["auto", " Auto "])
def test_run_accepts_auto_as_air_serve_does(spelling: str, tmp_path: Path) -> None:
    """``run(transport="auto")`` detects as ``run()`` does (stdin is a pipe here: stdio)."""
    script = tmp_path / "auto_server.py"
    script.write_text(_AUTO_SERVER.replace('"auto"', repr(spelling)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "MCP_TRANSPORT"}
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    done = subprocess.run(
        [sys.executable, str(script)],
        input=ping,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert orjson.loads(done.stdout.splitlines()[0]) == {"jsonrpc": "2.0", "id": 1, "result": {}}
