"""``air meter slo`` without ``--store`` in a project: other data locations on the machine are
shown (each labelled with where its data is) but the exit status is the project's own, so
another project's breach never fails this one's CI gate; ``--everywhere`` counts them too.
Real processes: ``air serve`` spawned by the official client over stdio in ``/`` (the per-user
location; its tool fails every call) and in the project (``.air/data``; its calls succeed)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from aircli.meter_slo import EXIT_FAILING
from tests.air_process import air

SERVER = """\
from aircore import define_server, define_tool

def get_note(params):
    if {fails}:
        raise RuntimeError("the notes are gone")
    return "note " + params["key"]

server = define_server(name={name!r}, meter=True,
                       tools=[define_tool("get_note", handler=get_note, params={{"key": str}})])
"""


async def _calls(script: Path, cwd: Path | str, env: dict[str, str], n: int) -> None:
    argv = air("serve", str(script))
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=cwd, env=env)
    async with Client(params) as client:
        for i in range(n):
            await client.call_tool("get_note", {"key": str(i)})


def _slo(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(air("meter", "slo", *args), cwd=project, env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


async def test_another_locations_breach_is_shown_but_fails_only_with_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("AIR_DATA_DIR", raising=False)
    env = dict(os.environ)
    broken, fine = tmp_path / "broken_server.py", tmp_path / "fine_server.py"
    broken.write_text(SERVER.format(name="broken-notes", fails=True), encoding="utf-8")
    fine.write_text(SERVER.format(name="fine-notes", fails=False), encoding="utf-8")
    await _calls(broken, "/", env, 5)  # a desktop client starts servers in /
    await _calls(fine, project, env, 3)
    (project / ".air" / "slo.yml").write_text(
        'objectives:\n  - tool: "*"\n    availability: 0.99\n', encoding="utf-8"
    )
    user = f"file://{home / '.local' / 'share' / 'air' / 'data'}"

    done = _slo(project, env, "--format", "json")
    assert done.returncode == 0, done.stderr  # this project's objectives are met
    rows = orjson.loads(done.stdout)["objectives"]
    states = {r["server"]: (r["data"], r["state"]) for r in rows}
    assert states["broken-notes"][0] == user  # still shown, labelled with where it is
    assert states["broken-notes"][1] in ("breach", "exhausted")
    assert states["fine-notes"][1] == "ok"
    assert "failing in other data locations" in done.stderr
    assert "--everywhere" in done.stderr

    table = _slo(project, env)
    assert table.returncode == 0, table.stderr
    assert "broken-notes" in table.stdout
    assert f"data {user}" in table.stdout

    everywhere = _slo(project, env, "--everywhere")
    assert everywhere.returncode == EXIT_FAILING, everywhere.stderr
    assert "broken-notes" in everywhere.stdout
