"""The demo's HTML report in a real headless Chromium (Selenium + Debian's chromedriver): it loads
with no console errors, and choosing another estimator recolours the changed lines with that
estimator's advantages. CI (CI=true) installs the browser (scripts/setup-browser.sh) and must
not skip this."""
import os

import pytest

from code_gym.apps.browser import browser_missing, console_errors, headless_chromium, open_file
from code_gym.apps.demo import run_demo, write_report
from conftest import BUNDLED

RATELIMIT = next(t for t in BUNDLED if t.id == "ratelimit-burst-window")


@pytest.fixture(scope="module")
def browser():
    missing = browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the report's browser test: {missing}")
        pytest.skip(f"no headless browser here: {missing}")
    with headless_chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    demo = run_demo([RATELIMIT], group_size=6, variants=1, seed=1)
    return write_report(demo, tmp_path_factory.mktemp("report") / "report.html")


def _lines(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('.l.chg')].map(el => "
        "[el.style.background, el.querySelector('i').textContent, {...el.dataset}])")


def test_report_loads_without_console_errors_and_recolours_by_estimator(browser, report):
    from selenium.webdriver.common.by import By

    open_file(browser, report)
    assert browser.title and console_errors(browser) == []
    before = _lines(browser)
    assert before and all(background.startswith("rgb(") for background, _, _ in before)
    checked = browser.find_element(By.CSS_SELECTOR, "input[name=est]:checked").get_attribute("value")
    other = next(r for r in browser.find_elements(By.CSS_SELECTOR, "input[name=est]")
                 if r.get_attribute("value") not in (checked, "didpo-contrast"))
    name = other.get_attribute("value")
    browser.execute_script("arguments[0].click()", other)  # the radio may sit inside a folded <details>
    after = _lines(browser)
    assert console_errors(browser) == []
    key = name.replace("-", "_")
    for background, shown, data in after:
        value = data.get(key)
        if value is None:
            assert background == "" and shown == ""
        else:
            assert shown == f"{float(value):+.2f}"
    assert [b for b, _, _ in after] != [b for b, _, _ in before], f"choosing {name} changed no colour"
