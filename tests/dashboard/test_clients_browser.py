"""The dashboard's top clients panel and client filter, in a real headless Chromium over a real
FileStore holding OAuth callers' records (client ids and pseudonymous subjects)."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from airstore import FileStore
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from tests.dashboard.seed import make_records, write_records

pytestmark = pytest.mark.browser

WAIT_S = 30
# client -> (share of the calls, subjects)
CLIENTS = {"reports-app": (0.5, 3), "ci-bot": (0.3, 1), "notebook": (0.15, 2)}


def _records(now_ms: int) -> list[dict[str, Any]]:
    """Calls of the last 50 minutes (all inside the page's 1-hour range), most of them from
    OAuth clients, some without one."""
    records = make_records(now_ms=now_ms - 60_000, count=1200, span_ms=50 * 60_000, seed=5)
    rnd = random.Random(5)
    for rec in records:
        pick = rnd.random()
        for client, (share, subjects) in CLIENTS.items():
            if pick < share:
                rec.update(auth="oauth", client_id=client,
                           subject=f"p:{client}-{rnd.randrange(subjects)}")  # fmt: skip
                break
            pick -= share
    return records


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[DashboardServer, list[dict[str, Any]]]]:
    records = _records(int(time.time() * 1000))

    async def seed() -> None:
        async with FileStore(tmp_path / "data") as store:
            await write_records(store, records)

    asyncio.run(seed())
    url = f"file://{tmp_path}/data"
    with DashboardServer(SyncReader.open(url), store_url=url, port=0, refresh_ms=1000) as server:
        yield server, records


def _cells(driver: WebDriver, column: str) -> list[str]:
    found = driver.find_elements(By.CSS_SELECTOR, f"#clients-table td[data-dash-column='{column}']")
    return [c.text for c in found]


def test_top_clients_panel_and_the_client_filter(
    browser: WebDriver, served: tuple[DashboardServer, list[dict[str, Any]]]
) -> None:
    server, records = served
    calls = Counter(r.get("client_id", "(none)") for r in records)
    errors = Counter(r.get("client_id", "(none)") for r in records if not r["ok"])
    browser.get(server.url)
    WebDriverWait(browser, WAIT_S).until(lambda d: len(_cells(d, "client")) == 4)
    clients = _cells(browser, "client")
    assert clients == [name for name, _ in calls.most_common()]  # busiest first
    shown = dict(zip(clients, _cells(browser, "calls"), strict=True))
    assert shown == {name: f"{n:,}" for name, n in calls.items()}
    assert dict(zip(clients, _cells(browser, "errors"), strict=True)) == {
        name: f"{errors[name]:,}" for name in calls
    }
    users = dict(zip(clients, _cells(browser, "subjects"), strict=True))
    assert users == {"reports-app": "3", "ci-bot": "1", "notebook": "2", "(none)": "0"}

    # the client filter narrows the whole page to that client's calls
    browser.find_element(By.ID, "filter-client").click()
    option = "label.dash-dropdown-option:has(input[value='ci-bot'])"
    WebDriverWait(browser, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, option))
    browser.find_element(By.CSS_SELECTOR, option).click()
    WebDriverWait(browser, WAIT_S).until(
        lambda d: d.find_element(By.ID, "kpi-calls").text == f"{calls['ci-bot']:,}"
    )
    WebDriverWait(browser, WAIT_S).until(lambda d: _cells(d, "client") == ["ci-bot"])
    tools = Counter(r["tool"] for r in records if r.get("client_id") == "ci-bot")
    cells = browser.find_elements(By.CSS_SELECTOR, "#tools-table td[data-dash-column='tool']")
    assert {c.text for c in cells} == set(tools)
    error_rows = browser.find_elements(
        By.CSS_SELECTOR, "#errors-table td[data-dash-column='request_id']"
    )
    ci_ids = {r["request_id"] for r in records if r.get("client_id") == "ci-bot"}
    assert error_rows
    assert {c.text for c in error_rows} <= ci_ids
