"""Step shaping counts the per-test records of `run_tests` (the streamed records, checked against
the junit XML and the exit code), never printed text. Each shaping attempt of attempts.py breaks
the package (every visible test fails) and then cheats: a counter of printed text (or, for the
junit rewrites, the junit XML alone) credits it with more passing tests than the broken code
earns honestly; the real count credits it with none of them."""
import dataclasses
import re
import shlex

import pytest

from code_gym.actions.parse import ToolCall
from code_gym.grading.file_policy import apply_changes
from code_gym.languages.python.junit import parse_junit
from code_gym.grading.audit import audit
from code_gym.rewards.shaping import passed_count
from code_gym.languages.python.runtime import python_runtime
from code_gym.sandbox import Limits, make_sandbox
from code_gym.actions.tools import RunRecords, ToolContext, run_tool
from code_gym.workspace.working_copy import Workspace

from attempts import SHAPING_ATTEMPTS, SHAPING_BREAK, Append
from conftest import BUNDLED

TASKS = {t.id: t for t in BUNDLED}


def printed_count(output: str) -> int:
    """What a shaping that trusted pytest's printed summary would count."""
    found = re.findall(r"(\d+) passed", output)
    return int(found[-1]) if found else 0


def junit_count(sandbox, task, results) -> int | None:
    """What run_tests counted before the results stream: the junit XML and the exit code alone."""
    binds = {results: "/results"}
    command = (f"{task.test_command} -q -p no:cacheprovider -o junit_family=xunit1 "
               f"--junitxml={sandbox.inside(results, binds)}/junit.xml " + " ".join(map(shlex.quote, task.visible_tests)))
    run = sandbox.exec(command, timeout=60, binds=binds)
    records = RunRecords(parse_junit(results / "junit.xml"), run.exit_code, run.timed_out)
    return passed_count(records, task.visible_tests)


def measure(task, changes, results):
    """(printed count, junit-only count, the real count) of one run_tests call on `changes`."""
    ws = Workspace(task.repo, strategy="copy")
    box = make_sandbox("auto", ws.root, Limits(timeout=60), mask=(task.root,), runtime=python_runtime())
    try:
        apply_changes(task, ws.root, changes)
        result = run_tool(ToolContext(ws.root, box, task.visible_tests, task.test_command), ToolCall("run_tests", {}))
        results.mkdir()
        return (printed_count(result.output), junit_count(box, task, results),
                passed_count(result.records, task.visible_tests))
    finally:
        box.close()
        ws.close()


@pytest.mark.parametrize("attempt", SHAPING_ATTEMPTS, ids=[a.name for a in SHAPING_ATTEMPTS])
def test_printed_text_and_rewritten_junit_earn_no_shaping(attempt, tmp_path):
    task = TASKS[attempt.task]
    path = next(iter(attempt.edits))
    broken = dataclasses.replace(attempt, edits={path: Append(SHAPING_BREAK)}).changes(task)
    _, _, honest = measure(task, broken, tmp_path / "honest")
    printed, junit, shaped = measure(task, attempt.changes(task), tmp_path / "attack")
    assert honest == 0
    if "results" in attempt.caught_by:  # the junit XML alone would have paid
        assert junit is not None and junit > 0, junit
    else:  # a counter of printed text would have paid
        assert printed > 0, printed
    assert shaped is None or shaped <= honest, (shaped, honest)
    # and shaping counts only while the workspace passes the audit, which names each of them
    assert attempt.rules <= {f.rule for f in audit(attempt.changes(task), task)}


BREAK = "printf 'def add(a, b):\\n    raise ValueError\\n\\n\\ndef mul(a, b):\\n    return 0\\n' > calc/ops.py"


def test_breaking_the_code_and_putting_it_back_earns_no_shaping(tiny_task, monkeypatch):
    """The red team's climb: break the code so the visible tests fail, then put it back; each new
    best count paid a bonus when the episode's first run set the baseline (0.6 on a bundled task
    with nothing fixed). The baseline is now the untouched repository's count."""
    import gymnasium as gym

    import code_gym.env.environment
    from code_gym.actions.replay import hermes

    def episode():
        env = gym.make("CodeRepo-v0", task=tiny_task, reward={"f2p": 1.0, "shaping": True})
        try:
            env.reset(seed=0)
            rewards = []
            for action in (f"```bash\ncp calc/ops.py ops.bak && {BREAK}\n```",
                           hermes([{"name": "run_tests", "arguments": {}}]),
                           "```bash\nmv ops.bak calc/ops.py\n```",
                           hermes([{"name": "run_tests", "arguments": {}}]),
                           hermes([{"name": "submit", "arguments": {}}])):
                rewards.append(env.step(action)[1])
            return rewards
        finally:
            env.close()

    assert episode() == [0.0] * 5  # the untouched code back: nothing fixed, nothing paid
    monkeypatch.setattr(code_gym.env.environment, "untouched_passed", lambda task, isolation: None)  # the defence off
    assert episode()[3] == pytest.approx(0.15)  # paid for putting back what it broke
