"""The release workflow builds the sdist and the wheels, checks them with ``twine check`` and
publishes them on a version tag by trusted publishing (no stored token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "release.yml"


def _workflow() -> dict[str, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    loaded["on"] = loaded.pop(True, loaded.get("on"))  # YAML 1.1 reads the key `on` as True
    return loaded


def _runs(job: dict[str, Any]) -> list[str]:
    return [step.get("run", "") for step in job["steps"]]


def _uses(job: dict[str, Any]) -> list[str]:
    return [step.get("uses", "") for step in job["steps"]]


def test_the_release_workflow_runs_on_version_tags() -> None:
    assert _workflow()["on"]["push"]["tags"] == ["v*"]


def test_the_release_builds_an_sdist_and_wheels_and_checks_them_with_twine() -> None:
    jobs = _workflow()["jobs"]
    sdist_runs = " ".join(_runs(jobs["sdist"]))
    assert "python -m build --sdist" in sdist_runs
    assert "twine check --strict" in sdist_runs
    assert any(u.startswith("pypa/cibuildwheel@") for u in _uses(jobs["wheels"]))
    assert "twine check --strict" in " ".join(_runs(jobs["wheels"]))


def test_the_release_publishes_on_a_tag_by_trusted_publishing_only() -> None:
    publish = _workflow()["jobs"]["publish"]
    assert set(publish["needs"]) == {"sdist", "wheels"}
    assert "refs/tags/v" in publish["if"]
    assert publish["permissions"]["id-token"] == "write"
    (step,) = [s for s in publish["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi")]
    assert "with" not in step or "password" not in step["with"]  # no API token: OIDC
    assert "secrets." not in WORKFLOW.read_text(encoding="utf-8")
