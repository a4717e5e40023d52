"""What the meter knows beyond the calls, on the dashboard: SLOs (as ``air meter slo`` reads
them), error classes, context cost and a badge when a meter lost records — from a store filled
through a real metered aircore server and a second meter process, read in the background."""

from __future__ import annotations

import asyncio
import math
import shutil
import time
from pathlib import Path

import pytest
from dash import no_update
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from aircore import define_server
from airmeter import MeterHealth, Objective, SloStatus, evaluate_slos
from airmeter.slo import SloState
from airmeter.slo_config import load_objectives
from airmeter.tokens import EstimateCounter, definition_text
from airstore import FileStore, MemoryStore
from dashboard.data import DashboardData
from dashboard.meter_panels import panel_values, panels_stamp, sparkline_svg
from dashboard.meter_watch import (
    MAX_BADGES,
    MAX_SLO_ROWS,
    SPARK_POINTS,
    SPARK_STEP_MS,
    MeterWatch,
    health_alerts,
    slo_rows,
)
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from dashboard.types import DashboardView, TimeRange
from tests.air_process import serving
from tests.dashboard.meter_seed import EXPECTED_CLASSES, FLAKY_CALLS, SERVER, fill, shop_tools

WAIT_S = 120.0  # an upper bound on a loaded machine, not a timing
POLL_S = 0.05  # how often a wait looks again (selenium's default, 0.5 s, idles after the change)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return fill(tmp_path_factory.mktemp("shop"))


async def _settled_view(data: DashboardData, key: str = "1h") -> DashboardView:
    """A view after the background evaluation its first view started has finished."""
    first = await data.view(data.resolve(key))
    assert first.slo is not None
    await asyncio.wait_for(data.meter.updated.wait(), WAIT_S)
    return await data.view(data.resolve(key))


async def test_the_view_splits_failures_by_error_class_and_tags_each_recent_error(
    shop: tuple[Path, Path],
) -> None:
    data = await DashboardData.open(f"file://{shop[0]}", slo_config=str(shop[1]))
    try:
        view = await _settled_view(data)
    finally:
        await data.close()
    assert dict(view.errors_by_class) == EXPECTED_CLASSES
    assert [c for c, _ in view.errors_by_class] == ["tool_error", "exception", "timeout", "refused"]
    by_tool = {(e.tool, e.error_class) for e in view.recent_errors}
    assert by_tool == {("flaky", "tool_error"), ("flaky", "refused"), ("boom", "exception"),
                       ("slow", "timeout")}  # fmt: skip
    calls, own = view.snapshot.total_calls, FLAKY_CALLS // 2 + 2 + 1
    assert panel_values(view)["errors_note"] == (
        f"tool errors {own / calls * 100:.2f}% · other {3 / calls * 100:.2f}%"
    )
    chips = [c.className for c in panel_values(view)["error_classes"]]
    assert chips == ["class-chip class-tool_error", "class-chip class-exception",
                     "class-chip class-timeout", "class-chip class-refused apart"]  # fmt: skip


