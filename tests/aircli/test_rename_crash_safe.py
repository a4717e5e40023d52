"""``air migrate --rename`` cut short loses no alias: the new definition files are written
first (removed again when one cannot be), then ``renames.yml`` (replaced whole), then the old
files go; running it again finishes a run cut short after the map. The failures are injected
where the disk would fail (a full disk on the second new file, an old file that cannot be
removed); the definitions and the map are real files."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
import yaml

from aircli._rename import rename_definitions
from aircore.definitions.renames import load_renames
from tests.aircore.definitions.fixtures import clean_definition

RENAMES = {"search_documents": "docs_documents_search", "list_documents": "docs_documents_list"}


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "tool-definitions"
    folder = root / "docs"
    folder.mkdir(parents=True)
    (root / "air-check.yml").write_text("known_tools: [fetch_page]\n", encoding="utf-8")
    for old in RENAMES:
        definition = clean_definition(old)
        del definition["required_env_keys"]
        (folder / f"{old}.yml").write_text(yaml.safe_dump(definition, sort_keys=False),
                                           encoding="utf-8")  # fmt: skip
    return root


def _names(root: Path) -> set[str]:
    return {path.stem for path in (root / "docs").glob("*.yml")}


def _fail_on(monkeypatch: pytest.MonkeyPatch, method: str, nth: int, when: Any) -> None:
    """Make the ``nth`` call of ``Path.<method>`` that ``when(path, args)`` selects fail."""
    real = getattr(Path, method)
    seen = [0]

    def failing(self: Path, *args: Any, **kwargs: Any) -> Any:
        if when(self, args):
            seen[0] += 1
            if seen[0] == nth:
                raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, method, failing)


def test_a_full_disk_on_the_second_new_file_leaves_the_old_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    _fail_on(monkeypatch, "open", 2, lambda path, args: args[:1] == ("x",))
    with pytest.raises(OSError, match="No space left"):
        rename_definitions(root)
    monkeypatch.undo()
    # nothing moved: every old name is still a tool's name, no half-written new one is left
    assert _names(root) == set(RENAMES)
    assert load_renames(root) == {}
    done = rename_definitions(root)  # the disk has room again
    assert done.renamed == RENAMES
    assert _names(root) == set(RENAMES.values())
    assert load_renames(root) == RENAMES


def test_an_old_file_that_cannot_be_removed_keeps_every_alias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    _fail_on(monkeypatch, "unlink", 1, lambda path, args: path.suffix == ".yml")
    with pytest.raises(OSError):
        rename_definitions(root)
    monkeypatch.undo()
    assert load_renames(root) == RENAMES  # the map names every rename already
    again = rename_definitions(root)  # finishes the run cut short, refusing nothing as taken
    assert again.renamed == RENAMES
    assert again.skipped == ()
    assert _names(root) == set(RENAMES.values())
    assert load_renames(root) == RENAMES
