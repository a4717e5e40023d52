"""Every OS-specific call of the servers, the gateway, the CLI, the dashboard and the meter lives
in a ``_platform`` module (airstore's seam has its own test): the names below appear nowhere
else in their source, so a port to another OS is a change in one small module per package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("aircore", "airgateway", "aircli", "airhttp", "dashboard", "airmeter")
OS_SPECIFIC = re.compile(
    r"add_signal_handler|remove_signal_handler|signal\.signal\(|killpg|SIGKILL|SIGBREAK"
    r"|CTRL_BREAK_EVENT|start_new_session|creationflags|CREATE_NEW_PROCESS_GROUP|setsid"
    r"|\bimport (fcntl|msvcrt|resource|termios|uvloop|winreg)\b|select\.poll|os\.pread"
    r"|os\.fdatasync|connect_read_pipe|connect_write_pipe|SO_REUSEADDR|SO_EXCLUSIVEADDRUSE"
)


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """The lines of ``path`` outside comments and docstrings (good enough: triple-quoted
    blocks are skipped whole)."""
    lines: list[tuple[int, str]] = []
    in_doc = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        quotes = line.count('"""')
        if in_doc or quotes:
            if quotes % 2 == 1:
                in_doc = not in_doc
            continue
        lines.append((number, line.split("#", 1)[0]))
    return lines


@pytest.mark.parametrize("package", PACKAGES)
def test_os_specific_calls_live_only_in_the_platform_module(package: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "_platform.py"
        for number, line in _code_lines(path)
        if OS_SPECIFIC.search(line)
    ]
    assert found == []
