"""Rules every ``air`` command shares, checked on real processes: a bad flag gets the usage of
the subcommand it was given to, and a non-loopback bind needs --allow-remote and --token."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.air_process import air
from tests.aircore.conftest import DEMO


def _air(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        air(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (("serve", DEMO, "--bogus"), "usage: air serve "),
        (("meter", "report", "--bogus", "x"), "usage: air meter report "),
        (("store", "stats", "--nope"), "usage: air store stats "),
        (("dashboard", "--colour"), "usage: air dashboard "),
    ],
)
def test_a_bad_flag_prints_the_usage_of_its_subcommand(
    argv: tuple[str, ...], usage: str, tmp_path: Path
) -> None:
    done = _air(*argv, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(usage), done.stderr
    assert "unrecognized arguments: " + " ".join(a for a in argv if a.startswith("--")) in (
        done.stderr
    )
    assert "COMMAND ..." not in done.stderr  # not the top-level usage


def test_a_bad_flag_before_any_subcommand_still_gets_the_top_level_usage(tmp_path: Path) -> None:
    done = _air("--bogus", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("usage: air [-h]")


GATEWAY_YML = "servers:\n  - {name: a, url: 'http://127.0.0.1:9/mcp'}\n"
AUTH_YML = (
    "auth:\n"
    "  issuer: https://login.example.com/\n"
    "  resource: https://gw.example.com/mcp\n"
    "  scopes: [mcp:tools]\n"
)


def _commands(tmp_path: Path) -> dict[str, tuple[str, ...]]:
    (tmp_path / "gateway.yml").write_text(GATEWAY_YML)  # its auth: section decides (below)
    return {
        "air serve": ("serve", DEMO, "--transport", "http", "--port", "0"),
        "air serve (stdio)": ("serve", DEMO, "--transport", "stdio"),
        "air serve (auto, stdin not a terminal)": ("serve", DEMO),
        "air dashboard": ("dashboard", "--port", "0", "--store", "memory://"),
        "air gateway": ("gateway", "--config", str(tmp_path / "gateway.yml"), "--port", "0"),
    }


@pytest.mark.parametrize(
    "prog",
    [
        "air serve",
        "air serve (stdio)",
        "air serve (auto, stdin not a terminal)",
        "air dashboard",
        "air gateway",
    ],
)
@pytest.mark.parametrize(
    ("flags", "missing"),
    [
        ((), "--allow-remote and --token"),
        (("--allow-remote",), "--token"),
        (("--token", "s3cret-token"), "--allow-remote"),
    ],
)
def test_a_non_loopback_bind_needs_both_allow_remote_and_token(
    prog: str, flags: tuple[str, ...], missing: str, tmp_path: Path
) -> None:
    argv = (*_commands(tmp_path)[prog], "--host", "0.0.0.0", *flags)  # refused before binding
    done = _air(*argv, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog.split(' (')[0]}: binding 0.0.0.0 "), lines[0]
    assert "needs both --allow-remote and --token" in lines[0]
    assert lines[0].endswith(f"(missing: {missing})")
    assert "s3cret-token" not in done.stderr


def test_the_demo_refuses_a_dashboard_beyond_loopback_before_making_any_call(
    tmp_path: Path,
) -> None:
    done = _air("demo", "--host", "0.0.0.0", "--calls", "5", "--history", "0", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "binds loopback only" in lines[0]
    assert "air dashboard --host HOST --allow-remote --token TOKEN" in lines[0]
    assert not (tmp_path / ".air" / "data").exists()  # no history, no traffic


def test_a_gateway_with_an_auth_section_needs_no_token_beyond_loopback(tmp_path: Path) -> None:
    # OAuth callers prove who they are: --allow-remote is enough. 192.0.2.1 (TEST-NET-1) is no
    # address of this machine, so the bind itself fails after the rule let it through.
    (tmp_path / "gateway.yml").write_text(GATEWAY_YML + AUTH_YML)
    argv = ("gateway", "--config", str(tmp_path / "gateway.yml"), "--port", "0")
    done = _air(*argv, "--host", "192.0.2.1", "--allow-remote", "--store", "memory://",
                cwd=tmp_path)  # fmt: skip
    assert "needs both --allow-remote and --token" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert "192.0.2.1" in done.stderr or "assign" in done.stderr, done.stderr
    # without --allow-remote it is still refused, naming only that flag
    done = _air(*argv, "--host", "192.0.2.1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith("(missing: --allow-remote)"), done.stderr
