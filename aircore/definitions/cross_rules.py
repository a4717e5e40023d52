"""Gate rules across definition files: similar tools name each other, both ways (§7 of the
standard: ``when_not_to_use`` lists the real names of similar tools in both directions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aircore.definitions.config import GateConfig
from aircore.definitions.types import DefinitionFile, Problem
from aircore.definitions.wording import tool_references

__all__ = ["check_similar_tools"]


def _when_not_to_use(file: DefinitionFile) -> tuple[str, str] | None:
    data = file.data
    if data is None or not isinstance(data.get("name"), str):
        return None
    desc = data.get("description")
    text = desc.get("when_not_to_use") if isinstance(desc, Mapping) else None
    return (data["name"], text) if isinstance(text, str) else None


def check_similar_tools(files: Sequence[DefinitionFile], *, config: GateConfig) -> list[Problem]:
    """Every tool a ``when_not_to_use`` names exists, and names the first tool back.

    A name that is neither defined in the directory nor listed in ``known_tools`` (tools of
    other servers) is reported on the file that names it; a defined tool that does not name
    back is reported on its own file.

    Args:
        files: every file of a definitions directory.
        config: the gate configuration (``known_tools``).

    Returns:
        The problems, ordered by file.
    """
    labels: dict[str, str] = {}
    refs: dict[str, set[str]] = {}
    for file in files:
        found = _when_not_to_use(file)
        if found is not None:
            name, text = found
            labels.setdefault(name, file.label)
            refs.setdefault(name, set()).update(tool_references(text) - {name})
    external = set(config.known_tools)
    problems: list[Problem] = []
    for name in sorted(refs):
        for other in sorted(refs[name]):
            if other in refs:
                if name not in refs[other]:
                    problems.append(
                        Problem(
                            file=labels[other],
                            field="description.when_not_to_use",
                            message=f"{name!r} names {other!r} as a similar tool; "
                            f"name {name!r} here too (similar tools name each other)",
                            rule="similar-tools",
                        )
                    )
            elif other not in external:
                problems.append(
                    Problem(
                        file=labels[name],
                        field="description.when_not_to_use",
                        message=f"names {other!r}, which no definition here defines "
                        "(a tool of another server goes in known_tools of air-check.yml)",
                        rule="when-not-to-use",
                    )
                )
    return sorted(problems, key=lambda p: p.file)
