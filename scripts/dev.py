"""The Makefile's developer steps for machines without make or a POSIX shell (Windows):
``py scripts/dev.py install|demo|lint|typecheck|test`` (``python3 scripts/dev.py …`` elsewhere).

- ``install``: create ``.venv`` (if missing) and install air with its dev tools into it, as
  ``make install`` does. ``AIR_SPEEDUPS`` keeps its meaning; unset, it is ``auto`` here (a
  Windows Python usually has no C compiler configured: a pure-Python install), where the
  Makefile requires the speedups.
- ``demo``: install, then ``air demo`` (``make demo``).
- ``lint``, ``typecheck``: ruff (check + format check), mypy strict (``make lint typecheck``).
- ``test``: lint, types, then pytest; arguments after ``--`` go to pytest. The system programs
  some tests drive (redis-server, Chromium) are not installed here: set
  ``AIR_TEST_ALLOW_MISSING=1`` to skip those tests with the reason instead of failing them.

Only the standard library; the paths of the venv's programs follow the OS (``Scripts\\`` on
Windows, ``bin/`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def venv_program(venv: Path, name: str) -> Path:
    """The path of ``name`` (python, air, …) inside ``venv`` on this OS."""
    scripts = "Scripts" if os.name == "nt" else "bin"
    suffix = sysconfig.get_config_var("EXE") or (".exe" if os.name == "nt" else "")
    return venv / scripts / f"{name}{suffix}"


def _run(argv: list[str | Path], env: dict[str, str] | None = None) -> None:
    print("==>", " ".join(str(part) for part in argv), flush=True)
    done = subprocess.run([str(part) for part in argv], cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(done.returncode)


def install(venv: Path, extra: str = "dev") -> Path:
    """Create ``venv`` when missing and install air (with ``extra``) into it; its python."""
    python = venv_program(venv, "python")
    if not python.is_file():
        _run([sys.executable, "-m", "venv", venv])
        _run([python, "-m", "pip", "install", "--upgrade", "--quiet", "pip"])
    env = {**os.environ, "AIR_SPEEDUPS": os.environ.get("AIR_SPEEDUPS") or "auto"}
    _run([python, "-m", "pip", "install", "-e", f".[{extra}]"], env=env)
    return python


def lint(python: Path) -> None:
    _run([python, "-m", "ruff", "check", "."])
    _run([python, "-m", "ruff", "format", "--check", "."])


def typecheck(python: Path) -> None:
    _run([python, "-m", "mypy"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dev.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=["install", "demo", "lint", "typecheck", "test"])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv", help="default: .venv")
    parser.add_argument("--no-install", action="store_true", help="use the venv as it is")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="after --: pytest's arguments")
    args = parser.parse_args(argv)
    venv: Path = args.venv
    python = venv_program(venv, "python")
    if not args.no_install:
        python = install(venv, "demo" if args.step == "demo" else "dev")
    if args.step == "demo":
        _run([venv_program(venv, "air"), "demo"])
    elif args.step in ("lint", "test"):
        lint(python)
    if args.step in ("typecheck", "test"):
        typecheck(python)
    if args.step == "test":
        rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
        _run([python, "-m", "pytest", *rest])
    return 0


if __name__ == "__main__":
    sys.exit(main())
