"""``air migrate --rename`` with the real CLI: the definitions are renamed to the standard's
names and ``renames.yml`` maps old → new; the server (its handler not renamed yet) serves the
new name, and the old one stays a deprecated alias: a call by it works, gets a deprecation
notice, is logged once and metered under the new name. ``air gateway`` in front keeps the alias
too (the official client calls through both)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from aircore.definitions.renames import load_renames
from aircore.protocol.renamed import ALIASES_META_KEY, DEPRECATED_META_KEY
from tests.air_process import air
from tests.aircore.definitions.fixtures import clean_definition
from tests.airgateway.procs import free_port, started

OLD, NEW = "search_documents", "docs_documents_search"
SERVER = """\
from pathlib import Path

from aircore import define_server, define_tool

server = define_server(
    name="notes",
    meter=True,
    definitions=Path(__file__).parent / "tool-definitions",
    tools=[define_tool("search_documents", handler=lambda params: {"hits": [params["query"]]})],
)
"""


def _project(tmp_path: Path) -> Path:
    """A migrated project: its tool keeps a name the default naming rules refuse."""
    definition = clean_definition(OLD)
    del definition["required_env_keys"]
    folder = tmp_path / "tool-definitions" / "docs"
    folder.mkdir(parents=True)
    (folder.parent / "air-check.yml").write_text("known_tools: [fetch_page]\n", encoding="utf-8")
    (folder / f"{OLD}.yml").write_text(yaml.safe_dump(definition, sort_keys=False),
                                       encoding="utf-8")  # fmt: skip
    (tmp_path / "notes_server.py").write_text(SERVER, encoding="utf-8")
    return tmp_path


def _air(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(air(*args), cwd=project, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


Renamed = tuple[Path, subprocess.CompletedProcess[str]]
"""A renamed project and its first ``air migrate --rename``'s result."""


def _renamed(project: Path) -> subprocess.CompletedProcess[str]:
    """Rename ``project`` with the real CLI, checking each step; the first ``migrate --rename``'s
    result."""
    assert _air(project, "check").returncode == 1  # the naming rule
    done = _air(project, "migrate", "--rename")
    assert done.returncode == 0, done.stderr
    assert f"renamed {OLD} -> {NEW}" in done.stdout
    definitions = project / "tool-definitions"
    assert load_renames(definitions) == {OLD: NEW}
    assert not (definitions / "docs" / f"{OLD}.yml").exists()
    moved = yaml.safe_load((definitions / "docs" / f"{NEW}.yml").read_text(encoding="utf-8"))
    assert moved["name"] == NEW
    assert _air(project, "check").returncode == 0, "the gate passes after the rename"
    again = _air(project, "migrate", "--rename")  # nothing left to rename; the map is kept
    assert again.returncode == 0
    assert "nothing renamed" in again.stdout
    assert load_renames(definitions) == {OLD: NEW}
    return done


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> Renamed:
    """A project renamed once for the module (``_renamed``: four real ``air`` processes) and its
    first ``migrate --rename``'s result; each test serves its own copy (:func:`_copy`)."""
    project = _project(tmp_path_factory.mktemp("renamed"))
    return project, _renamed(project)


def _copy(renamed: Renamed, tmp_path: Path) -> Path:
    """A copy of the renamed project in ``tmp_path`` (a test's data and files stay its own)."""
    shutil.copytree(renamed[0], tmp_path, dirs_exist_ok=True)
    return tmp_path


def _data(project: Path) -> str:
    return f"file://{project / '.air' / 'data'}"


def _report(project: Path) -> dict[str, Any]:
    done = _air(project, "meter", "report", "--since", "all", "--format", "json", "--store",
                _data(project))  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = orjson.loads(done.stdout)
    return report


async def _calls_by_both_names(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {NEW}  # the old name is not listed
    assert (listed[NEW].meta or {}).get(ALIASES_META_KEY) == [OLD]
    old = await client.call_tool(OLD, {"query": "budget"})
    assert not old.is_error
    assert old.structured_content == {"hits": ["budget"]}
    notice = (old.meta or {})[DEPRECATED_META_KEY]
    assert (notice["name"], notice["use"]) == (OLD, NEW)
    new = await client.call_tool(NEW, {"query": "seoul"})
    assert not new.is_error
    assert DEPRECATED_META_KEY not in (new.meta or {})


@pytest.mark.slow
async def test_migrate_rename_keeps_the_old_name_as_a_deprecated_alias(
    renamed: Renamed, tmp_path: Path
) -> None:
    project = _copy(renamed, tmp_path)
    argv = air("serve", "notes_server.py", "--store", _data(project))
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=project)
    async with Client(params) as client:  # the official client over real stdio
        await _calls_by_both_names(client)
        await client.call_tool(OLD, {"query": "again"})
    report = _report(project)
    assert {t["tool"]: t["calls"] for t in report["tools"]} == {NEW: 3}  # metered as the new


