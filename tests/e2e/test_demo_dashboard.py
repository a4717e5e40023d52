"""The demo's back-dated history in a real headless Chromium: the dashboard over the store that
``air demo`` writes has calls in every range (15 minutes, 24 hours, 7 days), and the page is
captured as a screenshot."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from aircli._demo_history import write_history
from airmeter import snapshot
from airstore import create_storage
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from tests.dashboard.conftest import CHROME_FLAGS, CHROMEDRIVER, CHROMIUM

pytestmark = pytest.mark.browser

RANGES = (("15 min", 15), ("24 hours", 1440), ("7 days", 7 * 1440))


@pytest.fixture
def chromium() -> Iterator[WebDriver]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _calls_shown(driver: WebDriver, previous: int) -> int:
    """The calls headline once it has changed from ``previous`` to a number."""
    text = ""

    def changed(d: WebDriver) -> bool:
        nonlocal text
        text = d.find_element(By.ID, "kpi-calls").text.replace(",", "")
        return text.isdigit() and int(text) != previous

    WebDriverWait(driver, 60).until(changed)
    return int(text)


def test_the_demo_history_gives_every_range_calls_in_a_real_browser(
    chromium: WebDriver, tmp_path: Path
) -> None:
    url = f"file://{tmp_path / 'data'}"

    async def history() -> int:
        await write_history(url, days=7, calls=6_000, seed=4)
        store = await create_storage(url, read_only=True)
        try:
            return (await snapshot(store)).total_calls
        finally:
            await store.close()

    assert asyncio.run(history()) == 6_000
    server = DashboardServer(SyncReader.open(url), store_url=url, port=0, refresh_ms=600_000)
    with server:
        chromium.get(server.url)
        shown = [_calls_shown(chromium, -1)]  # the page opens on the last hour
        for label, minutes in RANGES:
            choice = f"//*[@id='range']//label[contains(., '{label}')]"
            WebDriverWait(chromium, 60).until(lambda d, c=choice: d.find_elements(By.XPATH, c))
            chromium.find_element(By.XPATH, choice).click()
            shown.append(_calls_shown(chromium, shown[-1]))
            shot = tmp_path / f"demo-{minutes}m.png"
            assert chromium.save_screenshot(str(shot))
            assert shot.stat().st_size > 20_000  # a page with charts, not a blank one
    # calls in every range, more in each longer one, the whole week in the last
    assert 0 < shown[1] < shown[2] < shown[3] <= 6_000
    assert shown[2] > 6_000 / 7 * 2  # the last day holds a third, not a seventh
    assert shown[3] > 6_000 * 0.98
