"""The browser the HTML report's tests drive: Debian's chromium and its
driver through Selenium (no browser download at test time), and where the
tests leave screenshots for a person to look at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ROOT = Path(__file__).resolve().parents[3]


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} is missing: tests/run.sh installs chromium and chromium-driver (Debian packages)"
    return None


@pytest.fixture(scope="session")
def driver():
    """One headless chromium for the session, its console log kept."""
    problem = _missing()
    if problem:
        pytest.fail(problem)  # never a skip: the report's Done-when needs a real browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    d.set_page_load_timeout(120)
    try:
        yield d
    finally:
        d.quit()


@pytest.fixture(scope="session")
def screenshots(request) -> Path:
    """$PSUITE_SCREENSHOTS, else build/screenshots of the checkout (ignored
    by git through build/)."""
    where = os.environ.get("PSUITE_SCREENSHOTS")
    path = Path(where) if where else ROOT / "build" / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the HTML report's tests: {path}")
    request.config.add_cleanup(lambda: print(f"\nscreenshots of the HTML report's tests: {path}"))
    return path