@pytest.mark.slow
async def test_the_gateway_keeps_the_old_name_as_a_deprecated_alias(
    renamed: Renamed, tmp_path: Path
) -> None:
    project = _copy(renamed, tmp_path)
    port = free_port()
    config = project / "gw.yml"
    config.write_text(f"servers:\n  - name: notes\n    url: http://127.0.0.1:{port}/mcp\n",
                      encoding="utf-8")  # fmt: skip
    data = _data(project)
    upstream = air("serve", str(project / "notes_server.py"), "--transport", "http", "--port",
                   str(port), "--store", data)  # fmt: skip
    with (
        started(upstream) as server,
        started(air("gateway", "--config", str(config), "--port", "0", "--store", data)) as gw,
    ):
        async with Client(gw.url) as client:
            await _calls_by_both_names(client)
        assert gw.stop() == 0
        assert server.stop() == 0
    warned = [line for line in server.lines if f"tool {OLD!r} is deprecated" in line]
    assert len(warned) == 1  # logged once per alias
    report = _report(project)
    assert {t["tool"]: t["calls"] for t in report["tools"]} == {NEW: 2}  # once each, new name
    assert report["gateway"]["hops"] == 2


@pytest.mark.slow
async def test_scope_globs_written_for_the_old_name_keep_protecting_the_renamed_tool(
    renamed: Renamed, tmp_path: Path
) -> None:
    """``auth.tools`` names tools by glob; one written for the old name (``search_*``) still
    guards the tool once it is served under its new name: listed and run only for a token with
    the scope, by either name (``air serve --auth-config``, the official client)."""
    from mcp import MCPError

    from tests.airhttp.oauth_serve import bearer_client, oauth_serving

    project = _copy(renamed, tmp_path)  # the same project, renamed by the same command
    done = renamed[1]
    assert done.returncode == 0, done.stderr
    assert "auth.tools" in done.stdout  # it says which configuration names tools
    auth = "scopes: [mcp:tools]\ntools:\n  'search_*': [docs:read]\n"
    async with oauth_serving(project, SERVER, auth_yaml=auth) as served:  # served.py beside
        async with bearer_client(served.url, served.token("mcp:tools")) as client:
            assert NEW not in {t.name for t in (await client.list_tools()).tools}
            with pytest.raises(MCPError, match="docs:read"):
                await client.call_tool(NEW, {"query": "x"})
        async with bearer_client(served.url, served.token("mcp:tools docs:read")) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {NEW}
            result = await client.call_tool(NEW, {"query": "x"})
            assert result.structured_content == {"hits": ["x"]}


@pytest.mark.slow
async def test_the_gateways_scope_globs_for_the_old_name_keep_protecting_the_renamed_tool(
    renamed: Renamed, tmp_path: Path
) -> None:
    """The same through ``air gateway`` with ``auth:`` (the local issuer) in front of the
    renamed server: a glob for the old name guards the new one, listed and by either name."""
    import asyncio
    import contextlib

    from tests.airgateway.test_gateway_upstream_scopes import _post
    from tests.airhttp.issuer import running_issuer

    project = _copy(renamed, tmp_path)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    upstream = air("serve", str(project / "notes_server.py"), "--transport", "http", "--port",
                   "0", "--store", "memory://")  # fmt: skip
    async with running_issuer() as issuer, contextlib.AsyncExitStack() as stack:
        server = await asyncio.to_thread(stack.enter_context, started(upstream))
        config = project / "gw.yml"
        config.write_text(
            f"servers:\n  - {{name: notes, url: '{server.url}'}}\n"
            f"auth:\n  issuer: {issuer.url}\n  resource: {resource}\n  scopes: [mcp:tools]\n"
            "  tools: {'search_*': [docs:read]}\n",
            encoding="utf-8",
        )
        argv = air("gateway", "--config", str(config), "--port", str(port), "--store",
                   "memory://")  # fmt: skip
        gw = await asyncio.to_thread(stack.enter_context, started(argv))
        plain = issuer.token(resource=resource, scope="mcp:tools")
        listed = await _post(gw.url, plain, "tools/list", {})
        assert NEW not in {t["name"] for t in listed.json()["result"]["tools"]}
        for name in (NEW, OLD):
            refused = await _post(gw.url, plain, "tools/call",
                                  {"name": name, "arguments": {"query": "x"}})  # fmt: skip
            assert refused.status_code == 403, (name, refused.text)
            assert "docs:read" in refused.headers["www-authenticate"]
        reader = issuer.token(resource=resource, scope="mcp:tools docs:read")
        listed = await _post(gw.url, reader, "tools/list", {})
        assert {t["name"] for t in listed.json()["result"]["tools"]} == {NEW}
        done = await _post(gw.url, reader, "tools/call",
                           {"name": NEW, "arguments": {"query": "x"}})  # fmt: skip
        assert done.status_code == 200, done.text
        assert done.json()["result"]["structuredContent"] == {"hits": ["x"]}
