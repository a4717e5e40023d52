"""The dashboard in a real headless Chromium over a real FileStore, read-only beside a writer."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from airstore import FileStore
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from tests.dashboard.seed import make_records, write_records

pytestmark = pytest.mark.browser

MIN_MS = 60_000
RANGE_MS = {"15m": 15 * MIN_MS, "1h": 60 * MIN_MS, "24h": 1440 * MIN_MS}
WAIT_S = 30
POLL_S = 0.05  # how often a wait looks again (selenium's default, 0.5 s, idles after the change)


def _safe_records(now_ms: int) -> list[dict[str, Any]]:
    """Records that stay in the same ranges while the test runs (none near a range edge)."""
    records = make_records(now_ms=now_ms - MIN_MS, count=3000, span_ms=2 * 1440 * MIN_MS, seed=11)
    edges = RANGE_MS.values()
    return [r for r in records if all(abs((now_ms - r["_ts"]) - e) > 5 * MIN_MS for e in edges)]


def _count(records: list[dict[str, Any]], key: str, **flt: Any) -> list[dict[str, Any]]:
    now = time.time() * 1000
    return [
        r
        for r in records
        if now - RANGE_MS[key] <= r["_ts"] and all(r[k] == v for k, v in flt.items())
    ]


def _text(driver: WebDriver, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def _wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, WAIT_S, poll_frequency=POLL_S)


def _wait_text(driver: WebDriver, element_id: str, want: str) -> None:
    _wait(driver).until(lambda d: _text(d, element_id) == want)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[DashboardServer, list[dict[str, Any]]]]:
    """One seeded store and its dashboard for the tests that only read it (each loads the page
    afresh: the page keeps no state of its own across loads)."""
    import asyncio

    records = _safe_records(int(time.time() * 1000))
    data = tmp_path_factory.mktemp("served") / "data"

    async def seed() -> None:
        async with FileStore(data) as store:
            await write_records(store, records)

    asyncio.run(seed())
    url = f"file://{data}"
    server = DashboardServer(SyncReader.open(url), store_url=url, port=0, refresh_ms=1000)
    with server:
        yield server, records


def test_page_shows_headline_switches_range_filters_and_opens_a_tool(
    browser: WebDriver, served: tuple[DashboardServer, list[dict[str, Any]]], tmp_path: Path
) -> None:
    server, records = served
    browser.get(server.url)
    hour = _count(records, "1h")
    _wait_text(browser, "kpi-calls", f"{len(hour):,}")
    errors = sum(not r["ok"] for r in hour)
    assert _text(browser, "kpi-errors") == f"{errors / len(hour) * 100:.2f}%"
    assert _text(browser, "kpi-rate") == f"{len(hour) / 60:,.1f}"
    assert "All tools" in _text(browser, "filter-tool")
    by_type = Counter(r["error_type"] for r in hour if not r["ok"])
    summary = _text(browser, "error-summary")
    assert summary.startswith(f"{errors:,} failed calls in this range: ")
    named = {
        "-32602": "invalid params (-32602)",
        "cancelled": "cancelled",
        "budget_exceeded": "budget exceeded",
    }
    assert "cancelled" in by_type
    for error_type, n in by_type.items():
        assert f"{named.get(error_type, error_type)} {n:,}" in summary
    last_error = max((r for r in hour if not r["ok"]), key=lambda r: r["_ts"])
    first = browser.find_element(By.CSS_SELECTOR, "#errors-table td[data-dash-column='error_type']")
    assert first.text == named.get(last_error["error_type"], last_error["error_type"])

    _check_sorting(browser)

    browser.find_element(By.XPATH, "//*[@id='range']//label[contains(., '24 hours')]").click()
    day = _count(records, "24h")
    _wait_text(browser, "kpi-calls", f"{len(day):,}")

    browser.find_element(By.ID, "filter-tool").click()
    option = "label.dash-dropdown-option:has(input[value='fetch_url'])"
    _wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, option))
    browser.find_element(By.CSS_SELECTOR, option).click()
    fetch = _count(records, "24h", tool="fetch_url")
    _wait_text(browser, "kpi-calls", f"{len(fetch):,}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#tools-table td[data-dash-column='tool']")
    assert [r.text for r in rows] == ["fetch_url"]

    rows[0].click()
    _wait(browser).until(
        lambda d: (
            d.find_element(By.ID, "detail").is_displayed()
            and "fetch_url" in _text(d, "detail-title")
        )
    )
    latest = browser.find_elements(
        By.CSS_SELECTOR, "#calls-table td[data-dash-column='request_id']"
    )
    newest = sorted(fetch, key=lambda r: -r["_ts"])
    assert [c.text for c in latest] == [r["request_id"] for r in newest[: len(latest)]]
    assert len(latest) == min(10, len(newest))
    bars = browser.find_elements(By.CSS_SELECTOR, "#graph-histogram .bars path")
    assert bars, "the histogram has bars"
    shot = tmp_path / "dashboard.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000

    _close_detail(browser)
    # The same row opens the detail again; an error row opens its tool's detail too.
    browser.find_element(By.CSS_SELECTOR, "#tools-table td[data-dash-column='tool']").click()
    _wait_detail(browser, "fetch_url")
    _close_detail(browser)
    browser.find_element(By.CSS_SELECTOR, "#errors-table td[data-dash-column='message']").click()
    _wait_detail(browser, "fetch_url")

    # A custom range: from a minute boundary three hours ago until now.
    start = datetime.fromtimestamp(time.time() - 3 * 3600).replace(second=0, microsecond=0)
    browser.find_element(By.XPATH, "//*[@id='range']//label[contains(., 'custom')]").click()
    field = browser.find_element(By.ID, "custom-start")
    _wait(browser).until(lambda d: field.is_displayed())
    field.send_keys(start.strftime("%Y-%m-%d %H:%M") + Keys.ENTER)
    start_ms = int(start.timestamp() * 1000)
    custom = [r for r in records if r["_ts"] >= start_ms and r["tool"] == "fetch_url"]
    _wait_text(browser, "kpi-calls", f"{len(custom):,}")


def _column(driver: WebDriver, column: str) -> list[str]:
    cells = driver.find_elements(By.CSS_SELECTOR, f"#tools-table td[data-dash-column='{column}']")
    return [c.text for c in cells]


def _check_sorting(driver: WebDriver) -> None:
    """The tool table opens sorted by calls (most first) and re-sorts numerically on a click."""
    calls = [int(v.replace(",", "")) for v in _column(driver, "calls")]
    assert len(calls) > 2
    assert calls == sorted(calls, reverse=True)
    tools = set(_column(driver, "tool"))
    driver.find_element(
        By.CSS_SELECTOR, "#tools-table th[data-dash-column='p99'] .column-header--sort"
    ).click()

    def p99_sorted(d: WebDriver) -> bool:
        values = [float(v.replace(",", "")) for v in _column(d, "p99")]
        return values != [] and values in (sorted(values), sorted(values, reverse=True))

    _wait(driver).until(p99_sorted)
    assert set(_column(driver, "tool")) == tools
    assert [float(v) for v in _column(driver, "error_pct")]  # fixed two-decimal percentages
    assert all(v.count(".") == 1 and len(v.split(".")[1]) == 2 for v in _column(driver, "p50"))


def _pick(driver: WebDriver, dropdown: str, value: str) -> None:
    driver.find_element(By.ID, dropdown).click()
    option = f"label.dash-dropdown-option:has(input[value='{value}'])"
    _wait(driver).until(lambda d: d.find_elements(By.CSS_SELECTOR, option))
    driver.find_element(By.CSS_SELECTOR, option).click()


def test_layer_and_server_filters_narrow_the_page(
    browser: WebDriver, served: tuple[DashboardServer, list[dict[str, Any]]]
) -> None:
    server, records = served
    browser.get(server.url)
    _wait_text(browser, "kpi-calls", f"{len(_count(records, '1h')):,}")
    browser.find_element(By.XPATH, "//*[@id='range']//label[contains(., '24 hours')]").click()
    _wait_text(browser, "kpi-calls", f"{len(_count(records, '24h')):,}")
    _pick(browser, "filter-server", "billing")
    _wait_text(browser, "kpi-calls", f"{len(_count(records, '24h', server='billing')):,}")
    _pick(browser, "filter-layer", "L5")
    both = _count(records, "24h", server="billing", layer="L5")
    _wait_text(browser, "kpi-calls", f"{len(both):,}")
    assert set(_column(browser, "layer")) == {"L5"}
    assert set(_column(browser, "tool")) == {r["tool"] for r in both}
    layers = browser.find_elements(By.CSS_SELECTOR, "#errors-table td[data-dash-column='layer']")
    assert {c.text for c in layers} <= {"L5"}


def _wait_detail(driver: WebDriver, tool: str) -> None:
    _wait(driver).until(
        lambda d: (
            d.find_element(By.ID, "detail").is_displayed() and tool in _text(d, "detail-title")
        )
    )


def _close_detail(driver: WebDriver) -> None:
    driver.find_element(By.ID, "detail-close").click()
    _wait(driver).until(lambda d: not d.find_element(By.ID, "detail").is_displayed())


WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from airmeter import CallRecord, Layer, StoreSink
    from airstore import FileStore

    async def main(path):
        async with FileStore(path) as store:
            sink = StoreSink(store, writer="live", persist_interval=0)
            n = 0
            async def burst(count):
                nonlocal n
                for _ in range(count):
                    n += 1
                    rec = CallRecord(ts_ms=int(time.time() * 1000), server="live", tool="echo",
                                     layer=Layer.L1, latency_ms=1.5, ok=True, request_id=f"r{n}")
                    await sink.write([rec])
                await sink.persist()
                await store.flush()
                print(n, flush=True)
            await burst(7)
            loop = asyncio.get_running_loop()
            while line := await loop.run_in_executor(None, sys.stdin.readline):
                await burst(int(line))

    asyncio.run(main(sys.argv[1]))
    """
)


