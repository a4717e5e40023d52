"""Every air package imports where the interpreter offers no ``fcntl``, ``os.pread`` or
``os.fdatasync`` (Windows), and FileStore works without ``os.fdatasync`` (macOS): both shapes
made on Linux in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

PACKAGES = ("airstore", "airmeter", "aircore", "airhttp", "airgateway", "dashboard", "aircli")
# Runs first in the child: what a Windows interpreter lacks is made missing.
_WINDOWS_SHAPE = """
import importlib.abc, os, sys
class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("fcntl", "termios", "resource", "grp", "pwd"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
for name in ("fcntl", "termios", "resource", "grp", "pwd"):
    sys.modules.pop(name, None)
for name in ("pread", "pwrite", "fdatasync"):
    if hasattr(os, name):
        delattr(os, name)
"""


def _run(code: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("package", PACKAGES)
def test_the_package_imports_without_fcntl_or_pread_and_airstore_takes_the_windows_seam(
    package: str,
) -> None:
    code = _WINDOWS_SHAPE + textwrap.dedent(f"""
        import importlib, json
        importlib.import_module({package!r})
        from airstore import _platform
        print(json.dumps({{"family": _platform.family, "chosen": _platform.chosen}}))
    """)
    result = _run(code)
    assert result == {
        "family": "windows",
        "chosen": {
            "lock": "LockFileEx",
            "open": "CreateFileW+share-delete",
            "datasync": "fsync",
            "pread": "seek+read",
            "replace": "replace+retry",
            "sync_dir": "none",
        },
    }


def test_a_file_store_round_trip_works_without_fdatasync() -> None:
    code = textwrap.dedent("""
        import asyncio, json, os, sys, tempfile
        del os.fdatasync
        from airstore import FileStore, _platform

        async def main(root):
            async with FileStore(root, durability="sync") as store:
                await store.set("ns", "k", {"v": 1})
                await store.append("log", {"n": 1})
                await store.flush()
            async with FileStore(root) as store:
                return await store.get("ns", "k"), len(await store.query("log"))

        with tempfile.TemporaryDirectory() as tmp:
            value, lines = asyncio.run(main(os.path.join(tmp, "data")))
        sync = _platform.chosen["datasync"]
        print(json.dumps({"value": value, "lines": lines, "datasync": sync}))
    """)
    assert _run(code) == {"value": {"v": 1}, "lines": 1, "datasync": "fsync"}


def test_a_child_process_takes_the_macos_shape_from_the_environment() -> None:
    import os

    code = "import json; from airstore import _platform; print(json.dumps(_platform.chosen))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "AIR_STORE_PLATFORM": "macos"},
    )
    assert json.loads(proc.stdout)["datasync"] == "F_FULLFSYNC"
