"""The dashboard at first sight (issue 32, §3): it opens on the smallest range that holds the
data and says which range it shows; the tools table counts tool errors and refused calls in
columns of their own; a few latency points read as a series; an estimate is said once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from airmeter import CallRecord, Layer
from airstore import FileStore, MemoryStore
from dashboard import figures, present
from dashboard.data import DashboardData
from dashboard.ranges import AUTO, fitting_range, resolve_range
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from tests.dashboard.seed import write_records

NOW_MS = 1_790_000_000_000
MIN = 60_000


def _call(ts_ms: int, *, tool: str = "get_user", ok: bool = True, error: str | None = None,
          latency: float = 3.0) -> dict[str, object]:  # fmt: skip
    return CallRecord(ts_ms=ts_ms, server="demo", tool=tool, layer=Layer.L2, latency_ms=latency,
                      ok=ok, error_type=error, error_message=None if ok else "no",
                      request_id=f"r{ts_ms}").to_log()  # fmt: skip


@pytest.mark.parametrize(
    ("age_min", "key"),
    [(None, "24h"), (3, "15m"), (14, "15m"), (40, "1h"), (200, "6h"), (1000, "24h"), (5000, "24h")],
)
def test_the_fitting_range_is_the_smallest_that_holds_the_data_or_24_hours(
    age_min: int | None, key: str
) -> None:
    oldest = None if age_min is None else NOW_MS - age_min * MIN
    assert fitting_range(oldest, now_ms=NOW_MS) == key


@pytest.mark.parametrize(("ages_min", "key"), [((2, 1), "15m"), ((50, 2), "1h"), ((300,), "6h")])
async def test_the_data_module_finds_the_range_that_holds_the_calls(
    ages_min: tuple[int, ...], key: str
) -> None:
    store = MemoryStore()
    await write_records(store, [_call(NOW_MS - a * MIN) for a in ages_min])
    data = DashboardData(store, url="memory://", clock=lambda: NOW_MS / 1000)
    assert await data.fitting_range() == key
    empty = DashboardData(MemoryStore(), url="memory://", clock=lambda: NOW_MS / 1000)
    assert await empty.fitting_range() == "24h"


def test_the_page_says_which_range_it_shows() -> None:
    rng = resolve_range("6h", now_ms=NOW_MS)
    shown = present.range_shown(rng, fitted=True)
    assert shown.startswith("Showing the last 6 hours (")
    assert shown.endswith(" — the smallest range that holds the data")
    assert "the smallest" not in present.range_shown(rng)


async def test_tool_errors_and_refused_calls_are_two_labelled_columns() -> None:
    store = MemoryStore()
    calls = [_call(NOW_MS - 60_000 - i) for i in range(10)]
    calls += [_call(NOW_MS - 70_000 - i, ok=False, error="-32602") for i in range(9)]  # refused
    calls += [_call(NOW_MS - 80_000, ok=False, error="tool_error")]
    await write_records(store, sorted(calls, key=lambda c: int(str(c["_ts"]))))
    data = DashboardData(store, url="memory://", clock=lambda: NOW_MS / 1000)
    view = await data.view(data.resolve("15m"))
    (row,) = present.tool_rows(view)
    # 10 failed calls beside "5.00 %" read as a bug: one failure is the tool's, nine refused
    assert row["tool_errors"] == 1
    assert row["refused"] == 9
    assert row["error_pct"] == 5.0
    assert "errors" not in row


async def test_a_few_latency_points_are_joined_into_a_series() -> None:
    store = MemoryStore()
    # three calls, minutes apart, in a 1 h range of 1-minute buckets (most of them empty)
    await write_records(store, [_call(NOW_MS - m * MIN, latency=5.0 * m) for m in (50, 30, 5)])
    data = DashboardData(store, url="memory://", clock=lambda: NOW_MS / 1000)
    view = await data.view(data.resolve("1h"))
    fig = figures.latency_figure(view)
    for trace in fig.data:
        assert trace.mode == "lines+markers"
        # the three points only (percentiles come from rollup sketches: near, not exact), no
        # empty bucket between them: one line, not three isolated dots
        assert list(trace.y) == pytest.approx([250.0, 150.0, 25.0], rel=0.02)


def test_an_estimate_of_context_tokens_is_said_once() -> None:
    assert present.counted_how(exact=False, tokenizer="estimate") == (
        "an estimate (about 4 bytes a token)"
    )
    assert present.counted_how(exact=False, tokenizer="estimate, o200k_base") == (
        "partly an estimate (also o200k_base)"
    )
    assert present.counted_how(exact=True, tokenizer="o200k_base") == "counted with o200k_base"


@pytest.mark.browser
def test_the_page_opens_on_the_range_that_holds_the_data_and_says_so(
    browser: WebDriver, tmp_path: Path
) -> None:
    now = int(time.time() * 1000)
    # calls of the last 3 hours only: a 15-minute view would show a sliver of them
    calls = [_call(now - m * MIN - 30_000) for m in range(1, 180, 7)]

    async def seed() -> None:
        async with FileStore(tmp_path / "data") as store:
            await write_records(store, calls)

    asyncio.run(seed())
    url = f"file://{tmp_path}/data"
    reader = SyncReader.open(url)
    with DashboardServer(reader, store_url=url, port=0, initial_range=AUTO) as server:
        browser.get(server.url)
        WebDriverWait(browser, 30).until(
            lambda d: "Showing" in d.find_element(By.ID, "range-shown").text
        )
        shown = browser.find_element(By.ID, "range-shown").text
        assert shown.startswith("Showing the last 6 hours")
        assert shown.endswith("the smallest range that holds the data")
        checked = browser.find_element(By.CSS_SELECTOR, "#range input:checked")
        assert checked.get_attribute("value") == "6h"
        WebDriverWait(browser, 30).until(
            lambda d: d.find_element(By.ID, "kpi-calls").text == f"{len(calls):,}"
        )