def test_live_refresh_shows_calls_a_writer_process_appends(
    browser: WebDriver, tmp_path: Path
) -> None:
    path = tmp_path / "data"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None
    try:
        assert writer.stdout.readline().strip() == "7"
        url = f"file://{path}"
        with DashboardServer(SyncReader.open(url), store_url=url, port=0, refresh_ms=500) as srv:
            browser.get(srv.url)
            _wait_text(browser, "kpi-calls", "7")
            writer.stdin.write("25\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "32"
            _wait_text(browser, "kpi-calls", "32")  # no reload: the live refresh picks it up
            browser.find_element(By.ID, "live-toggle").click()
            _wait(browser).until(lambda d: "Paused" in _text(d, "live-toggle"))
    finally:
        writer.stdin.close()
        assert writer.wait(timeout=WAIT_S) == 0
        writer.stdout.close()


def test_empty_store_shows_how_to_produce_data(browser: WebDriver, tmp_path: Path) -> None:
    import asyncio

    async def create() -> None:
        async with FileStore(tmp_path / "data") as store:
            await store.set("other", "k", 1)

    asyncio.run(create())
    url = f"file://{tmp_path}/data"
    with DashboardServer(SyncReader.open(url), store_url=url, port=0) as srv:
        browser.get(srv.url)
        _wait(browser).until(lambda d: d.find_element(By.ID, "empty-state").is_displayed())
        text = _text(browser, "empty-state")
        assert "No calls recorded yet" in text
        # Both ways to fill it name the store this dashboard reads, not some default.
        assert f"air demo --store {url}" in text
        assert f'meter=True, storage="{url}"' in text
        assert not browser.find_element(By.ID, "content").is_displayed()


def test_page_works_with_a_token_once_opened_with_it(browser: WebDriver, tmp_path: Path) -> None:
    import asyncio

    async def create() -> None:
        async with FileStore(tmp_path / "data") as store:
            await write_records(
                store, make_records(now_ms=int(time.time() * 1000), count=3, span_ms=MIN_MS)
            )

    asyncio.run(create())
    url = f"file://{tmp_path}/data"
    with DashboardServer(SyncReader.open(url), store_url=url, port=0, token="tok-3") as srv:
        browser.get(f"http://127.0.0.1:{srv.port}/")
        assert "401" in browser.find_element(By.TAG_NAME, "body").text
        browser.get(srv.url)  # ?token=… sets the cookie the page's own requests then carry
        _wait_text(browser, "kpi-calls", "3")


def test_a_store_that_stops_answering_shows_a_banner_not_a_traceback(
    browser: WebDriver, tmp_path: Path
) -> None:
    import asyncio

    async def create() -> None:
        async with FileStore(tmp_path / "data") as store:
            await write_records(
                store, make_records(now_ms=int(time.time() * 1000), count=5, span_ms=MIN_MS)
            )

    asyncio.run(create())
    url = f"file://{tmp_path}/data"
    reader = SyncReader.open(url)
    with DashboardServer(reader, store_url=url, port=0, refresh_ms=500) as srv:
        browser.get(srv.url)
        _wait_text(browser, "kpi-calls", "5")
        reader.run(reader.data._store.close())  # every later read fails (StoreClosedError)
        banner = browser.find_element(By.ID, "banner")
        _wait(browser).until(lambda d: banner.is_displayed())
        assert f"cannot read store {url}" in banner.text
        assert "Traceback" not in browser.find_element(By.TAG_NAME, "body").text
        assert not browser.find_element(By.ID, "content").is_displayed()
