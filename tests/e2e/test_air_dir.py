"""``.air/`` is in every clone (its ``.gitignore`` is tracked) and keeps runtime data out of git."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_air_dir_gitignore_is_tracked_and_ignores_everything_else() -> None:
    if _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout (an unpacked sdist)")
    assert (ROOT / ".air" / ".gitignore").is_file()
    assert _git("ls-files", "--error-unmatch", ".air/.gitignore").returncode == 0
    for runtime in (".air/data/meter.calls.log.jsonl", ".air/demo-server.log", ".air/x/y"):
        assert _git("check-ignore", "-q", "--no-index", runtime).returncode == 0, runtime
    assert _git("check-ignore", "-q", "--no-index", ".air/.gitignore").returncode == 1
