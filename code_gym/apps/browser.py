"""The HTML report in a real headless browser: Debian's Chromium driven by Selenium through the
system chromedriver (`scripts/setup-browser.sh` installs both; selenium is in the `test` extra).
Used by the report's browser test and by `scripts/report_screenshot.py`."""
from __future__ import annotations

import importlib.util
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

CHROMEDRIVER = "chromedriver"


def browser_missing() -> str | None:
    """Why the browser cannot start here (None: it can)."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[test]')"
    if shutil.which(CHROMEDRIVER) is None or not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "Chromium or its driver is missing (bash scripts/setup-browser.sh installs Debian's chromium, chromium-driver)"
    return None


@contextmanager
def headless_chromium(width: int = 1280, height: int = 900) -> Iterator["object"]:
    """A Selenium WebDriver on headless Chromium that keeps the page's console log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)  # --no-sandbox: Chromium's own sandbox refuses to run as root
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver) -> list[str]:
    """The page's console messages at level SEVERE (errors), since the last call."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def open_file(driver, path: Path) -> None:
    driver.get(Path(path).resolve().as_uri())
