"""gateway.yml: the whole schema, exact errors (file, line, key), secrets only from env."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airgateway import ConfigError, load_config, parse_config

FULL = """\
servers:
  - name: notes
    url: http://127.0.0.1:3510/mcp
  - name: notes
    url: http://127.0.0.1:3511/mcp
  - name: files
    command: ["python", "files_server.py"]
    env: {FILES_ROOT: ./files}
    cwd: ./files
  - name: legacy
    url: http://127.0.0.1:3512/sse
    transport: sse
    prefix: legacy
    timeout_s: 30
    headers: {X-Api-Key: {env: LEGACY_KEY}}
    include_drafts: false
health:
  interval_s: 15
  timeout_s: 5
  unhealthy_after: 3
  healthy_after: 1
balancer:
  strategy: least_outstanding
  retries: 1
clients:
  - name: ci
    token_env: AIR_CLIENT_CI_TOKEN
    allow: ["notes*", "files__read_*"]
    rate_per_s: 50
limits:
  per_tool_rate_per_s: {"files__write_*": 5}
"""
S = "servers:\n  - name: a\n"
ONE = "servers:\n  - {name: a, url: 'http://x'}\n"
ENV = {"LEGACY_KEY": "k-123", "AIR_CLIENT_CI_TOKEN": "t-456"}


def test_the_issue_example_loads_with_every_section(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yml"
    path.write_text(FULL.replace('"python"', repr(sys.executable)))  # a program that exists
    config = load_config(path, environ=ENV)
    assert [s.name for s in config.servers] == ["notes", "notes", "files", "legacy"]
    files, legacy = config.servers[2], config.servers[3]
    assert files.transport == "stdio"
    assert files.command == (sys.executable, "files_server.py")
    assert files.cwd == str((tmp_path / "files").resolve())
    assert legacy.transport == "sse"
    assert legacy.prefix == "legacy"
    assert legacy.headers == {"X-Api-Key": "k-123"}
    assert config.balancer.strategy == "least_outstanding"
    assert config.balancer.retries == 1
    assert config.health.unhealthy_after == 3
    assert config.clients[0].token == "t-456"
    assert config.clients[0].allow == ("notes*", "files__read_*")
    assert config.per_tool_rate_per_s == {"files__write_*": 5.0}


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("servers:\n  - name: a\n    url: http://x/mcp\n    colour: red\n", 4, "servers[0].colour"),
        (S + "    url: http://x/mcp\n    timeout_s: -1\n", 4, "servers[0].timeout_s"),
        ("servers:\n  - name: a\n", 2, "servers[0]"),
        ("servers:\n  - name: a\n    url: ftp://x\n", 3, "servers[0].url"),
        ("servers:\n  - name: a\n    url: 'http://[::1/mcp'\n", 3, "servers[0].url"),
        ("servers:\n  - name: a\n    url: 'http://x:99999/mcp'\n", 3, "servers[0].url"),
        ("servers:\n  - name: a\n    url: 'http:///mcp'\n", 3, "servers[0].url"),
        (S + "    url: http://x\n    transport: stdio\n", 4, "servers[0].transport"),
        (ONE + "balancer:\n  strategy: random\n", 4, "balancer.strategy"),
        (ONE + "health:\n  unhealthy_after: 0\n", 4, "health.unhealthy_after"),
        (
            S + "    url: http://x\n    headers: {Authorization: Bearer s3cret}\n",
            4,
            "servers[0].headers.Authorization",
        ),
        (ONE + "clients:\n  - name: ci\n    token_env: NOPE_UNSET\n", 5, "clients[0].token_env"),
        ("servers:\n  - {name: a, url: 'http://x', prefix: 'a__b'}\n", 2, "servers[0].prefix"),
        ("servers: []\n", 1, "servers"),
        ("extra: 1\nservers: []\n", 1, "extra"),
    ],
)
def test_a_bad_config_names_the_file_line_and_key(text: str, line: int, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, path="gw.yml", environ={})
    assert (info.value.path, info.value.line, info.value.key) == ("gw.yml", line, key)
    assert str(info.value).startswith(f"gw.yml:{line}: {key}: ")


def test_replicas_must_agree_on_prefix() -> None:
    text = "servers:\n  - {name: a, url: 'http://x'}\n  - {name: a, url: 'http://y', prefix: p}\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, path="gw.yml", environ={})
    assert info.value.line == 3


def test_yaml_that_does_not_parse_names_its_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("servers:\n  - name: [unclosed\n", path="gw.yml")
    assert info.value.line is not None
    assert "not valid YAML" in str(info.value)


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "missing.yml")
    assert info.value.path.endswith("missing.yml")
    assert "cannot read" in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_config_or_a_config_error(text: str) -> None:
    error: ConfigError | None = None
    try:
        parse_config(text, path="fuzz.yml", environ={})
    except ConfigError as exc:
        error = exc
    assert error is None or error.path == "fuzz.yml"


def test_air_gateway_reports_a_bad_config_on_one_line_and_exits_2(tmp_path: Path) -> None:
    import subprocess

    from tests.airgateway.procs import air

    path = tmp_path / "gw.yml"
    path.write_text("servers:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    bogus: 1\n")
    out = subprocess.run(
        air("gateway", "--config", str(path), "--port", "0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == f"air gateway: {path}:4: servers[0].bogus: unknown key " + (
        "(expected one of name, url, command, transport, env, cwd, prefix, timeout_s, "
        "headers, include_drafts, oauth, send_caller, scopes)"
    )


@pytest.mark.parametrize("program", ["no-such-program-4f1c", "./bin/no-such-server"])
def test_air_gateway_refuses_a_command_that_names_no_program_on_one_line_and_exits_2(
    tmp_path: Path, program: str
) -> None:
    """Not a gateway that starts and fails to spawn the child at every check for ever."""
    import subprocess

    from tests.airgateway.procs import air

    path = tmp_path / "gw.yml"
    path.write_text(
        "servers:\n  - name: ok\n    url: http://127.0.0.1:1/mcp\n"
        f"  - name: files\n    command: [{program}, serve]\n"
    )
    out = subprocess.run(
        air("gateway", "--config", str(path), "--port", "0", "--store", "memory://"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    where = "" if "/" in program else " on PATH"
    assert out.stderr.strip() == (
        f"air gateway: {path}:4: servers[1].command: {program!r} is not an executable file{where}"
    )


def test_a_command_is_found_on_the_path_its_env_sets_or_relative_to_its_cwd(
    tmp_path: Path,
) -> None:
    tool = tmp_path / "bin" / "my-server"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    path = tmp_path / "gw.yml"
    path.write_text(
        "servers:\n  - name: a\n    command: [my-server]\n"
        f"    env: {{PATH: {str(tool.parent)!r}}}\n"
        "  - name: b\n    command: [./my-server]\n    cwd: bin\n"
    )
    assert [s.name for s in load_config(path).servers] == ["a", "b"]
    tool.chmod(0o644)  # not executable: refused
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == "servers[0].command"


def test_air_gateway_refuses_a_remote_bind_without_allow_remote_and_token(tmp_path: Path) -> None:
    import subprocess

    from tests.airgateway.procs import air

    path = tmp_path / "gw.yml"
    path.write_text("servers:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n")
    out = subprocess.run(
        air("gateway", "--config", str(path), "--host", "0.0.0.0"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--allow-remote and --token" in out.stderr


def test_air_gateway_on_a_busy_port_says_so_and_exits_1(tmp_path: Path) -> None:
    import socket
    import subprocess

    from tests.airgateway.procs import air

    path = tmp_path / "gw.yml"
    path.write_text("servers:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run(
            air("gateway", "--config", str(path), "--port", str(port), "--store", "memory://"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 1, out.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://10.1.2.3/mcp", False),
        ("http://notes.example.com/mcp", False),
        ("https://notes.example.com/mcp", True),
        ("http://127.0.0.1:9/mcp", True),
        ("http://localhost:9/mcp", True),
    ],
)
def test_an_oauth_upstream_must_be_reached_over_https_or_loopback(url: str, ok: bool) -> None:
    text = (
        f"servers:\n  - name: notes\n    url: {url}\n"
        "    oauth: {token_endpoint: 'https://as.example/token', client_id: gw, "
        "client_secret: {env: S}}\n"
    )
    if ok:
        assert parse_config(text, environ={"S": "x"}).servers[0].url == url
        return
    with pytest.raises(ConfigError) as info:  # the gateway's token would cross in clear
        parse_config(text, path="gw.yml", environ={"S": "x"})
    assert info.value.key == "servers[0].url"
    assert "https://" in str(info.value)
