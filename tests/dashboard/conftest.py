"""Fixtures for the dashboard tests: a real headless Chromium and a served dashboard."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1480,1300",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium per test module (selenium driving the system chromedriver)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = CHROMIUM if shutil.which(CHROMIUM) else shutil.which("chromium")
    driver_path = CHROMEDRIVER if shutil.which(CHROMEDRIVER) else shutil.which("chromedriver")
    assert binary, "chromium is installed by `make sysdeps`"
    assert driver_path, "chromedriver is installed by `make sysdeps`"
    options = webdriver.ChromeOptions()
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.binary_location = binary
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
