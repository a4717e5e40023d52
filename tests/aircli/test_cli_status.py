"""``air status --url`` with a value that is not a gateway URL: one line, exit 2, no traceback
(a real ``air`` process)."""

from __future__ import annotations

import subprocess
import time

import pytest

from aircli.status import ERROR_WIDTH, format_table
from airgateway.config import ServerConfig
from airgateway.replica import Replica
from airgateway.upstream_http import HttpUpstream
from tests.air_process import run_air


def _status(url: str) -> subprocess.CompletedProcess[str]:
    return run_air("status", "--url", url, timeout=60)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (
            "127.0.0.1:4000/mcp",
            "--url '127.0.0.1:4000/mcp' is not an http:// or https:// URL "
            "(did you mean http://127.0.0.1:4000/mcp?)",
        ),
        ("notaurl", "--url 'notaurl' is not an http:// or https:// URL"),
        ("", "--url '' is not an http:// or https:// URL"),
        ("ftp://gw/mcp", "--url 'ftp://gw/mcp' is not an http:// or https:// URL"),
        ("http://", "--url 'http://' names no host"),
        ("http://gw:99999/mcp", "--url 'http://gw:99999/mcp' has a port that is not 0-65535"),
        ("http://[::1/mcp", "--url 'http://[::1/mcp' is not a URL"),
    ],
)
def test_a_url_that_is_not_a_gateway_url_is_one_line_and_exit_2(url: str, said: str) -> None:
    done = _status(url)

    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"air status: {said}")


def test_a_gateway_that_does_not_answer_is_one_line_and_exit_1() -> None:
    done = _status("http://127.0.0.1:1/mcp")

    assert done.returncode == 1
    assert done.stderr.startswith("air status: cannot read http://127.0.0.1:1/status: ")
    assert "Traceback" not in done.stderr


def _up(**fields: object) -> dict[str, object]:
    row: dict[str, object] = {"name": "notes", "replica": 0, "state": "healthy", "in_flight": 0,
                              "tools": 3, "latency_ms": 1.5}  # fmt: skip
    row.update(fields)
    return row


def test_air_status_hides_an_error_the_upstream_has_been_healthy_since() -> None:
    stale = _up(last_error="connection refused", last_error_age_s=700.0, recovered=True)
    table = format_table({"upstreams": [stale]})
    assert "connection refused" not in table


def test_air_status_shows_the_age_of_a_current_error() -> None:
    down = _up(state="down", last_error="connection refused", last_error_age_s=185.0,
               recovered=False)  # fmt: skip
    assert "(3m ago) connection refused" in format_table({"upstreams": [down]})
    failing = _up(last_error="timed out", last_error_age_s=4.2, recovered=False)
    assert "(4s ago) timed out" in format_table({"upstreams": [failing]})


def test_air_status_wraps_a_long_error_instead_of_cutting_it() -> None:
    words = [f"word{i:02d}" for i in range(30)]
    error = "upstream said: " + " ".join(words)
    down = _up(state="down", last_error=error, last_error_age_s=1.0, recovered=False)
    lines = format_table({"upstreams": [down]}).splitlines()
    assert all(word in "\n".join(lines) for word in words)  # every word, none cut
    column = lines[0].index("last_error")
    continued = [line for line in lines[2:] if line.strip()]
    assert continued
    assert all(line[:column].isspace() and line[column] != " " for line in continued)
    assert all(len(line) <= column + ERROR_WIDTH for line in lines[1:])


def test_a_replica_knows_the_age_of_its_error_and_whether_it_recovered() -> None:
    config = ServerConfig(name="s", transport="http", url="http://127.0.0.1:1/mcp")
    replica = Replica(config, 0, HttpUpstream("s#0", "http://127.0.0.1:1/mcp"))
    assert replica.error_status(time.monotonic()) == (None, False)
    replica.failed("boom", unhealthy_after=3)  # one failure: still healthy
    at = replica.last_error_at
    assert at is not None
    assert replica.error_status(at + 90) == (90.0, False)
    replica.succeeded(healthy_after=1)
    assert replica.error_status(at + 91)[1] is True  # healthy since: the error is stale
