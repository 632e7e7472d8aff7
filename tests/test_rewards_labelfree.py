"""Label-free rewards: self-certainty from sampling log-probs (its definitions on hand-computed
numbers, its guards, the log-prob path into the env and the trajectory, end to end through
`env.step` and through the model client against a replay server)."""
import math

import gymnasium as gym
import pytest

from code_gym.env import episode
from code_gym.apps.client import ChatClient, ChatPolicy, ClientConfig
from code_gym.grading.grade import GradeResult
from code_gym.actions.replay import hermes
from code_gym.rewards import Response, SelfCertainty, Submission, TokenLogprobs, make_reward, sampled_response
from code_gym.workspace.diffs import file_diff
from code_gym.rewards import execution_vote
from code_gym.rewards.labelfree import token_kl_from_uniform
from code_gym.languages.python.vote import random_calls, scenario_calls
from code_gym.env.trajectory import RecordTrajectory

from replay_server import ReplayServer, answer

SUBMIT = hermes([{"name": "submit", "arguments": {}}])
FIX = hermes([{"name": "str_replace", "arguments": {"path": "calc/ops.py", "old_str": old, "new_str": new}}
              for old, new in (("return a - b", "return a + b"), ("def mul(a, b):\n    return a + b",
                                                                 "def mul(a, b):\n    return a * b"))])
LOG = math.log


def openai_logprobs(tops):
    """The chat-completions `logprobs` object for tokens whose top-k probabilities are `tops` (the
    first of each is the sampled token)."""
    return {"content": [{"token": f"t{i}", "logprob": LOG(top[0]), "bytes": None,
                         "top_logprobs": [{"token": f"a{j}", "logprob": LOG(p), "bytes": None} for j, p in enumerate(top)]}
                        for i, top in enumerate(tops)]}


PEAKED = [0.5, 0.25, 0.25]  # KL(U_3 || p) = -log 3 - (log .5 + 2 log .25) / 3
KL_PEAKED = -LOG(3) - (LOG(0.5) + 2 * LOG(0.25)) / 3


def sub(tiny_task, *logprobs):
    return Submission(tiny_task, {}, GradeResult({}, 0, False, "", 0.1),
                      tuple(Response("r", None if lp is None else TokenLogprobs.parse(lp)) for lp in logprobs))


# -- definitions --------------------------------------------------------------------------------

def test_kl_from_uniform_on_hand_computed_distributions():
    assert token_kl_from_uniform((LOG(0.25),) * 4) == pytest.approx(0.0)
    assert token_kl_from_uniform(tuple(LOG(p) for p in PEAKED)) == pytest.approx(KL_PEAKED) == pytest.approx(0.0566, abs=1e-4)
    # the top k are renormalised: scaling them all by the missing tail mass changes nothing
    assert token_kl_from_uniform(tuple(LOG(p * 0.1) for p in PEAKED)) == pytest.approx(KL_PEAKED)
    assert token_kl_from_uniform((LOG(0.99), LOG(0.01))) > token_kl_from_uniform((LOG(0.6), LOG(0.4)))


def test_logprob_forms_parse_to_the_same_tokens():
    content = openai_logprobs([PEAKED, [0.9, 0.1]])
    a, b = TokenLogprobs.parse(content), TokenLogprobs.parse(content["content"])
    c = TokenLogprobs.parse([{"logprob": LOG(0.5), "top_logprobs": [LOG(p) for p in PEAKED]},
                             {"logprob": LOG(0.9), "top_logprobs": [LOG(0.9), LOG(0.1)]}])
    assert a == b and a.sampled == c.sampled and [list(t) for t in a.top] == [pytest.approx(t) for t in c.top] and len(a) == 2
    sampled_only = TokenLogprobs.parse([-0.1, -2.0])
    assert sampled_only.sampled == (-0.1, -2.0) and sampled_only.top == ()


@pytest.mark.parametrize("bad,message", [({"tokens": []}, "'content' list"), ("x", "must be a list"),
                                         ([0.5], "not a finite log-probability"), (["a"], "must be a number"),
                                         ([float("nan")], "finite"), ([{"logprob": -1, "top_logprobs": [1.0]}], "<= 0")])
def test_bad_logprobs_say_what_was_wrong(bad, message):
    with pytest.raises(ValueError, match=message):
        TokenLogprobs.parse(bad)


