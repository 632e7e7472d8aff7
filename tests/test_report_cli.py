"""`code-gym report ROLLOUTS.jsonl`: the credit report for any rollouts, run for real on a served
model's episodes (played against a local server) and on thousands of episodes (paginated: every
task page holds at most --per-page episodes), then opened in headless Chromium: no console errors,
the index links to the task pages, and choosing another estimator recolours the lines. CI
(CI=true) installs the browser (scripts/setup-browser.sh) and must not skip the browser test."""
import json
import os
import re

import pytest

import credit
from code_gym.apps.browser import browser_missing, console_errors, headless_chromium, open_file
from code_gym.apps.cli import main
from replay_server import ChatServer

FIX_ADD = {"path": "calc/ops.py", "old_str": "def add(a, b):\n    return a - b", "new_str": "def add(a, b):\n    return a + b"}
WRONG_ADD = {**FIX_ADD, "new_str": "def add(a, b):\n    return a * b"}
FIX_MUL = {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b", "new_str": "def mul(a, b):\n    return a * b"}


def turn(name, arguments):
    return {"role": "assistant", "content": "Editing.", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


SCRIPTS = [  # conversation k (in the order they start) plays SCRIPTS[k % 3]
    [turn("str_replace", FIX_ADD), turn("str_replace", FIX_MUL), turn("submit", {})],
    [turn("str_replace", WRONG_ADD), turn("str_replace", FIX_MUL), turn("submit", {})],
    [turn("str_replace", FIX_ADD), turn("submit", {})],
]


class ScriptServer(ChatServer):
    def __init__(self):
        super().__init__()
        self.started = 0

    def respond(self, number, body):
        step = sum(m["role"] == "assistant" for m in body["messages"])
        self.started += step == 0
        script = SCRIPTS[(self.started - 1) % len(SCRIPTS)]
        return {"status": 200, "body": {"id": "x", "object": "chat.completion", "model": body["model"], "choices": [
            {"index": 0, "message": script[min(step, len(script) - 1)], "finish_reason": "stop"}]}}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Three episodes of the tiny task from `code-gym eval` (trajectories and records)."""
    from conftest import write_tiny_task

    root = tmp_path_factory.mktemp("report")
    task = write_tiny_task(root)
    with ScriptServer() as server:
        code = main(["eval", "--base-url", server.url, "--model", "m", "--tasks", str(task), "-n", "3",
                     "--concurrency", "1", "--timeout", "30", "--out", str(root / "eval")])
    assert code == 0
    return root / "eval" / "rollouts.jsonl"


@pytest.fixture(scope="module")
def report(evaluated, tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    assert main(["report", str(evaluated), "--estimator", "grpo", "didpo", "gigpo", "--out", str(out)]) == 0
    return out


def test_the_report_of_a_served_models_rollouts(report, capsys):
    index = (report / "index.html").read_text()
    assert "3 episodes of 1 tasks" in index and "resolved 1/3" in index
    assert "coloured over words" in index  # the server gave no logprobs: the report's own tokens
    [page] = list(report.glob("task-*.html"))
    assert '<a href="task-00000-1.html">tiny</a>' in index
    text = page.read_text()
    assert text.count("<details class=episode") == 3 and "DiDPO anchor groups" in text
    coloured = re.findall(r'<span class="l chg"([^>]*)><i>([^<]*)</i>\+    return a \* b', text)
    assert coloured and all('data-didpo="' in attrs and 'data-grpo="' in attrs for attrs, _ in coloured)
    assert "http://" not in text and "https://" not in text  # self-contained


def test_thousands_of_episodes_are_paginated(evaluated, tmp_path, capsys):
    base = credit.load_jsonl(evaluated)
    many = [credit.Trajectory(f"task-{k // 60}", base[k % 3].steps, base[k % 3].reward) for k in range(2400)]
    rollouts = tmp_path / "many.jsonl"
    credit.dump_jsonl(many, rollouts)
    out = tmp_path / "html"
    assert main(["report", str(rollouts), "--estimator", "grpo", "didpo", "--per-page", "25", "--out",
                 str(out)]) == 0
    assert "2400 episodes of 40 tasks" in capsys.readouterr().out
    pages = sorted(out.glob("task-*.html"))
    assert len(pages) == 40 * 3  # 60 episodes a task, 25 a page
    counts = [p.read_text().count("<details class=episode") for p in pages]
    assert max(counts) == 25 and sum(counts) == 2400
    index = (out / "index.html").read_text()
    assert index.count("<tr>") == 40 + 1 and "No episode records" in index  # one row per task, and the header
    second = pages[1].read_text()
    assert 'href="task-00000-1.html">previous page' in second and 'href="task-00000-3.html">next page' in second


def test_an_unknown_option_is_refused_before_any_work(evaluated, tmp_path, capsys):
    code = main(["report", str(evaluated), "--estimator", "didpo", "--option", "nonsense=1", "--out",
                 str(tmp_path / "html")])
    assert code == 2 and "no option 'nonsense'" in capsys.readouterr().err and not (tmp_path / "html").exists()


def test_a_missing_rollouts_file_says_what_to_give(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "html")]) == 2
    assert "no such trajectories file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def browser():
    missing = browser_missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the report's browser test: {missing}")
        pytest.skip(f"no headless browser here: {missing}")
    with headless_chromium() as driver:
        yield driver


def _lines(driver):
    return driver.execute_script(
        "return [...document.querySelectorAll('.l.chg')].map(el => "
        "[el.style.background, el.querySelector('i').textContent, {...el.dataset}])")


def test_the_report_in_headless_chromium(browser, report):
    from selenium.webdriver.common.by import By

    open_file(browser, report / "index.html")
    assert browser.title == "code-gym rollouts report" and console_errors(browser) == []
    browser.find_element(By.LINK_TEXT, "tiny").click()
    assert browser.current_url.endswith("task-00000-1.html") and console_errors(browser) == []
    before = _lines(browser)
    assert before and all(background.startswith("rgb(") for background, _, _ in before)
    grpo = browser.find_element(By.CSS_SELECTOR, "input[name=est][value=grpo]")
    browser.execute_script("arguments[0].click()", grpo)
    after = _lines(browser)
    assert console_errors(browser) == []
    for background, shown, data in after:
        assert shown == f"{float(data['grpo']):+.2f}" and background.startswith("rgb(")
    assert [b for b, _, _ in after] != [b for b, _, _ in before], "choosing grpo changed no colour"
    browser.find_element(By.LINK_TEXT, "index").click()
    assert browser.current_url.endswith("index.html")