async def test_the_slo_panel_shows_what_air_meter_slo_computes_worst_first(
    shop: tuple[Path, Path],
) -> None:
    data_dir, slo_file = shop
    data = await DashboardData.open(f"file://{data_dir}", slo_config=str(slo_file))
    try:
        view = await _settled_view(data)
        want = await evaluate_slos(data._store, load_objectives(slo_file))
    finally:
        await data.close()
    panel = view.slo
    assert panel is not None
    assert panel.status == "ready"
    assert len(panel.rows) == len(want) == 2
    flaky, ping = panel.rows
    assert (flaky.tool, flaky.state, flaky.objective) == ("flaky", "breach", "availability 99%")
    # 20 of the 40 valid calls failed (the 3 refused ones do not count): half the calls bad
    assert (flaky.valid_calls, flaky.bad_calls) == (FLAKY_CALLS, FLAKY_CALLS // 2)
    assert math.isclose(flaky.budget_remaining, 1 - 0.5 / 0.01)
    assert math.isclose(flaky.burn_rates[0], 0.5 / 0.01)
    assert (ping.tool, ping.state, ping.objective) == ("ok_ping", "ok", "p95 ≤ 5000 ms")
    assert ping.budget_remaining == 1.0
    by_key = {(s.server, s.tool): s for s in want}
    for row in panel.rows:
        s = by_key[(row.server, row.tool)]
        assert (row.state, row.budget_remaining, row.valid_calls) == (
            s.state, s.budget_remaining, s.valid_calls)  # fmt: skip
        assert row.burn_rates == (s.burn_rate_5m, s.burn_rate_30m, s.burn_rate_1h, s.burn_rate_6h)
    # the sparkline: back-filled 1 h burn rates over the last 6 h, the current one last
    assert len(flaky.history) == len(flaky.history_ms) == SPARK_POINTS
    assert flaky.history[-1] == flaky.burn_rates[2]
    assert list(flaky.history_ms) == sorted(flaky.history_ms)
    assert flaky.history[0] == 0.0  # 6 h ago nothing had been called
    # a refresh sends the SLO and context panels only when they changed since the page got them
    unchanged = panel_values(view, panels_stamp(view))
    assert unchanged["slo"] is no_update
    assert unchanged["context"] is no_update
    assert len(panel_values(view, "an older stamp")["slo"]) == 2
    assert [a.kind for a in view.alerts].count("slo") == 1
    (slo_badge,) = [a for a in view.alerts if a.kind == "slo"]
    assert slo_badge.text == "SLO breach: shop/flaky availability 99%"


async def test_a_meter_that_dropped_records_in_another_process_gets_a_badge(
    shop: tuple[Path, Path],
) -> None:
    data = await DashboardData.open(f"file://{shop[0]}", slo_config=str(shop[1]))
    try:
        view = await _settled_view(data)
    finally:
        await data.close()
    drops = [a.text for a in view.alerts if a.kind == "drops"]
    assert len(drops) == 1
    assert drops[0].startswith("meter shop (shop-2): 15 records dropped, ")
    assert "sink timeouts" in drops[0]


async def test_context_cost_gives_definition_tokens_per_tool_and_result_percentiles(
    shop: tuple[Path, Path],
) -> None:
    data = await DashboardData.open(f"file://{shop[0]}", slo_config=str(shop[1]))
    try:
        view = await _settled_view(data, "24h")
    finally:
        await data.close()
    panel = view.context
    assert panel is not None
    assert panel.range_key == "24h"
    assert (panel.tokenizer, panel.exact) == ("estimate", False)
    described = define_server(name=SERVER, tools=shop_tools()).tools
    counter = EstimateCounter()
    want = {name: counter.count(definition_text(t.describe())) for name, t in described.items()}
    got = {r.tool: r.definition_tokens for r in panel.rows}
    assert got == want
    assert panel.definition_tokens_total == sum(want.values())
    assert [r.definition_tokens for r in panel.rows] == sorted(want.values(), reverse=True)
    (ping,) = [r for r in panel.rows if r.tool == "ok_ping"]
    assert (ping.results_counted, ping.result_tokens_total) == (5, 5 * counter.count("pong"))
    assert ping.result_tokens_p50 == pytest.approx(counter.count("pong"), rel=0.02)
    note = panel_values(view)["context_note"]
    assert note.startswith(f"{sum(want.values()):,} tokens of tool definitions in tools/list")
    assert "an estimate (about 4 bytes a token)" in note
    assert "(estimate)" not in note  # said once


async def test_objectives_given_in_code_need_no_file(shop: tuple[Path, Path]) -> None:
    objectives = [Objective(tool="flaky", availability=0.98)]
    data = await DashboardData.open(
        f"file://{shop[0]}", slo_config=str(shop[1]), objectives=objectives
    )
    try:
        view = await _settled_view(data)
    finally:
        await data.close()
    assert view.slo is not None
    (row,) = view.slo.rows  # the file's two objectives are not read
    assert (row.tool, row.objective, row.state) == ("flaky", "availability 98%", "breach")
    note = panel_values(view)["slo_note"]
    assert note == "objectives given to the dashboard, evaluated as `air meter slo` does"
    assert MeterWatch(MemoryStore(), objectives=[]).slo.status == "missing"


async def test_without_an_objectives_file_the_panel_says_how_to_add_one(tmp_path: Path) -> None:
    store = MemoryStore()
    missing = tmp_path / "nowhere" / "slo.yml"
    watch = MeterWatch(store, slo_config=missing)
    assert watch.slo.status == "missing"
    assert str(missing) in watch.slo.message
    assert "objectives:" in watch.slo.message
    bad = tmp_path / "bad.yml"
    bad.write_text("objectives: [{tool: x, availability: 2}]", encoding="utf-8")
    invalid = MeterWatch(store, slo_config=bad).slo
    assert invalid.status == "invalid"
    assert "availability must be between 0 and 1" in invalid.message


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=200) | st.sampled_from(
    ["objectives: 3", "objectives: [1, 2]", "objectives: [{tool: 5, availability: 0.9}]",
     "objectives: [{period: -1d, availability: 0.9}]", "- [", "objectives: [{latency_p95_ms: x}]",
     "objectives: [{availability: .nan}]", "{objectives: [{tool: '*', availability: 0.9}], x: 1}"]
))  # fmt: skip
def test_any_objectives_file_gives_a_panel_never_a_crash(tmp_path: Path, text: str) -> None:
    path = tmp_path / "slo.yml"
    path.write_text(text, encoding="utf-8")
    panel = MeterWatch(MemoryStore(), slo_config=path).slo
    assert panel.status in ("missing", "invalid", "pending")
    assert panel.status == "pending" or panel.message


