"""The LLM-judge component against a real HTTP server on 127.0.0.1 that replays judge answers
(well-formed, malformed, slow, failing), alone and end to end through `env.step`."""
import gymnasium as gym
import pytest

from code_gym.grading.grade import GradeResult
from code_gym.grading.audit import Finding
from code_gym.actions.replay import hermes
from code_gym.rewards import Judge, Submission, make_reward, parse_score
from code_gym.rewards.judge import JudgeAnswerError, final_patch

from replay_server import GARBAGE, ReplayServer, answer, slow, status

FIXED = b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
SUBMIT = hermes([{"name": "submit", "arguments": {}}])
GOOD = answer("The patch fixes both functions.\nSCORE: 8")


def judge(url, **kw):
    return Judge(url, "judge-model", timeout=0.3, retries=2, backoff=0.01, **kw)


def submission(task, changes=None, integrity=None):
    result = GradeResult({}, 0, False, "", 0.1, integrity=integrity)
    return Submission(task, {"calc/ops.py": FIXED} if changes is None else changes, result)


@pytest.mark.parametrize("text,value", [
    ("SCORE: 8", 0.8), ("Looks right.\n\nScore: 10/10", 1.0), ("**SCORE:** 3.5", 0.35),
    ("SCORE: 2\nOn reflection:\nSCORE: 6", 0.6), ("score : 0", 0.0),
])
def test_parse_score_reads_the_last_score_line(text, value):
    assert parse_score(text) == pytest.approx(value)


@pytest.mark.parametrize("text,message", [
    ("I would give it an 8.", "no 'SCORE: <0-10>' line"), ("SCORE: 11", "outside 0-10"),
    ("SCORE: 4/5", "not out of 10"), ("", "no 'SCORE"), ("The score: eight", "no 'SCORE"),
])
def test_parse_score_rejects_malformed_answers(text, message):
    with pytest.raises(JudgeAnswerError, match=message):
        parse_score(text)


def test_a_well_formed_answer_is_the_value_and_is_cached_by_patch(tiny_task):
    with ReplayServer([GOOD, answer("SCORE: 2")]) as server:
        j = judge(server.url)
        first = j(submission(tiny_task))
        again = j(submission(tiny_task))
        other = j(submission(tiny_task, {"calc/ops.py": FIXED + b"\n# done\n"}))
        j.close()
    assert (first.value, first.details) == (pytest.approx(0.8), {"cached": False})
    assert (again.value, again.details) == (pytest.approx(0.8), {"cached": True})
    assert other.value == pytest.approx(0.2) and len(server.requests) == 2
    path, body = server.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "judge-model" and body["temperature"] == 0.0
    system, user = body["messages"]
    assert "SCORE: <n>" in system["content"] and "from 0" in system["content"]
    assert tiny_task.statement in user["content"] and "## Rubric" in user["content"]
    assert "+    return a * b" in user["content"] and "-    return a + b" in user["content"]


def test_a_malformed_answer_is_a_finding_and_is_not_cached(tiny_task):
    with ReplayServer([answer("Pretty good patch overall."), GOOD]) as server:
        j = judge(server.url, on_error=-0.5)
        bad = j(submission(tiny_task))
        retried = j(submission(tiny_task))
    assert bad.value == -0.5 and "no 'SCORE: <0-10>' line" in bad.details["error"]
    assert "Pretty good patch overall." in bad.details["error"]
    assert retried.value == pytest.approx(0.8) and len(server.requests) == 2


def test_a_slow_answer_times_out_and_is_retried(tiny_task):
    with ReplayServer([slow(1.0, GOOD), GOOD]) as server:
        score = judge(server.url)(submission(tiny_task))
    assert score.value == pytest.approx(0.8) and score.details == {"cached": False} and len(server.requests) == 2


@pytest.mark.parametrize("script,requests,message", [
    ([status(500)], 3, "failed 3 times; last: HTTP 500"),
    ([status(503), status(429), slow(1.0, GOOD)], 3, "ReadTimeout"),
    ([status(401)], 1, "refused the request (HTTP 401"),
    ([GARBAGE], 1, "not a chat completion"),
    ([answer(None)], 1, "no text content"),
])
def test_a_failing_endpoint_is_a_finding_with_bounded_retries(tiny_task, script, requests, message):
    with ReplayServer(script) as server:
        score = judge(server.url)(submission(tiny_task))
    assert score.value == 0.0 and message in score.details["error"], score.details
    assert score.details["error"].startswith("judge request failed") and len(server.requests) == requests


def test_an_unreachable_judge_is_a_finding(tiny_task):
    with ReplayServer([GOOD]) as server:
        url = server.url
    score = Judge(url, "m", timeout=0.3, retries=1, backoff=0.01)(submission(tiny_task))
    assert score.value == 0.0 and "failed 2 times" in score.details["error"]


def test_an_empty_patch_is_not_sent(tiny_task):
    with ReplayServer([GOOD]) as server:
        score = judge(server.url)(submission(tiny_task, {}))
        unchanged = judge(server.url)(submission(tiny_task, {"calc/ops.py": tiny_task.original_file("calc/ops.py")}))
    assert score.value == unchanged.value == 0.0 and score.details == {"skipped": "empty patch"}
    assert server.requests == []


