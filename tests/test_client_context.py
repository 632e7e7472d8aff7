"""The model's context in the client (`ClientConfig.context_limit`): a conversation that outgrows it
has its oldest tool results elided (strategy "truncate") or is submitted for the agent and graded
(strategy "submit"), against a real server on 127.0.0.1; each event is in the outcome, in the
episode records and, as a note, in the step's observation: never a silent cut."""
import json

import pytest

import credit
from code_gym.apps.cli import main
from code_gym.apps.client import MESSAGE_TOKENS, ChatClient, ClientConfig, rollout
from code_gym.apps.records import CONTEXT_NOTE, SUBMITTED, TRUNCATED, load_rollouts
from code_gym.env.environment import CodeRepoEnv
from code_gym.env.episode import SUBMIT
from replay_server import ChatServer

FIX_ADD = {"path": "calc/ops.py", "old_str": "def add(a, b):\n    return a - b", "new_str": "def add(a, b):\n    return a + b"}
FIX_MUL = {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b", "new_str": "def mul(a, b):\n    return a * b"}
OUTPUT_CHARS = 3000  # each print below: about 1,000 tokens at the client's 3 characters a token
TURNS = [("bash", {"command": f"python3 -c \"print('a' * {OUTPUT_CHARS})\""}),
         ("bash", {"command": f"python3 -c \"print('b' * {OUTPUT_CHARS})\""}),
         ("str_replace", FIX_ADD), ("str_replace", FIX_MUL), ("submit", {})]
MAX_TOKENS = 100


class ScriptServer(ChatServer):
    """The model's turn n (assistant messages so far) is TURNS[n], as an OpenAI tool call."""

    def respond(self, number, body):
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        name, arguments = TURNS[min(turn, len(TURNS) - 1)]
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{turn}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}
        return {"status": 200, "body": {"id": "x", "object": "chat.completion", "model": body["model"],
                                        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}}


def first_prompt_tokens(client, task):
    env = CodeRepoEnv(tasks=[task], tool_schemas=False)
    try:
        observation, _ = env.reset(options={"task": task})
    finally:
        env.close()
    return client.prompt_tokens([{"role": "user", "content": observation}])


def limit_for(task, slack):
    """A context limit leaving `slack` tokens beyond the first prompt and the reply's max_tokens."""
    probe = ChatClient(ClientConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    try:
        return first_prompt_tokens(probe, task) + slack + MAX_TOKENS
    finally:
        probe.close()


def play(task, out, limit, strategy="truncate"):
    with ScriptServer() as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="m", timeout=30, retries=0, tokens=False,
                                         max_tokens=MAX_TOKENS, context_limit=limit, context_strategy=strategy))
        [outcome] = rollout([task], client, out, records=True)
        client.close()
    return outcome, [body for _, body in server.requests]


def test_truncate_elides_the_oldest_tool_result_and_records_it(tiny_task, tmp_path):
    # room for one 1,000-token output besides the prompt and the model's turns, not two
    outcome, requests = play(tiny_task, tmp_path / "r.jsonl", limit_for(tiny_task, 1600))
    assert outcome.error is None and outcome.resolved  # the episode went on to the fix
    [event] = outcome.context_events
    assert event.action == TRUNCATED and event.step == 2 and event.elided == 1 and event.kept <= event.budget
    before, after = requests[1]["messages"], requests[2]["messages"]
    assert "a" * OUTPUT_CHARS in before[2]["content"]
    assert after[2]["content"] == f"[elided to fit the model's context: {OUTPUT_CHARS + 1:,} characters of tool output]"
    assert "b" * OUTPUT_CHARS in after[4]["content"]  # the latest result is kept whole
    assert after[-1]["content"].endswith(event.note()) and CONTEXT_NOTE in event.note()
    assert after[0] == before[0]  # the task's prompt is never elided
    [trajectory] = credit.load_jsonl(tmp_path / "r.jsonl")
    assert trajectory.reward == 1.0 and trajectory.steps[2].observation.endswith(event.note())
    assert not any(CONTEXT_NOTE in (s.observation or "") for k, s in enumerate(trajectory.steps) if k != 2)
    [record] = load_rollouts(tmp_path / "r.jsonl").records
    assert record.context == (event,)