def test_certainty_is_the_token_mean_over_the_episode(tiny_task):
    flat, peaked = [0.25] * 4, PEAKED
    score = SelfCertainty()(sub(tiny_task, openai_logprobs([flat, peaked]), None, openai_logprobs([peaked])))
    assert score.value == pytest.approx((0 + 2 * KL_PEAKED) / 3)
    assert score.details == {"tokens": 3, "measure": "kl"}
    geometric = SelfCertainty(measure="logprob")(sub(tiny_task, [LOG(0.5), LOG(0.125)]))
    assert geometric.value == pytest.approx(0.25)  # exp(mean(log .5, log .125))
    missing = SelfCertainty()(sub(tiny_task, [LOG(0.5)]))
    assert missing.value == 0.0 and "needs top-k" in missing.details["error"]
    none = SelfCertainty()(sub(tiny_task, None))
    assert none.value == 0.0 and "no sampling log-probs reached the env" in none.details["error"]


# -- the guards ---------------------------------------------------------------------------------

def test_guard_certainty_only_next_to_a_verifiable_reward():
    for alone in ("certainty", {"certainty": 1.0, "static": 0.1}, {"f2p": 0.0, "certainty": 1.0},
                  {"certainty": 1.0, "judge": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}):
        with pytest.raises(ValueError, match="label-free.*collapse"):
            make_reward(alone)
    mixed = make_reward({"f2p": 1.0, "certainty": 0.1})
    assert [n for n, _, _ in mixed.components] == ["f2p", "certainty"]
    unguarded = make_reward({"certainty": {"mixed_only": False}})
    assert unguarded.components[0][2] == SelfCertainty(mixed_only=False)


def test_guard_length_floor_stops_paying_for_short_certain_answers(tiny_task):
    collapsed = openai_logprobs([[0.99, 0.01]] * 3)  # three near-certain tokens: what certainty collapse looks like
    reasoning = openai_logprobs([PEAKED] * 40)
    assert SelfCertainty()(sub(tiny_task, collapsed)).value > SelfCertainty()(sub(tiny_task, reasoning)).value
    floor = SelfCertainty(min_tokens=32)
    short = floor(sub(tiny_task, collapsed))
    assert short.value == 0.0 and short.details["guard"] == "length floor: 3 response tokens < min_tokens 32"
    assert floor(sub(tiny_task, reasoning)).value == pytest.approx(KL_PEAKED)
    with pytest.raises(ValueError, match="min_tokens"):
        SelfCertainty(min_tokens=-1)
    with pytest.raises(ValueError, match="measure"):
        make_reward({"f2p": 1, "certainty": {"measure": "entropy"}})


# -- the log-prob path --------------------------------------------------------------------------

def test_sampled_response_plays_as_its_text():
    logprobs = openai_logprobs([PEAKED])
    assert sampled_response({"text": "hi", "logprobs": logprobs})[:2] == ("hi", Response("hi", TokenLogprobs.parse(logprobs)))
    assert sampled_response("hi") == ("hi", Response("hi"), None)
    assert sampled_response({"text": "hi"}) == ("hi", Response("hi"), None)
    call = {"name": "submit", "arguments": {}}
    assert sampled_response(call) == (call, None, None)
    assert sampled_response({"text": "hi", "name": "x"})[1] is None  # not a sampled response: a tool-call dict
    text, response, error = sampled_response({"text": "hi", "logprobs": [1.5]})
    assert (text, response) == ("hi", Response("hi")) and "log-probs ignored" in error


def test_certainty_end_to_end_through_env_step(tiny_task):
    env = RecordTrajectory(gym.make("CodeRepo-v0", task=tiny_task,
                                    reward={"f2p": 1.0, "certainty": {"weight": 0.5, "min_tokens": 2}}))
    _, info = env.reset(seed=0)
    _, reward, _, _, info = env.step({"text": FIX, "logprobs": openai_logprobs([PEAKED, [0.25] * 4])})
    assert reward == 0.0 and "+    return a * b" in info["diff"] and info["provenance"]  # played as the text
    _, _, _, _, info = env.step({"text": "thinking, no tool call", "logprobs": [1.0]})
    assert info["invalid_action"] and "log-probs ignored" in info["logprobs_error"]
    _, reward, terminated, _, info = env.step({"text": SUBMIT, "logprobs": openai_logprobs([PEAKED])})
    certainty = info["reward_breakdown"]["certainty"]
    assert terminated and certainty["value"] == pytest.approx(2 * KL_PEAKED / 3) and certainty["tokens"] == 3
    assert reward == pytest.approx(1.0 + 0.5 * 2 * KL_PEAKED / 3) == info["outcome_reward"]
    trajectory, logprobs = info["trajectory"], info["step_logprobs"]
    assert [s.action for s in trajectory.steps] == [FIX, "thinking, no tool call", SUBMIT]
    assert trajectory.steps[0].provenance and [None if lp is None else len(lp) for lp in logprobs] == [2, None, 1]
    # plain text steps work as before; with no log-probs the component says so
    env.reset(seed=0)
    env.step(FIX)
    _, reward, _, _, info = env.step(SUBMIT)
    assert reward == 1.0 and "no sampling log-probs" in info["reward_breakdown"]["certainty"]["error"]
    env.close()


