"""The main job: rollouts, credit from several estimators, the summary and the HTML report."""
import json
import re

import numpy as np
import pytest

import credit
from code_gym.apps.cli import main
from code_gym.apps.demo import line_advantages, render_report, run_demo, separation, summary
from code_gym.apps.policy import Candidate, Decision
from code_gym.apps.train import Episode
from conftest import BUNDLED

RATELIMIT = next(t for t in BUNDLED if t.id == "ratelimit-burst-window")


@pytest.fixture(scope="module")
def demo():
    return run_demo([RATELIMIT], group_size=6, variants=1, seed=1)


def test_demo_runs_the_policy_and_every_estimator(demo):
    assert len(demo.episodes) == 6 and {e.task_id for e in demo.episodes} == {RATELIMIT.id}
    assert set(demo.results) == {"grpo", "gigpo", "didpo", "didpo-contrast", "didpo-split"}
    assert all(len(r.episode) == 6 for r in demo.results.values())
    assert demo.grades_run + demo.grades_cached == 6
    header, rows = summary(demo)
    assert header[:4] == ["task", "regions", "resolved", "reward"] and "sep didpo" in header
    assert rows[0][0] == RATELIMIT.id and rows[-1][0] == "all" and rows[0][1] == 2


def test_report_colours_the_reference_hunks_by_advantage(demo):
    page = render_report(demo)
    assert page.startswith("<!doctype html>") and "http://" not in page and "https://" not in page
    reference_line = "min(float(self.capacity), self._tokens + elapsed * self.rate)"
    made = [i for i, e in enumerate(demo.episodes) if e.choices[0] == 0]
    assert made, "the seed should play the reference edit of bucket.py at least once"
    coloured = re.findall(r'<span class="l chg"([^>]*)><i>([^<]*)</i>\+[^<]*' + re.escape(reference_line), page)
    assert len(coloured) == len(made)
    for attrs, shown in coloured:
        assert 'data-grpo="' in attrs and 'data-didpo="' in attrs and "background:rgb(" in attrs
        assert re.fullmatch(r"[+-]\d\.\d\d", shown)
    assert "DiDPO anchor groups" in page and "Episode outcomes" in page
    assert re.search(r"<td>added</td><td>\d\.\d{3}</td>", page), "an anchor row with its groupability score"


def test_line_advantages_average_the_tokens_that_wrote_each_line():
    action = 'x <tool_call>{"name": "str_replace", "arguments": {"old_str": "a = 1", "new_str": "a = 2"}}</tool_call>'
    start = action.index("a = 2")
    diff = "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    step = credit.Step(action, diff, token_offsets=np.array([[0, start], [start, start + 5], [start + 5, len(action)]]),
                       provenance=[("f.py", 1, start, start + 5)])
    values = line_advantages(step, np.array([0.0, 2.0, 0.0]))
    assert values[("+", "f.py", 1)] == 2.0
    assert values[("-", "f.py", 1)] == 0.0  # "a = 1" sits in the first token's span


def test_separation_counts_right_over_wrong_pairs_per_decision():
    candidates = tuple(Candidate(k, k, (0, 1)) for k in ("reference", "flip", "untouched"))
    decisions = {"t": [Decision("f.py", (1, 2), candidates)]}
    trajectory = credit.Trajectory("t", [credit.Step("a", "")], 0.0)
    episodes = [Episode("t", (c,), trajectory, False, 0, 1) for c in (0, 0, 1, 2)]
    values = np.array([[1.0], [0.0], [0.5], [0.0]])
    # pairs (1.0, 0.5) win, (1.0, 0.0) win, (0.0, 0.5) lose, (0.0, 0.0) tie -> 2.5 / 4
    assert separation(values, episodes, decisions) == pytest.approx(0.625)
    assert np.isnan(separation(values[:2], episodes[:2], decisions))


def test_demo_command_writes_report_and_loadable_trajectories(tmp_path, capsys):
    code = main(["demo", "--tasks", str(RATELIMIT.root), "-G", "2", "--variants", "0", "--out", str(tmp_path),
                 "--estimator", "grpo", "didpo-split"])
    assert code == 0
    assert (tmp_path / "report.html").read_text().count('class="l chg"') > 0
    trajectories = credit.load_jsonl(tmp_path / "rollouts.jsonl")
    assert len(trajectories) == 2 and all(t.steps[0].token_offsets is not None for t in trajectories)
    out = capsys.readouterr().out
    assert "sep grpo" in out and "sep didpo-split" in out and "sep gigpo" not in out and "report:" in out


def test_check_command_replays_references(capsys):
    assert main(["check", "--tasks", str(RATELIMIT.root)]) == 0
    assert "all references resolve and empty submissions fail" in capsys.readouterr().out


def test_report_json_scale_is_valid(demo):
    page = render_report(demo)
    scale = json.loads(re.search(r"const SCALE = (\{.*?\});", page).group(1))
    assert set(scale) == set(demo.results) and all(v > 0 for v in scale.values())
