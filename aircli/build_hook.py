"""The tool-definition gate in the build: a hatch build hook named ``air-check``.

A project that builds with hatchling turns it on in its ``pyproject.toml``::

    [build-system]
    requires = ["hatchling", "air-mcp"]
    build-backend = "hatchling.build"

    [tool.hatch.build.hooks.air-check]
    # allow-drafts = false      # also fail while a tool is a draft (register: false)

    [tool.air]
    server = "my_tools.server:server"

``python -m build`` (and ``hatch build``, ``pip wheel``) then runs ``air check`` on the project
before building each target and fails, listing every ``file: field: problem``, on a violation.
hatchling finds the hook through the ``hatch`` entry point of the ``air-mcp`` distribution.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl

from aircli.check import check_project, with_drafts_as_problems

__all__ = ["AirCheckBuildHook", "hatch_register_build_hook"]


class AirCheckBuildHook(BuildHookInterface[Any]):
    """Run the gate on the project before a target is built; abort the build on a problem."""

    PLUGIN_NAME = "air-check"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Check the project (its ``[tool.air]`` server, ``./server.py`` or definitions).

        Raises:
            SystemExit: through hatchling's ``app.abort`` when the gate finds a problem.
        """
        report = check_project(self.root)
        if self.config.get("allow-drafts", True) is False:
            report = with_drafts_as_problems(report)
        if report.ok:
            drafts = f", {len(report.drafts)} draft(s)" if report.drafts else ""
            self.app.display_info(
                f"air check: ok, {report.checked} definition(s) in {report.target}{drafts}"
            )
            return
        lines = [str(p) for p in report.problems]
        lines.append(
            f"air check: {len(report.problems)} problem(s); the {self.target_name} build stops"
        )
        self.app.abort("\n".join(lines))


@hookimpl
def hatch_register_build_hook() -> type[AirCheckBuildHook]:
    """Register the ``air-check`` build hook with hatchling (the ``hatch`` entry point)."""
    return AirCheckBuildHook