def test_the_model_clients_logprobs_reach_the_reward(tiny_task):
    fix = {"role": "assistant", "content": FIX}
    script = [answer(FIX, openai_logprobs([PEAKED, PEAKED])), answer(SUBMIT, openai_logprobs([[0.25] * 4]))]
    with ReplayServer(script) as server:
        client = ChatClient(ClientConfig(server.url, "m", timeout=5, retries=0,
                                         extra_body={"logprobs": True, "top_logprobs": 3}))
        env = gym.make("CodeRepo-v0", task=tiny_task, reward={"f2p": 1.0, "certainty": 0.1}, tool_schemas=False)
        result = episode.run_episode(env, ChatPolicy(client), tiny_task)
        env.close()
        client.close()
    assert fix["content"] == script[0]["body"]["choices"][0]["message"]["content"]
    assert result.resolved and server.requests[0][1]["top_logprobs"] == 3
    assert result.info["reward_breakdown"]["certainty"]["value"] == pytest.approx(2 * KL_PEAKED / 3)
    assert [s.action for s in result.trajectory.steps] == [FIX, SUBMIT]
    assert "logprobs" not in server.requests[1][1]["messages"][1]  # the history carries only the message


# -- execution majority vote --------------------------------------------------------------------

FIXED = b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
SAME = b"def add(a, b):\n    total = a + b\n    return total\n\n\ndef mul(a, b):\n    return a * b\n"  # written differently
HALF = b"def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"


def test_random_calls_cover_changed_functions_with_seeded_inputs(tiny_task):
    """The fallback for a task without probes (the default calls: tests/test_vote_calls.py)."""
    calls = random_calls(tiny_task, [{"calc/ops.py": HALF}, {"calc/new.py": b"def f(x, y=1):\n    return x\n"}], 3, 0)
    assert [c.split("(")[1] for c in calls] == ["'calc.new').f"] * 3 + ["'calc.ops').add"] * 3
    assert all(c.count(",") == 1 for c in calls[3:]) and calls == random_calls(
        tiny_task, [{"calc/ops.py": HALF}, {"calc/new.py": b"def f(x, y=1):\n    return x\n"}], 3, 0)
    assert random_calls(tiny_task, [{"tests/test_calc.py": b"def test_x():\n    pass\n"}], 3, 0) == ()


def test_execution_vote_is_the_share_of_the_group_that_behaves_alike(tiny_task):
    patch = file_diff("calc/ops.py", tiny_task.original_file("calc/ops.py"), FIXED).text  # as info["patch"] has it
    broken = {"calc/ops.py": b"def add(a, b:\n"}
    group = [{"calc/ops.py": FIXED}, {"calc/ops.py": SAME}, {"calc/ops.py": HALF}, {}, broken, patch]
    result = execution_vote(tiny_task, group, inputs_per_function=6)
    assert result.votes == pytest.approx((2 / 5, 2 / 5, 0.0, 0.0, 0.0, 2 / 5))
    assert result.behaviour[0] == result.behaviour[1] == result.behaviour[5] != result.behaviour[2]
    assert result.errors[3] == "no changes" and result.errors[4] is None  # a broken module still behaves (it raises)
    assert result.calls == scenario_calls(tiny_task)  # the tests' calls of add and mul, perturbed
    own = execution_vote(tiny_task, group[:3], calls=["add(2, 3)", "mul(2, 3)"], setup="from calc.ops import add, mul")
    assert own.votes == (0.5, 0.5, 0.0)


def test_execution_vote_runs_candidates_only_in_the_sandbox(tiny_task, tmp_path):
    marker = tmp_path / "escaped"
    # the write cannot reach the host; whether it fails (private /tmp) or lands in the sandbox, the
    # candidate then behaves like FIXED
    evil = FIXED + f"\ntry:\n    open({str(marker)!r}, 'w').write('x')\nexcept OSError:\n    pass\n".encode()
    looping = FIXED.replace(b"return a * b", b"while True:\n        pass")
    result = execution_vote(tiny_task, [{"calc/ops.py": evil}, {"calc/ops.py": looping}, {"calc/ops.py": FIXED}],
                            inputs_per_function=2, per_call=1)
    assert not marker.exists()  # the host's /tmp is not the sandbox's
    # the looping mul times out per call
    assert result.errors == (None, None, None) and result.votes == (0.5, 0.0, 0.5)
