"""``air check`` warns when a tool definition adds more tokens to ``tools/list`` than the
budget (``--token-budget``), largest first, without failing the gate."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from aircli import main
from aircli._token_check import token_warnings
from airmeter.context_cost import definition_tokens
from airmeter.tokens import load_counter

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")


def test_definitions_above_the_budget_are_warned_and_the_gate_still_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", DEMO, "--token-budget", "150"]) == 0
    out = capsys.readouterr().out
    warned = [line for line in out.splitlines() if ": warning: " in line]
    found = token_warnings(DEMO, budget=150)
    assert len(warned) == len(found) > 0
    assert [w.tokens for w in found] == sorted((w.tokens for w in found), reverse=True)
    assert all(w.tokens > 150 for w in found)
    assert f"{found[0].tool}: its definition adds {found[0].tokens:,} tokens" in warned[0]
    assert "air check: ok" in out


def test_the_json_carries_each_count_as_the_meter_counts_the_tools_list_entry(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from aircli._server_check import server_manifest

    entries = server_manifest(DEMO)["tools"]
    counts = definition_tokens(entries, load_counter())
    assert main(["check", DEMO, "--format", "json", "--token-budget", "1"]) == 0
    body = orjson.loads(capsys.readouterr().out)
    got = {w["tool"]: w["tokens"] for w in body["token_warnings"]}
    assert got == counts
    assert all(w["budget"] == 1 for w in body["token_warnings"])


def test_the_default_budget_and_zero_warn_of_nothing_here(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", DEMO]) == 0
    assert main(["check", DEMO, "--token-budget", "0"]) == 0
    assert ": warning: " not in capsys.readouterr().out
