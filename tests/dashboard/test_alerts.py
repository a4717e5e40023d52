"""The header's badges: a log near its retention cap (measured in the background, on a real
FileStore read-only beside its writer), shown by the page in headless Chromium."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from airmeter import CALLS_NAMESPACE
from airstore import FileStore, NamespaceStats
from dashboard.data import DashboardData
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from dashboard.usage import NEAR_CAP, disk_alerts
from tests.dashboard.seed import make_records, write_records

CAP = 64 * 1024
WAIT_S = 30.0


async def _near_cap(path: Path) -> None:
    """Write call records until the call log holds 80-100 % of a CAP-byte retention cap."""
    now_ms = int(time.time() * 1000)
    async with FileStore(path) as store:
        await store.set_log_retention(CALLS_NAMESPACE, max_bytes=CAP)
        seed = 0
        while True:
            seed += 1
            batch = make_records(now_ms=now_ms, count=20, span_ms=60_000, seed=seed)
            await write_records(store, batch)
            await store.flush()
            (calls,) = [s for s in await store.stats() if s.namespace == CALLS_NAMESPACE]
            if calls.log_bytes >= NEAR_CAP * CAP:
                assert calls.max_bytes == CAP
                return


def test_disk_alerts_warn_from_near_the_cap_on_bytes_and_on_age() -> None:
    def ns(**kw: Any) -> NamespaceStats:
        return NamespaceStats(namespace="meter.calls", **kw)

    assert disk_alerts((ns(log_bytes=700, max_bytes=1000),)) == ()
    (full,) = disk_alerts((ns(log_bytes=800, max_bytes=1000),))
    assert full.kind == "disk"
    assert full.text == "meter.calls: log at 80% of its 1000 B cap (older entries go)"
    (old,) = disk_alerts((ns(oldest_log_age=6.5 * 86_400, max_age=7 * 86_400),))
    assert old.text == "meter.calls: oldest entries 6.5 days old, kept 7.0 days (older ones go)"
    assert disk_alerts((ns(log_bytes=10**12),)) == ()  # no cap: nothing to warn about


async def test_a_log_near_its_cap_gets_a_badge_measured_in_the_background(
    tmp_path: Path,
) -> None:
    await _near_cap(tmp_path / "data")
    data = await DashboardData.open(f"file://{tmp_path / 'data'}")
    try:
        first = await data.view(data.resolve("1h"))
        assert first.snapshot.total_calls > 0  # the page did not wait for the measurement
        await asyncio.wait_for(data.usage.measured.wait(), WAIT_S)
        view = await data.view(data.resolve("1h"))
    finally:
        await data.close()
    assert [a.kind for a in view.alerts] == ["disk"]
    assert view.alerts[0].text.startswith("meter.calls: ")
    assert view.alerts[0].text.endswith("of its 64.0 KiB cap (older entries go)")


def _shown_badge_text(driver: WebDriver) -> str | None:
    for badge in driver.find_elements(By.CSS_SELECTOR, "#alerts .alert-disk"):
        if badge.is_displayed():
            text: str = badge.text
            return text
    return None


@pytest.mark.browser
def test_the_page_shows_the_badge(browser: WebDriver, tmp_path: Path) -> None:
    asyncio.run(_near_cap(tmp_path / "data"))
    url = f"file://{tmp_path / 'data'}"
    with DashboardServer(SyncReader.open(url), store_url=url, port=0, refresh_ms=500) as srv:
        browser.get(srv.url)
        # the page re-renders the badges every refresh (500 ms here): read one inside the wait,
        # where an element replaced between finding and reading it is simply looked up again
        text = WebDriverWait(
            browser, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)
        ).until(_shown_badge_text)
        assert text is not None
        assert text.startswith("meter.calls: ")