def test_long_patches_are_cut_and_every_changed_file_is_shown(tiny_task):
    changes = {"calc/ops.py": FIXED, "calc/big.py": b"x = 1\n" * 5000, "data.bin": None}
    patch = final_patch(submission(tiny_task, changes))
    assert "diff --git a/calc/big.py" in patch and "deleted file mode" in patch
    [_, user] = Judge("http://127.0.0.1:9/v1", "m", max_patch_chars=500).messages("stmt", patch)
    assert "characters cut ..." in user["content"] and len(user["content"]) < 1000


def test_spec_options_and_errors(tiny_task):
    spec = make_reward({"f2p": 1.0, "judge": {"weight": 0.2, "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                              "retries": 0}})
    name, weight, component = spec.components[1]
    assert (name, weight, component.retries, component.model) == ("judge", 0.2, 0, "m")
    with pytest.raises(ValueError, match="needs 'base_url'"):
        make_reward({"f2p": 1.0, "judge": 0.2})
    with pytest.raises(ValueError, match="does not take options"):
        make_reward({"judge": {"base_url": "http://x/v1", "model": "m", "bias": 1}})
    with pytest.raises(ValueError, match="out of range"):
        make_reward({"judge": {"base_url": "http://x/v1", "model": "m", "timeout": 0}})


def test_the_audit_outranks_the_judge(tiny_task):
    cheat = [Finding("conftest.py", 0, "conftest", "adds a conftest.py")]
    with ReplayServer([GOOD]) as server:
        spec = make_reward({"judge": {"base_url": server.url, "model": "m"}})
        reward, entries = spec.outcome(submission(tiny_task, integrity=cheat))
        reported = make_reward({"judge": {"base_url": server.url, "model": "m"}}, integrity="report")
        report_reward, _ = reported.outcome(submission(tiny_task, integrity=cheat))
    assert reward == 0.0 and entries["judge"]["skipped"] == "the patch failed the integrity audit"
    assert report_reward == pytest.approx(0.8) and len(server.requests) == 1  # only the "report" spec asked


# -- through the environment --------------------------------------------------------------------

def fix_and_submit(env):
    env.reset(seed=0)
    env.step(hermes([{"name": "bash", "arguments": {"command": "sed -i 's/a - b/a + b/; 5,$ s/a + b/a * b/' calc/ops.py"}}]))
    return env.step(SUBMIT)


def test_judge_end_to_end_through_env_step(tiny_task):
    with ReplayServer([GOOD]) as server:
        env = gym.make("CodeRepo-v0", task=tiny_task, reward={
            "f2p": 1.0, "judge": {"weight": 0.2, "base_url": server.url, "model": "judge-model"}})
        _, reward, terminated, _, info = fix_and_submit(env)
        _, again, _, _, again_info = fix_and_submit(env)  # the same final patch: answered from the cache
        env.close()
    breakdown = info["reward_breakdown"]
    assert terminated and breakdown["f2p"]["value"] == 1.0
    assert breakdown["judge"] == {"value": pytest.approx(0.8), "weight": 0.2, "reward": pytest.approx(0.16),
                                  "cached": False}
    assert reward == pytest.approx(1.16) == breakdown["total"] == info["outcome_reward"]
    assert again == pytest.approx(1.16) and again_info["reward_breakdown"]["judge"]["cached"] is True
    assert len(server.requests) == 1


@pytest.mark.parametrize("script,message", [([answer("no verdict, sorry")], "no 'SCORE"),
                                            ([status(500)], "HTTP 500"), ([slow(1.0, GOOD)], "ReadTimeout")])
def test_a_bad_judge_never_raises_in_env_step(tiny_task, script, message):
    with ReplayServer(script) as server:
        env = gym.make("CodeRepo-v0", task=tiny_task, reward={
            "f2p": 1.0, "judge": {"weight": 0.2, "base_url": server.url, "model": "m", "timeout": 0.3,
                                  "retries": 1, "backoff": 0.01}})
        _, reward, terminated, _, info = fix_and_submit(env)
        env.close()
    entry = info["reward_breakdown"]["judge"]
    assert terminated and reward == pytest.approx(1.0) and entry["reward"] == 0.0 and message in entry["error"]


def test_a_cheating_patch_never_reaches_the_judge(tiny_task):
    with ReplayServer([answer("SCORE: 10")]) as server:
        env = gym.make("CodeRepo-v0", task=tiny_task, integrity_penalty=-1.0,
                       reward={"f2p": 1.0, "judge": {"weight": 0.2, "base_url": server.url, "model": "m"}})
        env.reset(seed=0)
        env.step(hermes([{"name": "bash", "arguments": {"command": "printf 'import pytest\\n' > conftest.py"}}]))
        _, reward, _, _, info = env.step(SUBMIT)
        env.close()
    assert reward == -1.0 and "skipped" in info["reward_breakdown"]["judge"] and server.requests == []
