"""``air status --url`` with a value that is not a gateway URL: one line, exit 2, no traceback
(a real ``air`` process)."""

from __future__ import annotations

import subprocess

import pytest

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
