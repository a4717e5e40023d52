"""A definition file's ``required_scopes`` (issue 34 §1: "a tool definition's
``required_scopes``"): served by a real ``air serve --auth-config`` (the local issuer), the
tool is hidden from and refused to a caller without the scope, and works with it; the code's own
scopes still apply beside the file's; a malformed list is reported by ``air check``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from mcp import MCPError

from tests.air_process import air
from tests.aircore.definitions.fixtures import clean_definition
from tests.airhttp.oauth_serve import bearer_client, oauth_serving

TOOL = "docs_pages_search"
SERVER = """\
from pathlib import Path

from aircore import define_server, define_tool

server = define_server(
    name="notes",
    definitions=Path(__file__).parent / "tool-definitions",
    tools=[define_tool("docs_pages_search", handler=lambda params: {"hits": [params["query"]]},
                       required_scopes=["pages:read"])],
)
"""


def _project(tmp_path: Path, scopes: object) -> Path:
    definition = clean_definition(TOOL)
    del definition["required_env_keys"]
    definition["required_scopes"] = scopes
    folder = tmp_path / "tool-definitions" / "docs"
    folder.mkdir(parents=True)
    (folder.parent / "air-check.yml").write_text("known_tools: [fetch_page]\n")
    (folder / f"{TOOL}.yml").write_text(yaml.safe_dump(definition, sort_keys=False))
    return tmp_path


@pytest.mark.slow
async def test_a_definition_files_scopes_guard_its_tool_beside_the_codes(tmp_path: Path) -> None:
    project = _project(tmp_path, ["pages:admin"])
    async with oauth_serving(project, SERVER) as served:
        for scopes in ("mcp:tools", "mcp:tools pages:read", "mcp:tools pages:admin"):
            async with bearer_client(served.url, served.token(scopes)) as client:
                assert TOOL not in {t.name for t in (await client.list_tools()).tools}
                with pytest.raises(MCPError):
                    await client.call_tool(TOOL, {"query": "x"})
        both = served.token("mcp:tools pages:read pages:admin")
        async with bearer_client(served.url, both) as client:
            assert TOOL in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool(TOOL, {"query": "x"})
            assert not result.is_error, result.content
            assert result.structured_content == {"hits": ["x"]}


@pytest.mark.parametrize("scopes", ["pages:read", ["has space"], [""], [5]])
def test_air_check_reports_a_malformed_required_scopes(tmp_path: Path, scopes: object) -> None:
    project = _project(tmp_path, scopes)
    done = subprocess.run(air("check", str(project / "tool-definitions")), capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "required_scopes" in done.stdout + done.stderr
