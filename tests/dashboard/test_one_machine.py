"""One machine, one view, with real processes: a metered server a client spawns in ``/`` (it
meters to the per-user location) and one spawned in the project (``.air/data``), both called by
the official client over stdio. ``air meter slo`` and the dashboard run in the project see
both locations, each server labelled with where its data is; ``--store`` narrows to one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from dashboard.data import DashboardData
from dashboard.ranges import resolve_range
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from dashboard.types import Filters
from tests.air_process import air

SERVER = """\
from aircore import define_server, define_tool

server = define_server(
    name={name!r},
    meter=True,
    tools=[define_tool("get_note", handler=lambda params: "note " + params["key"],
                       params={{"key": str}})],
)
"""


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A home of its own (the per-user location and its locations.json) and a project."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))  # this process's readers find the same index
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("AIR_DATA_DIR", raising=False)
    env = dict(os.environ)
    return {"env": env, "project": project,
           "user_data": home / ".local" / "share" / "air" / "data"}  # fmt: skip


async def _calls(script: Path, cwd: Path | str, env: dict[str, str], n: int) -> None:
    """``n`` calls by the official client to ``air serve script`` spawned in ``cwd``."""
    argv = air("serve", str(script))
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=cwd, env=env)
    async with Client(params) as client:
        for i in range(n):
            assert not (await client.call_tool("get_note", {"key": str(i)})).is_error


async def _two_locations(machine: dict[str, Any], tmp_path: Path) -> tuple[str, str]:
    desk, proj = tmp_path / "desk_server.py", tmp_path / "proj_server.py"
    desk.write_text(SERVER.format(name="desk-notes"), encoding="utf-8")
    proj.write_text(SERVER.format(name="proj-notes"), encoding="utf-8")
    await _calls(desk, "/", machine["env"], 5)  # a desktop client starts servers in /
    await _calls(proj, machine["project"], machine["env"], 3)
    (machine["project"] / ".air" / "slo.yml").write_text(
        'objectives:\n  - tool: "*"\n    availability: 0.99\n', encoding="utf-8"
    )
    here = f"file://{machine['project'] / '.air' / 'data'}"
    return here, f"file://{machine['user_data']}"


def _slo(machine: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(air("meter", "slo", "--format", "json", *args),
                          cwd=machine["project"], env=machine["env"], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


async def test_meter_slo_and_the_dashboard_see_every_data_location(
    machine: dict[str, Any], tmp_path: Path
) -> None:
    here, user = await _two_locations(machine, tmp_path)

    done = _slo(machine)
    assert done.returncode == 0, done.stderr
    rows = orjson.loads(done.stdout)["objectives"]
    seen = {(r["server"], r["data"], r["valid_calls"]) for r in rows}
    assert seen == {("proj-notes", here, 3), ("desk-notes", user, 5)}  # each with its data
    narrowed = orjson.loads(_slo(machine, "--store", here).stdout)["objectives"]
    assert {(r["server"], r["data"]) for r in narrowed} == {("proj-notes", here)}

    data = await DashboardData.open(here, everywhere=True)
    try:
        rng = resolve_range("24h", now_ms=data.now_ms())
        await data.view(rng)
        await data.machine.evaluate_now(rng)
        view = await data.view(rng)
        assert view.snapshot.total_calls == 3  # the views: the store the dashboard was opened on
        assert view.machine is not None
        listed = {(r.server, r.calls, r.data, r.here) for r in view.machine.rows}
        assert listed == {("proj-notes", 3, here, True), ("desk-notes", 5, user, False)}
        narrowed_view = await data.view(rng, Filters(tool="no_such_tool"))
        assert narrowed_view.snapshot.total_calls == 0  # a filter narrows the views, not the list
        assert narrowed_view.machine is not None
        assert {(r.server, r.calls) for r in narrowed_view.machine.rows} == {
            ("proj-notes", 3), ("desk-notes", 5)}  # fmt: skip
    finally:
        await data.close()
    one = await DashboardData.open(here)  # --store: this store only
    try:
        await one.machine.evaluate_now(rng)
        view = await one.view(rng)
        assert view.machine is not None
        assert {r.server for r in view.machine.rows} == {"proj-notes"}
    finally:
        await one.close()


@pytest.mark.browser
async def test_the_dashboard_page_lists_every_locations_servers(
    machine: dict[str, Any], tmp_path: Path, browser: WebDriver
) -> None:
    here, user = await _two_locations(machine, tmp_path)
    server = DashboardServer(SyncReader.open(here, everywhere=True), store_url=here, port=0,
                             refresh_ms=500)  # fmt: skip
    with server:
        browser.get(server.url)

        def listed(driver: WebDriver) -> bool:
            text = str(driver.find_element(By.ID, "machine-panel").text)
            return all(s in text for s in ("desk-notes", "proj-notes", user, here))

        WebDriverWait(browser, 30).until(listed)
        text = browser.find_element(By.ID, "machine-panel").text
        assert "2 data locations on this machine" in text
