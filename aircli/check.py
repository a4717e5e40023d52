"""``air check [PATH] [--format json] [--no-drafts]``: the tool-definition quality gate.

PATH is a definitions directory (the rules that pair tools with definitions are skipped) or a
server target ``file.py[:server]`` / ``package.module[:server]`` (all rules, including pairing,
on the server's registered tools and its definitions directory). Without PATH it finds the
project's server: ``[tool.air] server`` (and ``definitions``) in ``./pyproject.toml``, else
``./server.py``; without either it checks ``./tool-definitions`` alone. Tools whose definition
says ``register: false`` are drafts: reported, and failures with ``--no-drafts``. Exit 0 when
clean, 1 with ``file: field: problem`` lines otherwise, ordered by what matters: what breaks
the definitions (missing fields, wrong types, a tool without its definition) first, then what
the model reads (placeholders, descriptions, examples), then naming.

``--profile metering-only`` is for a project that only wants metering (a migrated server):
only what breaks the definitions fails; content and naming rules are printed as warnings.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from aircli._project import find_project
from aircore.definitions import (
    DefinitionFile,
    Problem,
    ToolDefinitionError,
    check_files,
    load_gate_config,
    read_definition_files,
)
from airmeter.context_cost import DEFAULT_DEFINITION_TOKEN_BUDGET

__all__ = [
    "NAMING_RULES",
    "PROFILES",
    "CheckReport",
    "check_directory",
    "check_project",
    "check_target",
    "drafts_of",
    "is_directory_target",
    "ordered",
    "print_report",
    "register",
    "with_drafts_as_problems",
    "with_profile",
]


NAMING_RULES = frozenset({"name", "name-structure", "interface-id", "category-folder"})
"""Rules about how tools are named (the standard's ``category_action_object``)."""
CONTENT_RULES = frozenset({
    "placeholder", "description", "too-short", "when-not-to-use", "input-description",
    "examples", "wording", "similar-tools", "near-duplicate", "draft",
})  # fmt: skip
"""Rules about what the model reads; every other rule is about the definitions' structure."""
PROFILES = ("full", "metering-only")
"""``full``: every rule fails; ``metering-only``: content and naming rules only warn."""
ADOPT_NAMING = (
    "naming: adopt the standard's names when you are ready: `air migrate --rename` renames the "
    "definitions and writes a rename map (renames.yml); the server and air gateway keep each "
    "old name as a deprecated alias for one release; meanwhile "
    "`air check --profile metering-only` reports naming as warnings"
)


def _rank(problem: Problem) -> int:
    if problem.rule in NAMING_RULES:
        return 2
    return 1 if problem.rule in CONTENT_RULES else 0


def ordered(problems: Sequence[Problem]) -> tuple[Problem, ...]:
    """Problems by what matters: structure, then content, then naming (stable within each)."""
    return tuple(sorted(problems, key=_rank))


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReport:
    """What one run of the gate found."""

    target: str
    mode: str
    checked: int
    problems: tuple[Problem, ...]
    drafts: tuple[str, ...] = ()
    """Tools whose definition says ``register: false`` (kept out of a central registry)."""
    warnings: tuple[Problem, ...] = ()
    """Problems the profile reports without failing (``--profile metering-only``)."""

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
        default=None,
        metavar="PATH",
        help="definitions directory, or a server: file.py[:server] or package.module[:server] "
        "(default: the project's server, see above)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="fmt")
    parser.add_argument(
        "--no-drafts",
        action="store_true",
        help="fail when a tool is still a draft (register: false), e.g. before publishing",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        default="full",
        help="full (default): every rule fails; metering-only: only what breaks the "
        "definitions fails, content and naming rules are warnings (a project that only "
        "wants metering)",
    )
    parser.add_argument(
        "--token-budget",
        type=int,
        default=DEFAULT_DEFINITION_TOKEN_BUDGET,
        metavar="N",
        help="warn when a server's tool definition adds more than N tokens to tools/list "
        "(default 1000; 0: no warning)",
    )
    parser.set_defaults(func=_run)


def drafts_of(files: Sequence[DefinitionFile]) -> tuple[str, ...]:
    """The names of the tools whose definition says ``register: false``, sorted."""
    names = (
        str(f.data.get("name", f.stem))
        for f in files
        if f.data is not None and f.data.get("register") is False
    )
    return tuple(sorted(names))


def _drafts_in(directory: Path) -> tuple[str, ...]:
    try:
        return drafts_of(read_definition_files(directory))
    except ToolDefinitionError:
        return ()


def check_directory(directory: str | Path) -> CheckReport:
    """Run the per-file, duplicate and similar-tool rules on a definitions directory.

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
    return CheckReport(target=str(root), mode="directory", checked=len(files),
                       problems=tuple(problems), drafts=drafts_of(files))  # fmt: skip


def check_target(target: str, *, definitions: Path | None = None) -> CheckReport:
    """Run every rule, pairing included, on a server target.

    Args:
        target: ``file.py[:server]`` or ``package.module[:server]``.
        definitions: the definitions directory when the server names none.

    Returns:
        The report.

    Raises:
        ToolDefinitionError: the target cannot be loaded as a server.
    """
    from aircli._server_check import check_server_target

    directory, checked, problems = check_server_target(target, definitions=definitions)
    return CheckReport(target=target, mode="server", checked=checked, problems=tuple(problems),
                       drafts=_drafts_in(directory))  # fmt: skip


def check_project(root: str | Path = ".") -> CheckReport:
    """The gate on a project, as ``air check`` without PATH and the build hook run it.

    Server mode on ``[tool.air] server`` or ``./server.py`` when there is one (the definitions
    directory of ``[tool.air] definitions`` pairs with a server that names none), else
    directory mode on the definitions directory.

    Args:
        root: the project directory.

    Returns:
        The report (an unloadable server or a bad ``[tool.air]`` is reported as a problem).
    """
    try:
        project = find_project(root)
    except ToolDefinitionError as exc:
        return CheckReport(target=str(root), mode="project", checked=0, problems=exc.problems)
    if project.server is None:
        return check_directory(project.definitions)
    project.import_paths()
    try:
        return check_target(project.server, definitions=project.definitions)
    except ToolDefinitionError as exc:
        return CheckReport(target=project.server, mode="server", checked=0,
                           problems=exc.problems)  # fmt: skip


def is_directory_target(path: str) -> bool:
    """Is ``path`` a definitions directory rather than a server target?"""
    return Path(path).is_dir() or not (
        ":" in path or path.endswith(".py") or ("." in path and "/" not in path)
    )


def with_profile(report: CheckReport, profile: str) -> CheckReport:
    """The report under a profile: ``metering-only`` turns content and naming problems into
    warnings; ``full`` leaves it as it is."""
    if profile != "metering-only":
        return report
    kept = tuple(p for p in report.problems if _rank(p) == 0)
    warned = tuple(p for p in report.problems if _rank(p) > 0)
    return dataclasses.replace(report, problems=kept, warnings=report.warnings + warned)


def with_drafts_as_problems(report: CheckReport) -> CheckReport:
    """The report with one ``draft`` problem per draft (for ``--no-drafts``)."""
    drafted = tuple(
        Problem(file=report.target, field=name, rule="draft",
                message="still a draft (register: false); approve it with register: true")
        for name in report.drafts
    )  # fmt: skip
    return dataclasses.replace(report, problems=report.problems + drafted)


def _run(args: argparse.Namespace) -> int:
    path: str | None = args.path
    if path is None:
        report = check_project(".")
    elif is_directory_target(path):
        report = check_directory(path)
    else:
        try:
            report = check_target(path)
        except ToolDefinitionError as exc:
            report = CheckReport(target=path, mode="server", checked=0, problems=exc.problems)
    if args.no_drafts:
        report = with_drafts_as_problems(report)
    report = with_profile(report, args.profile)
    warnings = _token_warnings(report, args.token_budget)
    if args.fmt == "json":
        body = {
            "ok": report.ok,
            "target": report.target,
            "mode": report.mode,
            "checked": report.checked,
            "drafts": list(report.drafts),
            "profile": args.profile,
            "problems": [p.to_json() for p in ordered(report.problems)],
            "warnings": [p.to_json() for p in ordered(report.warnings)],
            "token_warnings": [w.to_json() for w in warnings],
        }
        sys.stdout.write(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for warning in warnings:
            print(f"{report.target}: {warning}")
        print_report(report)
    return 0 if report.ok else 1


def _token_warnings(report: CheckReport, budget: int) -> list[Any]:
    """Definitions above the token budget, for a server that loaded (a warning, never a failure)."""
    if budget <= 0 or report.mode != "server" or report.checked == 0:
        return []
    from aircli._token_check import token_warnings

    try:
        return list(token_warnings(report.target, budget=budget))
    except ToolDefinitionError:
        return []


def print_report(report: CheckReport) -> None:
    """Print a report as ``file: field: problem`` lines (by what matters), then warnings, how
    to adopt the naming rules when they are among them, and a summary line."""
    for problem in ordered(report.problems):
        print(problem)
    for problem in ordered(report.warnings):
        print(f"warning: {problem}")
    if any(p.rule in NAMING_RULES for p in report.problems + report.warnings):
        print(ADOPT_NAMING)
    n = len(report.problems)
    what = f"{report.checked} definition(s) checked in {report.target}"
    if report.drafts:
        names = ", ".join(report.drafts)
        what += f"; {len(report.drafts)} draft(s), register: false: {names}"
    if n:
        files = len({p.file for p in report.problems})
        print(f"air check: {n} problem(s) in {files} file(s); {what}")
    else:
        warned = f" ({len(report.warnings)} warning(s))" if report.warnings else ""
        print(f"air check: ok{warned}, {what}")
