"""Several metered server processes writing into one real Redis; the dashboard reads them all.

Three real child processes (two instances of server ``alpha`` told apart by ``AIR_INSTANCE_ID``,
one ``beta`` with its default ``host-pid`` id) meter into one ``redis-server``; the dashboard's
data module and the page in a real headless Chromium must show their sum and narrow to each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from airmeter import CALLS_NAMESPACE
from airstore import RedisStore
from dashboard.data import DashboardData, parse_server_choice
from dashboard.reader import SyncReader
from dashboard.server import DashboardServer
from dashboard.types import Filters
from tests.airmeter.test_redis_meter import CHILD
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.browser]

CHILD_TIMEOUT_S = 60.0  # a guard against hangs, never a speed assertion
WAIT_S = 30
POLL_S = 0.05  # how often a wait looks again (selenium's default, 0.5 s, idles after the change)


@dataclass(frozen=True)
class Run:
    """What one child process says it recorded."""

    server: str
    instance: str
    calls: int
    errors: int


def _run_child(url: str, name: str, n: int, instance_env: str | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop("AIR_INSTANCE_ID", None)
    if instance_env is not None:
        env["AIR_INSTANCE_ID"] = instance_env
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, name, str(n)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture(scope="module")
def metered() -> Iterator[tuple[str, list[Run]]]:
    """A redis-server holding the calls of three metered server processes run side by side."""
    plan = [("alpha", 120, "web-1"), ("alpha", 80, "web-2"), ("beta", 60, None)]
    with RedisServer() as redis:
        url = redis.url()
        procs = [(name, _run_child(url, name, n, env)) for name, n, env in plan]
        runs = []
        for name, proc in procs:
            out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
            assert proc.returncode == 0, err.decode()
            data = json.loads(out)
            runs.append(Run(name, data["instance"], data["calls"], data["errors"]))
        yield url, runs


def test_children_are_distinct_instances(metered: tuple[str, list[Run]]) -> None:
    _url, runs = metered
    assert [r.instance for r in runs[:2]] == ["web-1", "web-2"]
    assert runs[2].instance not in ("web-1", "web-2", "")
    assert all(r.errors > 0 for r in runs)


async def test_data_module_sums_every_instance_and_narrows_to_each(
    metered: tuple[str, list[Run]],
) -> None:
    url, runs = metered
    async with RedisStore(url, read_only=True) as store:
        assert len(await store.query(CALLS_NAMESPACE, limit=10_000)) == sum(r.calls for r in runs)
    data = await DashboardData.open(url)
    try:
        rng = data.resolve("1h")
        view = await data.view(rng)
        assert view.snapshot.total_calls == sum(r.calls for r in runs) == 520
        assert view.snapshot.error_count == sum(r.errors for r in runs)
        alpha1, alpha2, beta = runs
        assert [(c.label, c.server, c.instance) for c in view.server_choices] == [
            ("alpha (all 2 instances)", "alpha", None),
            ("alpha (web-1)", "alpha", "web-1"),
            ("alpha (web-2)", "alpha", "web-2"),
            ("beta", "beta", None),
        ]
        for choice in view.server_choices:
            server, instance = parse_server_choice(choice.value)
            assert (server, instance) == (choice.server, choice.instance)
            narrowed = await data.view(rng, Filters(server=server, instance=instance))
            mine = [r for r in runs if r.server == server and instance in (None, r.instance)]
            assert narrowed.snapshot.total_calls == sum(r.calls for r in mine)
            assert narrowed.snapshot.error_count == sum(r.errors for r in mine)
            assert {e.server for e in narrowed.recent_errors} == {server}
        one = await data.view(rng, Filters(server="alpha", instance="web-2"))
        assert one.snapshot.total_calls == alpha2.calls != alpha1.calls
        assert (await data.view(rng, Filters(server="beta"))).snapshot.total_calls == beta.calls
        assert (await data.view(rng)).snapshot.total_calls == view.snapshot.total_calls
    finally:
        await data.close()


def _text(driver: WebDriver, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def _wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, WAIT_S, poll_frequency=POLL_S)


def _wait_text(driver: WebDriver, element_id: str, want: str) -> None:
    _wait(driver).until(lambda d: _text(d, element_id) == want)


def _pick(driver: WebDriver, value: str) -> None:
    driver.find_element(By.ID, "filter-server").click()
    option = f"label.dash-dropdown-option:has(input[value='{value}'])"
    _wait(driver).until(lambda d: d.find_elements(By.CSS_SELECTOR, option))
    driver.find_element(By.CSS_SELECTOR, option).click()


def _option_labels(driver: WebDriver) -> list[str]:
    driver.find_element(By.ID, "filter-server").click()
    sel = "label.dash-dropdown-option"
    _wait(driver).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, sel)) >= 4)
    labels = [str(e.text) for e in driver.find_elements(By.CSS_SELECTOR, sel)]
    driver.find_element(By.ID, "filter-server").click()
    return labels


def test_page_over_redis_shows_the_sum_and_the_instance_filter_narrows_it(
    browser: WebDriver, metered: tuple[str, list[Run]]
) -> None:
    url, runs = metered
    server = DashboardServer(SyncReader.open(url), store_url=url, port=0, refresh_ms=1000)
    with server:
        browser.get(server.url)
        _wait_text(browser, "kpi-calls", f"{sum(r.calls for r in runs):,}")
        labels = _option_labels(browser)
        for want in ("alpha (all 2 instances)", "alpha (web-1)", "alpha (web-2)", "beta"):
            assert any(want in label for label in labels), labels
        _pick(browser, json.dumps(["alpha", "web-2"], separators=(",", ":")))
        _wait_text(browser, "kpi-calls", f"{runs[1].calls:,}")
        _pick(browser, "beta")
        _wait_text(browser, "kpi-calls", f"{runs[2].calls:,}")
        _pick(browser, "alpha")
        _wait_text(browser, "kpi-calls", f"{runs[0].calls + runs[1].calls:,}")
