"""``air migrate`` and ``air scaffold`` pointed at a place they cannot write (a file where a
directory should be): one line naming the path and the reason, exit 1, no traceback, and the
file in the way is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from aircli import main


@pytest.fixture
def in_the_way(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("mine\n", encoding="utf-8")
    return path


def test_migrate_into_a_file_is_one_clear_line(
    in_the_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["migrate", "aircli.demo_server", "--out", str(in_the_way / "defs")])

    said = capsys.readouterr().err
    assert code == 1
    assert said.startswith(f"air migrate: cannot write {in_the_way / 'defs'}")
    assert "Not a directory" in said
    assert "Traceback" not in said
    assert in_the_way.read_text(encoding="utf-8") == "mine\n"


def test_scaffold_into_a_file_is_one_clear_line(
    in_the_way: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["scaffold", "tool", "smp_rate_inquiry", "--no-input", "--no-check"]
    code = main([*argv, "--dir", str(in_the_way)])

    said = capsys.readouterr().err
    assert code == 1
    assert said.startswith(f"air scaffold: cannot write {in_the_way}")
    assert "Not a directory" in said
    assert "Traceback" not in said
    assert in_the_way.read_text(encoding="utf-8") == "mine\n"
