"""How ``hatch_build.py`` finds its C toolchain on each OS: the one this Python was built with
(``LDSHARED``: gcc on Linux, clang on macOS), ``CC`` replacing its compiler as setuptools does,
none on a Python without one (Windows: MSVC is not driven) — and a real wheel build with a
compiler that is not installed gives a pure wheel, or fails when the speedups are required."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("air_hatch_build", ROOT / "hatch_build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(values: dict[str, Any]) -> Any:
    real = sysconfig.get_config_var
    return lambda name: values[name] if name in values else real(name)


def test_cc_replaces_the_compiler_of_the_pythons_own_link_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = _hook()
    monkeypatch.delenv("LDSHARED", raising=False)
    monkeypatch.setenv("CC", "clang")
    monkeypatch.setattr(
        hook.sysconfig, "get_config_var", _config({"LDSHARED": "gcc -shared -L/x", "CC": "gcc"})
    )
    argv = hook._command(ROOT / "airstore" / "_speedups.c", Path("out.so"))
    assert argv[:3] == ["clang", "-shared", "-L/x"]


def test_the_macos_link_line_is_used_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _hook()
    monkeypatch.delenv("LDSHARED", raising=False)
    monkeypatch.delenv("CC", raising=False)
    line = "clang -bundle -undefined dynamic_lookup -arch arm64 -arch x86_64"
    monkeypatch.setattr(
        hook.sysconfig, "get_config_var", _config({"LDSHARED": line, "CC": "clang"})
    )
    argv = hook._command(ROOT / "airstore" / "_speedups.c", Path("out.so"))
    assert argv[:8] == line.split()
    assert not any(flag.startswith("-Wl,--") for flag in argv)  # nothing GNU-ld-only added


def test_a_python_without_a_toolchain_says_so_instead_of_compiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Windows shape: sysconfig has no LDSHARED (extensions are built with MSVC)."""
    hook = _hook()
    monkeypatch.delenv("LDSHARED", raising=False)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(hook.sysconfig, "get_config_var", _config({"LDSHARED": None, "CC": None}))
    why = hook.compile_speedups(ROOT / "airstore" / "_speedups.c", Path("out.so"))
    assert why is not None
    assert "no C toolchain is configured for this Python" in why


def _wheel(out: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[Path]]:
    argv = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
    keep = {k: v for k, v in os.environ.items() if k not in ("AIR_SPEEDUPS", "LDSHARED", "CC")}
    done = subprocess.run(
        [*argv, "-w", str(out), str(ROOT)],
        env={**keep, **env}, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return done, list(out.glob("air_mcp-*.whl"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_compiler_that_is_not_installed_gives_a_pure_wheel_unless_required(
    tmp_path: Path,
) -> None:
    missing = "no-such-cc-for-air"
    done, wheels = _wheel(tmp_path / "auto", CC=missing)
    assert done.returncode == 0, done.stderr
    assert len(wheels) == 1
    assert wheels[0].name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheels[0]) as whl:
        native = [n for n in whl.namelist() if n.endswith((".so", ".pyd"))]
    assert native == []
    assert f"the C compiler '{missing}' is not installed" in done.stdout + done.stderr
    done, wheels = _wheel(tmp_path / "require", CC=missing, AIR_SPEEDUPS="require")
    assert done.returncode != 0
    assert wheels == []
    assert "AIR_SPEEDUPS=require" in done.stdout + done.stderr


def test_the_compiler_script_checks_the_compiler_the_build_will_run() -> None:
    """``scripts/compiler.sh`` (``make install``'s check) follows ``CC`` as ``hatch_build.py``
    does: a compiler that is not installed is named, and nothing is installed for it."""
    keep = {k: v for k, v in os.environ.items() if k not in ("LDSHARED", "CC")}
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "compiler.sh"), sys.executable],
        env={**keep, "CC": "no-such-cc-for-air"}, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "the C compiler the build runs (LDSHARED, or CC) is missing: no-such-cc-for-air" in (
        done.stderr
    )
