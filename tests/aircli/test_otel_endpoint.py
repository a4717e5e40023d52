"""A malformed OTLP endpoint: one warning line at start, export off, the server keeps serving."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.aircore.conftest import DEMO


@pytest.mark.parametrize(
    "endpoint", ["not a url", "localhost:4318", "http://[::1", "http://collector:port"]
)
async def test_a_malformed_endpoint_warns_once_and_the_server_serves(
    endpoint: str, tmp_path: Path
) -> None:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aircli", "serve", DEMO, "--transport", "stdio", "--otel"],
        env=env,
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, err)) as client:
            for _ in range(3):
                assert not (await client.call_tool("ping", {})).is_error
    said = [line for line in errlog.read_text().splitlines() if "OTEL" in line]
    assert said == [
        f"WARNING airmeter.otel_settings: OTEL_EXPORTER_OTLP_ENDPOINT={endpoint!r} is not an "
        "http(s)://host[:port] URL; OpenTelemetry export is off"
    ]
    assert "Traceback" not in errlog.read_text()
