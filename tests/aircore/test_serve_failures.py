"""``air serve`` refusing to start: one clear stderr line, a non-zero exit, no traceback.

Each test runs ``air serve`` as a real process.
"""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
from pathlib import Path

import pytest

from airstore import create_storage
from tests.aircore.conftest import DEMO, ROOT, STARTUP_TIMEOUT, serve_args


def _serve(*argv: str, transport: str = "stdio") -> subprocess.CompletedProcess[str]:
    """Run ``air serve ARGV --transport T`` to its end (stdin closed at once)."""
    return subprocess.run(
        serve_args(*argv, "--transport", transport),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=STARTUP_TIMEOUT,
        check=False,
    )


def _assert_one_line_refusal(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("air serve: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert done.stdout == ""  # nothing but JSON-RPC may ever reach stdout


def _undefined_tool_server(tmp_path: Path) -> Path:
    definitions = tmp_path / "tool-definitions"
    definitions.mkdir()
    target = tmp_path / "undefined_server.py"
    target.write_text(
        "from aircore import define_server, define_tool\n"
        "server = define_server(\n"
        "    name='undefined',\n"
        "    tools=[define_tool('lonely_tool', handler=lambda p: 'ok')],\n"
        f"    definitions={str(definitions)!r},\n"
        ")\n"
    )
    return target


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_definition_error_at_start_is_one_line(tmp_path: Path, transport: str) -> None:
    target = _undefined_tool_server(tmp_path)
    extra = ("--port", "0") if transport == "http" else ()
    done = _serve(str(target), "--store", "memory://", *extra, transport=transport)
    _assert_one_line_refusal(done, "'undefined'", "DefinitionNotFoundError", "lonely_tool")


def test_a_bad_store_url_is_one_line() -> None:
    done = _serve(DEMO, "--store", "nosuchkind://somewhere")
    _assert_one_line_refusal(done, "nosuchkind")


async def test_a_locked_store_is_one_line_and_the_holder_keeps_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    holder = await create_storage(f"file://{data}")
    await holder.set("keep", "k", {"v": 1})
    await holder.close()
    # a writer of an older air release holds the directory exclusively (its .lock flock) with
    # its pid inside, as that release did: refused at once, naming it (the same hold without a
    # pid is refused after airstore's wait: tests/airstore/test_multiwriter.py)
    fd = os.open(data / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.write(fd, b"%d\n" % os.getpid())
        done = _serve(DEMO, "--store", f"file://{data}")
        _assert_one_line_refusal(done, "StoreLockedError", "older air release", str(os.getpid()))
    finally:
        os.close(fd)
    async with await create_storage(f"file://{data}", read_only=True) as reader:
        assert await reader.get("keep", "k") == {"v": 1}


def test_a_taken_port_is_one_line(tmp_path: Path) -> None:
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve(DEMO, "--store", "memory://", "--port", str(port), transport="http")
        _assert_one_line_refusal(done, str(port))
    finally:
        taken.close()


def test_a_missing_module_target_is_one_line() -> None:
    done = _serve("no_such_package.server:app")
    _assert_one_line_refusal(done, "no_such_package")


def test_a_module_that_imports_something_missing_still_shows_its_traceback(
    tmp_path: Path,
) -> None:
    (tmp_path / "broken_target.py").write_text("import no_such_dependency_xyz\n")
    done = subprocess.run(
        serve_args("broken_target", "--transport", "stdio"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
        timeout=STARTUP_TIMEOUT,
        check=False,
    )
    assert done.returncode != 0
    assert "no_such_dependency_xyz" in done.stderr  # the user's bug, where it is


def test_an_unknown_mcp_transport_is_refused_not_served_over_http() -> None:
    done = subprocess.run(
        serve_args(DEMO, "--store", "memory://"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MCP_TRANSPORT": "carrier-pigeon"},
        timeout=STARTUP_TIMEOUT,
        check=False,
    )
    _assert_one_line_refusal(done, "carrier-pigeon")


@pytest.mark.parametrize(("option", "transport"), [(("--max-message", "0"), "stdio")])
def test_out_of_range_options_are_one_line(option: tuple[str, str], transport: str) -> None:
    done = _serve(DEMO, "--store", "memory://", *option, transport=transport)
    _assert_one_line_refusal(done, option[0], option[1])


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_out_of_range_is_argparses_usage_and_one_error_line(port: str) -> None:
    # argparse checks --port (aircli.remote): its usage, then one error line, exit 2
    done = _serve(DEMO, "--store", "memory://", "--port", port, transport="http")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("usage: air serve"), done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("air serve: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("air serve: error: argument --port: "), errors[0]
    assert port in errors[0]
    assert done.stdout == ""  # nothing but JSON-RPC may ever reach stdout


def test_a_token_no_client_could_send_is_a_one_line_refusal() -> None:
    done = _serve(DEMO, "--store", "memory://", "--token", "two words", transport="http")
    _assert_one_line_refusal(done, "token")
    assert "two words" not in done.stderr  # a secret is never echoed
