from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aircli import main
from aircli.serve import load_server
from aircore import AirServer, DefinitionError
from aircore.transports.detect import detect_transport
from tests.air_process import air, run_air
from tests.aircore.conftest import DEMO, LIFECYCLE


class _Stdin:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_load_server_from_a_file_with_and_without_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIR_TEST_EVENTS", os.devnull)
    assert load_server(DEMO).name == "air-demo"
    assert load_server(f"{DEMO}:server").name == "air-demo"
    assert isinstance(load_server(f"{LIFECYCLE}:server"), AirServer)


def test_load_server_from_a_module_path() -> None:
    assert load_server("tests.aircore.fixtures.demo_module:app").name == "mod"


def test_load_server_errors_are_definition_errors(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="no such file"):
        load_server(str(tmp_path / "missing.py"))
    with pytest.raises(DefinitionError, match="no AirServer"):
        load_server(f"{DEMO}:TOOLS")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(DefinitionError, match="name the server"):
        load_server(str(empty))


def test_serve_is_a_registered_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--transport" in out
    assert "--store" in out
    assert "--port" in out


def _help(*command: str) -> str:
    done = subprocess.run(air(*command, "--help"), capture_output=True, text=True, check=True)
    return " ".join(done.stdout.split())  # argparse wraps lines


def test_serve_and_gateway_help_state_the_default_port() -> None:
    from aircli.gateway import DEFAULT_GATEWAY_PORT
    from aircore.transports.http import DEFAULT_HOST, DEFAULT_PORT

    said = _help("serve")
    assert f"HTTP port (default {DEFAULT_PORT}; 0: any free)" in said
    assert f"HTTP bind address (default {DEFAULT_HOST})" in said
    assert f"port (default {DEFAULT_GATEWAY_PORT}; 0: any free)" in _help("gateway")


def test_transport_auto_detection_follows_the_seed() -> None:
    assert detect_transport({"MCP_TRANSPORT": "http"}, _Stdin(False)) == "http"
    assert detect_transport({"MCP_TRANSPORT": "stdio"}, _Stdin(True)) == "stdio"
    assert detect_transport({}, _Stdin(False)) == "stdio"
    assert detect_transport({}, _Stdin(True)) == "http"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("", "no file or module given; TARGET is path/to/file.py[:server]"),
        (":server", "no file or module given; TARGET is path/to/file.py[:server]"),
        ("server.py:", "'server.py:' names no server after ':' (drop the ':', or name one: "),
        ("server.py::", "'server.py::' names no server after ':'"),
        ("somedir", "somedir is a directory, not a .py file; TARGET is"),
        ("./somedir", "./somedir is a directory, not a .py file"),
        (".", ". is a directory, not a .py file"),
        (".server", "'.server' is not a module name (package.module)"),
        ("a..b", "'a..b' is not a module name"),
        ("missing.py", "no such file: missing.py"),
    ],
)
def test_a_target_that_names_no_server_file_is_one_line_naming_the_problem_and_exit_2(
    target: str, said: str, tmp_path: Path
) -> None:
    (tmp_path / "server.py").write_text(
        "from aircore import define_server\nserver = define_server(name='x')\n", encoding="utf-8"
    )
    (tmp_path / "somedir").mkdir()
    done = run_air("serve", target, "--transport", "stdio", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"air serve: {said}")


def test_serve_and_gateway_help_name_every_endpoint_variable_that_turns_otel_on() -> None:
    # docs/export.md: the base endpoint or a per-signal one (…_TRACES_…, …_METRICS_…) turns
    # export on; `air serve --help` named only the base one
    for command in ("serve", "gateway"):
        assert "also on when OTEL_EXPORTER_OTLP_*ENDPOINT is set" in _help(command)
