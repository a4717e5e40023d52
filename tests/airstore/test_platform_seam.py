"""airstore's platform seam (``airstore/_platform``): nothing else makes an OS-specific call,
and the implementation is chosen by what the interpreter offers."""

from __future__ import annotations

import ast
from pathlib import Path

from airstore import _platform

ROOT = Path(__file__).resolve().parents[2]
SEAM = ROOT / "airstore" / "_platform"

_MODULES = frozenset({"fcntl", "msvcrt", "ctypes", "winreg", "_winapi"})
_OS_CALLS = frozenset(
    {"open", "pread", "pwrite", "fdatasync", "kill", "killpg", "replace", "rename", "O_CLOEXEC"}
)
_METHODS = frozenset({"add_signal_handler", "remove_signal_handler"})


def _violations(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{where} import {a.name}" for a in node.names if a.name in _MODULES]
        elif isinstance(node, ast.ImportFrom):
            if node.module in _MODULES:
                found.append(f"{where} from {node.module} import …")
            if node.module == "os":
                found += [f"{where} from os import {a.name}" for a in node.names
                          if a.name in _OS_CALLS]  # fmt: skip
        elif isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id == "os" and node.attr in _OS_CALLS:
                found.append(f"{where} os.{node.attr}")
            elif node.attr in _METHODS:
                found.append(f"{where} .{node.attr}")
    return found


def test_nothing_outside_the_seam_makes_an_os_specific_call() -> None:
    sources = [p for p in (ROOT / "airstore").rglob("*.py") if SEAM not in p.parents]
    assert len(sources) > 30
    found = [v for p in sources for v in _violations(p)]
    assert found == []


def test_the_walk_finds_each_kind_of_os_specific_call(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import fcntl\nfrom msvcrt import locking\nimport os\nos.pread(0, 1, 0)\n"
        "os.fdatasync(0)\nos.replace('a', 'b')\nloop.add_signal_handler(15, f)\n"
        "from os import pwrite\n"
    )
    found = [v.split(" ", 1)[1] for v in _violations(sample, tmp_path)]
    assert sorted(found) == sorted(
        [
            "import fcntl",
            "from msvcrt import …",
            "from os import pwrite",
            "os.pread",
            "os.fdatasync",
            "os.replace",
            ".add_signal_handler",
        ]
    )


def test_linux_gets_flock_fdatasync_pread_and_directory_fsync() -> None:
    assert _platform.shape == "auto"
    assert _platform.family == "posix"
    assert _platform.chosen == {
        "lock": "flock",
        "open": "open",
        "datasync": "fdatasync",
        "pread": "pread",
        "replace": "replace",
        "sync_dir": "fsync",
    }
