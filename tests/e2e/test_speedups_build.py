"""The build of air-mcp compiles airstore's C speedups (``hatch_build.py``) as ``AIR_SPEEDUPS``
says: compiled and tagged for this interpreter by default, a pure wheel with a warning when the
compiler fails, a failed build when they are required, a pure wheel when turned off."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def _wheel(out: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], Path | None]:
    """Build the checkout's wheel into ``out`` (pip, verbose: hatchling's warnings show)."""
    argv = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*argv, "-w", str(out), str(ROOT)],
        env={**{k: v for k, v in os.environ.items() if k != "AIR_SPEEDUPS"}, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wheels = list(out.glob("air_mcp-*.whl"))
    return done, wheels[0] if wheels else None


def _native(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as whl:
        return [
            n
            for n in whl.namelist()
            if n.startswith("airstore/_speedups.") and n[-3:] in (".so", "pyd")
        ]


def test_by_default_the_wheel_carries_the_compiled_speedups(tmp_path: Path) -> None:
    done, wheel = _wheel(tmp_path)
    assert done.returncode == 0, done.stderr
    assert wheel is not None
    assert "-py3-none-any" not in wheel.name
    assert len(_native(wheel)) == 1


def test_a_compiler_that_fails_gives_a_pure_wheel_and_says_so(tmp_path: Path) -> None:
    done, wheel = _wheel(tmp_path, LDSHARED="false")
    assert done.returncode == 0, done.stderr
    assert wheel is not None
    assert wheel.name.endswith("-py3-none-any.whl")
    assert _native(wheel) == []
    assert "C speedups were not compiled" in done.stdout + done.stderr


def test_required_speedups_that_do_not_compile_fail_the_build(tmp_path: Path) -> None:
    done, wheel = _wheel(tmp_path, LDSHARED="false", AIR_SPEEDUPS="require")
    assert done.returncode != 0
    assert wheel is None
    assert "AIR_SPEEDUPS=require" in done.stdout + done.stderr


def test_speedups_turned_off_give_a_pure_wheel_and_a_bad_mode_is_refused(tmp_path: Path) -> None:
    done, wheel = _wheel(tmp_path / "off", AIR_SPEEDUPS="off")
    assert done.returncode == 0, done.stderr
    assert wheel is not None
    assert wheel.name.endswith("-py3-none-any.whl")
    assert _native(wheel) == []
    done, wheel = _wheel(tmp_path / "bad", AIR_SPEEDUPS="fast")
    assert done.returncode != 0
    assert "AIR_SPEEDUPS='fast': use one of auto, require, off" in done.stdout + done.stderr


def test_the_extension_compiles_without_a_warning(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(ROOT))
    argv = hatch_build._command(ROOT / hatch_build.SOURCE, tmp_path / "speedups.so")
    done = subprocess.run(
        [*argv, "-Wall", "-Wextra", "-Werror"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _hook(root: Path) -> Any:
    """The build hook of ``hatch_build.py`` on a project tree at ``root``."""
    sys.path.insert(0, str(ROOT))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(ROOT))
    return hatch_build.SpeedupsBuildHook(str(root), {}, None, None, str(root / "dist"), "wheel")


@pytest.mark.parametrize(
    ("env", "built"),
    [({}, True), ({"AIR_SPEEDUPS": "off"}, False), ({"LDSHARED": "false"}, False)],
    ids=["auto", "off", "no-compiler"],
)
def test_an_editable_build_replaces_or_removes_the_module_an_earlier_build_left(
    env: dict[str, str], built: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable install imports from the tree: whatever this build decides must be what
    runs, never an older module (which may not match the source any more)."""
    (tmp_path / "airstore").mkdir()
    (tmp_path / "airstore" / "_speedups.c").write_bytes(
        (ROOT / "airstore/_speedups.c").read_bytes()
    )
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    stale = tmp_path / "airstore" / f"_speedups{suffix}"
    stale.write_bytes(b"an older build")
    monkeypatch.delenv("AIR_SPEEDUPS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    build_data: dict[str, Any] = {"force_include": {}, "pure_python": True}
    hook = _hook(tmp_path)
    hook.initialize("editable", build_data)
    hook.finalize("editable", build_data, str(tmp_path / "dist" / "x.whl"))
    assert build_data["force_include"] == {}  # an editable wheel carries no copy
    assert build_data["pure_python"] is not built
    if built:
        assert stale.read_bytes()[:4] == b"\x7fELF"  # the fresh module, compiled in place
    else:
        assert not stale.exists()
    assert list((tmp_path / "build").glob("*")) == []  # no temporary directory left
