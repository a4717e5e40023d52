"""Build hook of air-mcp itself: compile ``airstore/_speedups.c`` (the C path of KV sets).

The extension is optional: airstore runs the same paths in Python without it. ``AIR_SPEEDUPS``
decides (read here at build time, and by ``airstore/settings.py`` at run time):

- unset or ``auto``: compiled when the platform's C compiler and the Python headers work, else
  one warning and a pure-Python wheel;
- ``require``: a failed compile fails the build (``make install`` sets it, so the test suite
  always runs against the extension it ships);
- ``off``: a pure-Python wheel.

A wheel with the extension is tagged for this interpreter and platform (``cp311-…-linux_x86_64``);
a pure one stays ``py3-none-any``. An editable install compiles the module next to its source
(``airstore/_speedups.<abi>.so``, ignored by git) and removes one an earlier build left there;
``make install`` reinstalls when the source or the mode changes. The compiler is the one this
Python was built with (``LDSHARED``: gcc on Linux, clang on macOS), which the environment may
override (``LDSHARED``, or ``CC`` for its compiler as setuptools reads it; ``CFLAGS`` is not
read). A Python with no such toolchain (Windows, where extensions are built with MSVC) or a
compiler that is not installed gives a pure-Python wheel in ``auto`` mode. pip shows the
warning of a failed ``auto`` build only with ``pip install -v``: use ``AIR_SPEEDUPS=require`` to
be sure the extension is there.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "airstore/_speedups.c"
MODES = ("auto", "require", "off")


def _linker() -> str:
    """The compile-and-link command line this Python was built with (``LDSHARED``: ``gcc
    -shared`` on Linux, ``clang -bundle -undefined dynamic_lookup`` on macOS), ``LDSHARED``
    from the environment winning; ``CC`` from the environment replaces its compiler, as
    setuptools does (``CC=clang``).

    Raises:
        OSError: this Python has none (Windows, whose extensions are built with MSVC, which
            this hook does not drive: the wheel is then pure).
    """
    ldshared = os.environ.get("LDSHARED")
    if ldshared:
        return ldshared
    ldshared = sysconfig.get_config_var("LDSHARED") or ""
    built_with = sysconfig.get_config_var("CC") or ""
    cc = os.environ.get("CC")
    if ldshared and cc and built_with and ldshared.startswith(built_with):
        ldshared = cc + ldshared[len(built_with) :]
    if not ldshared:
        raise OSError(
            f"no C toolchain is configured for this Python ({sys.platform}; MSVC builds are "
            "not attempted)"
        )
    return ldshared


def _command(source: Path, target: Path) -> list[str]:
    """The compile-and-link command for ``source`` into the extension file ``target`` (flags
    that gcc and clang both take)."""
    ldshared = _linker()
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise OSError(f"the Python headers are missing ({include}/Python.h)")
    ccshared = sysconfig.get_config_var("CCSHARED") or ""
    return [
        *shlex.split(ldshared),
        *shlex.split(ccshared),
        "-O2",
        "-fwrapv",
        "-DNDEBUG",
        f"-I{include}",
        str(source),
        "-o",
        str(target),
    ]


def compile_speedups(source: Path, target: Path) -> str | None:
    """Compile the extension; ``None`` on success, else why it failed (one paragraph)."""
    try:
        argv = _command(source, target)
    except OSError as exc:
        return str(exc)
    if shutil.which(argv[0]) is None:
        return f"the C compiler {argv[0]!r} is not installed (or not on PATH)"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0:
        return f"{shlex.join(argv)} exited {done.returncode}:\n{done.stderr.strip()}"
    return None


class SpeedupsBuildHook(BuildHookInterface[Any]):
    """Compile the C speedups into the wheel (or next to the source for an editable install)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile, and mark the wheel platform-specific when it worked.

        Raises:
            ValueError: ``AIR_SPEEDUPS`` holds something else than auto, require or off.
            RuntimeError: ``AIR_SPEEDUPS=require`` and the extension did not compile.
        """
        mode = os.environ.get("AIR_SPEEDUPS", "").strip().lower() or "auto"
        if mode not in MODES:
            raise ValueError(f"AIR_SPEEDUPS={mode!r}: use one of {', '.join(MODES)}")
        root = Path(self.root)
        name = "_speedups" + str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")
        if version == "editable":
            # An editable install imports from the source tree: a module left there by an
            # earlier build would be loaded whatever this build decides.
            for stale in (root / "airstore").glob("_speedups.*"):
                if stale.suffix in (".so", ".pyd"):
                    stale.unlink()
        if mode == "off":
            return
        # For an editable install, next to the tree (build/, ignored by git): os.replace below
        # must not cross file systems.
        where = None
        if version == "editable":
            where = root / "build"
            where.mkdir(exist_ok=True)
        self._tmp = tempfile.mkdtemp(prefix="air-speedups-", dir=where)
        target = Path(self._tmp) / name
        error = compile_speedups(root / SOURCE, target)
        if error is not None:
            self._cleanup()
            why = f"airstore's C speedups were not compiled; KV sets take the Python path.\n{error}"
            if mode == "require":
                raise RuntimeError(f"AIR_SPEEDUPS=require: {why}")
            self.app.display_warning(why)
            return
        if version == "editable":
            os.replace(target, root / "airstore" / name)  # whole, or not at all
            self._cleanup()
        else:
            build_data["force_include"][str(target)] = f"airstore/{name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def _cleanup(self) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            self._tmp = None

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the build's temporary directory."""
        self._cleanup()
