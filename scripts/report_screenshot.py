"""docs/img/report.png: the demo's HTML report as headless Chromium shows it, the same browser the
report's test uses (code_gym.apps.browser). Run `code-gym demo` first, then
`.venv/bin/python scripts/report_screenshot.py [out/demo/report.html] [docs/img/report.png]`."""
import sys
from pathlib import Path

from code_gym.apps.browser import browser_missing, console_errors, headless_chromium, open_file


def main(report: str = "out/demo/report.html", png: str = "docs/img/report.png") -> int:
    missing = browser_missing()
    if missing:
        print(f"report_screenshot: {missing}", file=sys.stderr)
        return 1
    if not Path(report).is_file():
        print(f"report_screenshot: {report} does not exist; run `code-gym demo` first", file=sys.stderr)
        return 1
    with headless_chromium(width=1280, height=1000) as driver:
        open_file(driver, Path(report))
        # show the first coloured line: open the folds around it and scroll to it
        driver.execute_script("const l = document.querySelector('.l.chg'); if (!l) return;"
                              " for (let d = l.closest('details'); d; d = d.parentElement.closest('details')) d.open = true;"
                              " l.scrollIntoView({block: 'center'});")
        errors = console_errors(driver)
        if errors:
            print("report_screenshot: the page logged errors:\n" + "\n".join(errors), file=sys.stderr)
            return 1
        Path(png).parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(png)
    print(f"{png} <- {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