def _status(i: int, state: SloState) -> SloStatus:
    return SloStatus(
        tool=f"t{i:03d}", server="s", kind="availability", target=0.99, threshold_ms=None,
        period="30d", budget_remaining=1.0 - i / 100, burn_rate_5m=0.0, burn_rate_30m=0.0,
        burn_rate_1h=float(i), burn_rate_6h=0.0, state=state, valid_calls=100, bad_calls=i,
    )  # fmt: skip


def test_the_panels_stay_bounded_however_many_tools_and_meters() -> None:
    statuses = [_status(i, "ok") for i in range(300)] + [_status(999, "warning")]
    rows, more = slo_rows(statuses, {}, 1_800_000_000_000)
    assert len(rows) == MAX_SLO_ROWS
    assert more == 301 - MAX_SLO_ROWS
    assert rows[0].state == "warning"  # worst first
    assert rows[1].budget_remaining <= rows[2].budget_remaining
    healths = [
        MeterHealth(
            instance_id=f"i-{i}",
            server="s",
            recorded=10,
            delivered=5,
            dropped=5,
            pending=0,
            sink_errors=0,
            sink_timeouts=0,
            updated_ms=i,
        )
        for i in range(10)
    ]
    badges = health_alerts(healths)
    assert len(badges) == MAX_BADGES
    assert badges[-1].text == f"{10 - MAX_BADGES + 1} more meters lost records or had sink failures"
    assert health_alerts([]) == ()
    assert len(sparkline_svg(tuple(float(i) for i in range(SPARK_POINTS)), colour="#000")) < 2000


_READ_PAGE = """
const q = (sel) => Array.from(document.querySelectorAll(sel));
const text = (sel) => (document.querySelector(sel) || {innerText: ""}).innerText;
return {
  rows: q("#slo-body .slo-row").map((r) => {
    const img = r.querySelector("img.slo-spark");
    return {text: r.innerText, state: r.querySelector(".slo-state").innerText,
            fill: r.querySelector(".slo-fill").style.width,
            spark: [img.naturalWidth, img.offsetWidth > 0]};
  }),
  drops: text("#alerts .alert-drops"),
  slo_badge: text("#alerts .alert-slo"),
  chips: q("#error-classes .class-chip").map((c) => [c.innerText, c.classList.contains("apart")]),
  cells: q("#context-table td").map((c) => c.innerText),
  context_note: text("#context-note"),
  errors_note: text("#kpi-errors-note"),
};
"""


def _serve(data: Path, slo: Path) -> DashboardServer:
    url = f"file://{data}"
    reader = SyncReader.open(url, slo_config=str(slo))
    return DashboardServer(reader, store_url=url, port=0, refresh_ms=500)