def test_submit_strategy_ends_and_grades_the_episode(tiny_task, tmp_path):
    outcome, requests = play(tiny_task, tmp_path / "r.jsonl", limit_for(tiny_task, 1600), strategy="submit")
    assert outcome.error is None and outcome.context_cut and len(requests) == 2
    [event] = outcome.context_events
    assert event.action == SUBMITTED and event.step == 2 and event.tokens > event.budget
    [trajectory] = credit.load_jsonl(tmp_path / "r.jsonl")
    last = trajectory.steps[-1]
    assert len(trajectory.steps) == 3 and last.action == SUBMIT and last.observation.endswith(event.note())
    assert trajectory.reward == 0.0  # graded as it stood: nothing fixed yet


def test_truncate_submits_when_eliding_every_older_result_is_not_enough(tiny_task, tmp_path):
    # room for less than one output: eliding the first cannot make the second fit
    outcome, _ = play(tiny_task, tmp_path / "r.jsonl", limit_for(tiny_task, 900))
    assert [e.action for e in outcome.context_events] == [SUBMITTED] and outcome.context_cut
    assert outcome.context_events[0].step == 1


def test_a_first_prompt_over_the_limit_fails_saying_what_to_do(tiny_task, tmp_path):
    outcome, requests = play(tiny_task, tmp_path / "r.jsonl", MAX_TOKENS + 10)
    assert outcome.trajectory is None and requests == []
    assert "raise --context-limit" in outcome.error and "over the 10 the context limit" in outcome.error


def test_the_servers_count_scales_later_estimates_up():
    client = ChatClient(ClientConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    messages = [{"role": "user", "content": "x" * 3000}]
    estimate = client.prompt_tokens(messages)
    client.calibrate(messages, {"prompt_tokens": 2 * estimate})
    assert client.prompt_tokens(messages) == 2 * estimate
    client.calibrate(messages, {"prompt_tokens": estimate // 4})  # a lower count never lowers the estimate
    assert client.prompt_tokens(messages) == 2 * estimate
    client.close()


def test_the_rollout_command_says_what_the_context_limit_did(tiny_task, tmp_path, capsys):
    limit = limit_for(tiny_task, 1600)
    with ScriptServer() as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--max-tokens", str(MAX_TOKENS), "--context-limit", str(limit), "--timeout", "30",
                     "--out", str(tmp_path / "r.jsonl")])
    assert code == 0
    assert "1 with older tool results elided to fit the model's context" in capsys.readouterr().out


def test_a_limit_no_reply_fits_is_refused_before_any_request(tiny_task, tmp_path, capsys):
    with ScriptServer() as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--context-limit", "50", "--out", str(tmp_path / "r.jsonl")])
    assert code == 2 and server.requests == []
    assert "the context limit (50 tokens) must exceed max_tokens (4096)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="context strategy 'drop' is not one of truncate, submit"):
        ChatClient(ClientConfig(base_url="http://127.0.0.1:9/v1", model="m", context_strategy="drop"))


def test_with_a_tokenizer_the_estimate_counts_its_tokens(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(["def add(a, b):\n    return a + b\n"] * 20, trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    client = ChatClient(ClientConfig(base_url="http://127.0.0.1:9/v1", model="m", tokenizer=str(tmp_path)))
    text = "def add(a, b):\n    return a + b\n" * 10
    assert client.text_tokens(text) == len(tokenizer.encode(text).ids) != -(-len(text) // 3)  # not the fallback
    assert client.message_tokens({"role": "user", "content": text}) == client.text_tokens(text) + MESSAGE_TOKENS
    client.close()
