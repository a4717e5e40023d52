"""``air check [PATH] [--format json]``: the tool-definition quality gate.

PATH is a definitions directory (the rules that pair tools with definitions are skipped) or a
server target ``file.py[:server]`` / ``package.module[:server]`` (all rules, including pairing,
on the server's registered tools and its definitions directory). Without PATH it checks
``./tool-definitions``. Exit 0 when clean, 1 with ``file: field: problem`` lines otherwise.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson

from aircore.definitions import (
    DEFAULT_DEFINITIONS_DIR,
    Problem,
    ToolDefinitionError,
    check_files,
    load_gate_config,
    read_definition_files,
)

__all__ = ["CheckReport", "check_directory", "check_target", "register"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReport:
    """What one run of the gate found."""

    target: str
    mode: str
    checked: int
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``check`` subcommand."""
    parser = sub.add_parser(
        "check",
        help="check tool definitions against the standard (the quality gate)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "path",
        nargs="?",
        default=DEFAULT_DEFINITIONS_DIR,
        metavar="PATH",
        help="definitions directory, or a server: file.py[:server] or package.module[:server] "
        f"(default: ./{DEFAULT_DEFINITIONS_DIR})",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")
    parser.set_defaults(func=_run)


def check_directory(directory: str | Path) -> CheckReport:
    """Run the per-file and duplicate rules on a definitions directory.

    Args:
        directory: the definitions directory.

    Returns:
        The report (a missing directory or bad ``air-check.yml`` is reported as a problem).
    """
    root = Path(directory)
    try:
        config = load_gate_config(root)
        files = read_definition_files(root)
    except ToolDefinitionError as exc:
        return CheckReport(target=str(root), mode="directory", checked=0, problems=exc.problems)
    problems = check_files(files, config=config)
    return CheckReport(
        target=str(root), mode="directory", checked=len(files), problems=tuple(problems)
    )


def check_target(target: str) -> CheckReport:
    """Run every rule, pairing included, on a server target.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.

    Returns:
        The report.

    Raises:
        ToolDefinitionError: the target cannot be loaded as a server.
    """
    from aircli._server_check import check_server_target

    checked, problems = check_server_target(target)
    return CheckReport(target=target, mode="server", checked=checked, problems=tuple(problems))


def _is_directory_target(path: str) -> bool:
    return Path(path).is_dir() or not (
        ":" in path or path.endswith(".py") or ("." in path and "/" not in path)
    )


def _run(args: argparse.Namespace) -> int:
    path: str = args.path
    try:
        report = check_directory(path) if _is_directory_target(path) else check_target(path)
    except ToolDefinitionError as exc:
        report = CheckReport(target=path, mode="server", checked=0, problems=exc.problems)
    if args.fmt == "json":
        body = {
            "ok": report.ok,
            "target": report.target,
            "mode": report.mode,
            "checked": report.checked,
            "problems": [p.to_json() for p in report.problems],
        }
        sys.stdout.write(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _print_text(report)
    return 0 if report.ok else 1


def _print_text(report: CheckReport) -> None:
    for problem in report.problems:
        print(problem)
    n = len(report.problems)
    what = f"{report.checked} definition(s) checked in {report.target}"
    if n:
        files = len({p.file for p in report.problems})
        print(f"air check: {n} problem(s) in {files} file(s); {what}")
    else:
        print(f"air check: ok, {what}")