@pytest.mark.browser
def test_the_page_shows_slo_rows_error_classes_context_cost_and_a_drops_badge(
    browser: WebDriver, shop: tuple[Path, Path], tmp_path: Path
) -> None:
    with _serve(*shop) as srv:
        browser.get(srv.url)
        wait = WebDriverWait(browser, WAIT_S, poll_frequency=POLL_S)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#slo-body .slo-row.slo-breach"))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#context-table td"))
        page = browser.execute_script(_READ_PAGE)  # one read: the page refreshes meanwhile
        breach, ok = page["rows"]
        assert "shop/flaky" in breach["text"]
        assert "overspent" in breach["text"]
        assert breach["state"] == "BREACH"
        assert breach["spark"] == [120, True]  # the sparkline image loaded and shows
        assert "shop/ok_ping" in ok["text"]
        assert ok["state"] == "OK"
        assert ok["fill"] == "100%"
        assert page["drops"].startswith("meter shop (shop-2): 15 records dropped")
        assert page["slo_badge"] == "SLO breach: shop/flaky availability 99%"
        assert page["chips"] == [
            ["20 tool error (isError)", False],
            ["2 exception", False],
            ["1 timeout", False],
            ["3 refused arguments", True],
        ]
        assert {"shop/flaky", "shop/boom", "shop/slow", "shop/ok_ping"} <= set(page["cells"])
        assert "tokens of tool definitions in tools/list" in page["context_note"]
        assert page["errors_note"].startswith("tool errors ")
        browser.save_screenshot(str(tmp_path / "meter-panels.png"))


@pytest.mark.browser
def test_without_objectives_the_page_says_how_to_add_them_instead_of_an_empty_chart(
    browser: WebDriver, shop: tuple[Path, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "slo.yml"
    with _serve(shop[0], missing) as srv:
        browser.get(srv.url)
        WebDriverWait(browser, WAIT_S, poll_frequency=POLL_S).until(
            lambda d: "no objectives file at" in d.find_element(By.ID, "slo-note").text
        )
        note = browser.find_element(By.ID, "slo-note").text
        assert str(missing) in note
        assert "availability: 0.995" in note
        panel = browser.find_element(By.ID, "slo-panel")
        assert panel.find_elements(By.CSS_SELECTOR, ".slo-row, .js-plotly-plot, img") == []


@pytest.mark.browser
def test_air_dashboard_reads_objectives_where_air_meter_slo_does_or_from_slo_config(
    browser: WebDriver, shop: tuple[Path, Path], tmp_path: Path
) -> None:
    data, slo = shop
    (tmp_path / ".air").mkdir()
    shutil.copy(slo, tmp_path / ".air" / "slo.yml")  # the default: .air/slo.yml, as air meter slo
    store = f"file://{data}"
    with serving("dashboard", "--store", store, "--port", "0", cwd=tmp_path) as url:
        browser.get(url)
        WebDriverWait(browser, WAIT_S, poll_frequency=POLL_S).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#slo-body .slo-row.slo-breach")
        )
    elsewhere = tmp_path / "objectives" / "team.yml"
    with serving("dashboard", "--store", store, "--port", "0", "--slo-config", str(elsewhere),
                 cwd=tmp_path) as url:  # fmt: skip
        browser.get(url)
        WebDriverWait(browser, WAIT_S, poll_frequency=POLL_S).until(
            lambda d: f"no objectives file at {elsewhere}" in d.find_element(By.ID, "slo-note").text
        )


async def test_the_sparkline_samples_every_step_and_keeps_a_bounded_window(
    shop: tuple[Path, Path],
) -> None:
    data_dir, slo_file = shop
    now = [time.time()]
    async with FileStore(data_dir, read_only=True) as store:
        watch = MeterWatch(store, slo_config=slo_file, clock=lambda: now[0])
        rng = TimeRange(key="1h", since_ms=0, until_ms=2**62, bucket_ms=60_000)
        seen = []
        for minutes in (0, 5, 16, 40, 60 * 7):
            now[0] += minutes * 60
            await watch.evaluate_now(rng)
            (flaky,) = [r for r in watch.slo.rows if r.tool == "flaky"]
            assert flaky.history_ms[-1] == int(now[0] * 1000)  # the current rate is last
            assert len(set(flaky.history_ms)) == len(flaky.history_ms)  # one point per instant
            assert len(flaky.history) <= SPARK_POINTS
            seen.append(flaky)
    assert [len(r.history) for r in seen] == [SPARK_POINTS] * 5
    steps = [b - a for a, b in zip(seen[-1].history_ms, seen[-1].history_ms[1:], strict=False)]
    assert min(steps[:-1]) >= SPARK_STEP_MS  # stored samples are a step apart at least
    assert seen[-1].history[-1] == 0.0  # 7 h later the failures are out of the 1 h window
