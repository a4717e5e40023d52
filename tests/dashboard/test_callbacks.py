"""The refresh callback's outputs are named: a read view fills every one, a problem only the
banner and the visibility of the page."""

from __future__ import annotations

import time

from dash import no_update

from airstore import MemoryStore
from dashboard import DashboardData, DashboardError, StoreUnavailableError
from dashboard.callbacks import PAGE_OUTPUTS, page_values, problem_values
from tests.dashboard.seed import make_records, write_records


async def test_a_read_view_fills_every_named_output() -> None:
    store = MemoryStore()
    await store.init()
    now_ms = int(time.time() * 1000)
    await write_records(store, make_records(now_ms=now_ms, count=300, span_ms=600_000))
    data = DashboardData(store, url="memory://")
    view = await data.view(data.resolve("1h"))
    values = page_values(view)
    await data.close()
    assert set(values) == set(PAGE_OUTPUTS)
    assert no_update not in values.values()
    assert values["kpi_calls"] == "300"
    assert (values["banner"], values["banner_style"]) == ("", {"display": "none"})
    assert values["content_style"] == {}  # shown
    assert len(values["errors"]) == len(values["error_tooltips"]) > 0


def test_a_problem_shows_the_banner_and_leaves_the_numbers_alone() -> None:
    unreadable = problem_values(StoreUnavailableError("cannot read", url="u", hint="check it"))
    assert set(unreadable) == set(PAGE_OUTPUTS)
    assert unreadable["banner"] == ["cannot read", " — check it"]
    assert unreadable["banner_style"] == {}
    assert unreadable["content_style"] == {"display": "none"}  # stale numbers are hidden
    assert all(
        unreadable[key] is no_update
        for key in PAGE_OUTPUTS
        if key not in ("banner", "banner_style", "content_style", "empty_style")
    )
    bad_input = problem_values(DashboardError("pick a start time"))
    assert bad_input["content_style"] == {}  # the page stays; only the banner speaks
