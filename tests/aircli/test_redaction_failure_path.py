"""A tool error whose text is adversarial for redaction (``"a:" * 490``) still reaches its client
as an error result, with its secret masked, through a real ``air serve``; the server's log holds
no secret and stays bounded; the meter keeps the call's request id and message."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from airmeter import recent_calls
from airmeter.redact import REDACTED
from airstore import FileStore

SECRET = "hunter2" + "SECRETpw"

SERVER = """
from aircore import define_server, define_tool


def explode(params):
    raise RuntimeError(params["text"] + " " + "a:" * 490 + "x=" * 490)


server = define_server(
    name="adversarial",
    tools=[define_tool("explode", params={"text": "string"}, handler=explode)],
    storage="file://data",
    meter=True,
)
"""


async def test_an_adversarial_error_text_is_an_error_result_and_the_log_is_masked_and_bounded(
    tmp_path: Path,
) -> None:
    (tmp_path / "srv.py").write_text(SERVER, encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "aircli", "serve", str(tmp_path / "srv.py"), "--transport", "stdio"],
        cwd=str(tmp_path),
    )
    errlog = tmp_path / "stderr.txt"
    results = []
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, err)) as client:
            for n in range(3):
                results.append(
                    await client.call_tool("explode", {"text": f"call {n} password={SECRET}"})
                )
    log = errlog.read_text(encoding="utf-8")
    for n, result in enumerate(results):
        assert result.is_error
        answer = result.content[0].text  # type: ignore[union-attr]
        assert f"call {n} password={REDACTED}" in answer
        assert SECRET not in answer
    assert SECRET not in log
    assert "RecursionError" not in log
    assert len(log.encode()) < 3 * 16 * 1024, len(log)  # one traceback, then a line per call
    async with FileStore(tmp_path / "data") as store:
        calls = await recent_calls(store, limit=10)
    assert len(calls) == 3
    for rec in calls:
        assert rec.request_id is not None
        assert rec.error_message is not None
        assert SECRET not in rec.error_message
        assert rec.error_message.startswith("call ")
