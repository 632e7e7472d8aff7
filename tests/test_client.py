"""The model client against a real HTTP server on 127.0.0.1 that replays scripted chat completions."""
import json

import numpy as np
import pytest

import credit
from code_gym import TOOL_NAMES
from code_gym.apps.cli import main
from code_gym.apps.client import ChatClient, ClientConfig, response_text, rollout
from replay_server import ChatServer, status

FIX_ADD = {"path": "calc/ops.py", "old_str": "def add(a, b):\n    return a - b", "new_str": "def add(a, b):\n    return a + b"}
FIX_MUL = {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b", "new_str": "def mul(a, b):\n    return a * b"}


def tool_calls_reply(name, arguments, call_id):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def text_reply(name, arguments):
    call = json.dumps({"name": name, "arguments": arguments})
    return {"role": "assistant", "content": f"Now mul.\n<tool_call>\n{call}\n</tool_call>"}


# the model's turn n (counted by the assistant messages already in the conversation)
SCRIPT = [tool_calls_reply("str_replace", FIX_ADD, "call_1"), text_reply("str_replace", FIX_MUL),
          tool_calls_reply("submit", {}, "call_2")]


def completion(body: dict, choice: dict) -> dict:
    return {"status": 200, "body": {"id": "x", "object": "chat.completion", "model": body["model"], "choices": [choice]}}


class Server(ChatServer):
    """Replies by conversation state, with faults injected by request number."""

    def __init__(self, faults=None):
        super().__init__()
        self.faults = dict(faults or {})

    def respond(self, number: int, body: dict) -> dict:
        fault = self.faults.pop(number, None)
        if fault == "timeout":  # longer than the client's timeout: the client gives up and retries
            return {**status(500), "delay": 1.5}
        if isinstance(fault, int):
            return status(fault)
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        return completion(body, {"index": 0, "message": SCRIPT[min(turn, len(SCRIPT) - 1)], "finish_reason": "stop"})


def config(url, **kw):
    return ClientConfig(base_url=url, model="qwen-test", timeout=0.5, retries=2, backoff=0.01, **kw)


def test_episode_through_a_real_server_with_a_500_and_a_timeout_retried(tiny_task, tmp_path):
    with Server(faults={1: 500, 3: "timeout"}) as server:
        client = ChatClient(config(server.url))
        outcomes = rollout([tiny_task], client, tmp_path / "r.jsonl", episodes_per_task=1, concurrency=1)
        client.close()
    [outcome] = outcomes
    assert outcome.error is None and outcome.resolved and client.retried == 2
    [trajectory] = credit.load_jsonl(tmp_path / "r.jsonl")
    assert trajectory.reward == 1.0 and len(trajectory.steps) == 3
    first, second = trajectory.steps[0], trajectory.steps[1]
    assert first.action.startswith("<tool_call>") and "+    return a + b" in first.diff
    [(path, line, start, end)] = first.provenance
    assert first.action[start:end] == "    return a + b"  # provenance into the rendered tool-call text
    assert second.action.startswith("Now mul.") and "+    return a * b" in second.diff

    paths = {path for path, _ in server.requests}
    assert paths == {"/v1/chat/completions"} and len(server.requests) == 5
    body = server.requests[-1][1]
    assert body["model"] == "qwen-test" and [t["function"]["name"] for t in body["tools"]] == list(TOOL_NAMES)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    tool_message = body["messages"][2]
    assert tool_message["tool_call_id"] == "call_1" and "calc/ops.py" in tool_message["content"]
    assert body["messages"][1]["tool_calls"][0]["function"]["name"] == "str_replace"
    assert "## Tool schemas" not in body["messages"][0]["content"]  # the schemas travel in `tools`


def test_concurrent_episodes_and_the_rollout_command(tiny_task, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    with Server() as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--episodes", "3", "--concurrency", "3", "--timeout", "5", "--out", str(out)])
    assert code == 0
    trajectories = credit.load_jsonl(out)
    assert len(trajectories) == 3 and all(t.reward == 1.0 for t in trajectories)
    assert credit.didpo(trajectories).episode.tolist() == [0.0, 0.0, 0.0]
    assert "3 trajectories" in capsys.readouterr().out


def test_a_refused_request_fails_the_episode_without_retrying(tiny_task, tmp_path):
    with Server(faults={1: 400}) as server:
        client = ChatClient(config(server.url))
        [outcome] = rollout([tiny_task], client, tmp_path / "r.jsonl")
        client.close()
    assert outcome.trajectory is None and "refused" in outcome.error and client.retried == 0
    assert (tmp_path / "r.jsonl").read_text() == "" and len(server.requests) == 1


def test_retries_are_bounded(tiny_task, tmp_path):
    with Server(faults={1: 503, 2: 503, 3: 503}) as server:
        client = ChatClient(config(server.url))
        [outcome] = rollout([tiny_task], client, tmp_path / "r.jsonl")
        client.close()
    assert "failed 3 times" in outcome.error and "HTTP 503" in outcome.error and len(server.requests) == 3


def test_response_text_renders_tool_calls_as_hermes():
    text = response_text({"content": "Looking.", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "view", "arguments": '{"path": "."}'}},
        {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{broken"}}]})
    assert text == ('Looking.\n<tool_call>\n{"name": "view", "arguments": {"path": "."}}\n</tool_call>\n'
                    '<tool_call>\n{"name": "bash", "arguments": "{broken"}\n</tool_call>')


def test_bad_settings_are_rejected(tiny_task, tmp_path):
    client = ChatClient(config("http://127.0.0.1:9/v1"))
    with pytest.raises(ValueError, match="concurrency"):
        rollout([tiny_task], client, tmp_path / "r.jsonl", concurrency=0)
    client.close()


# --- served rollouts with tokens: a replay server that answers in vLLM's format --------------------

PIECE_RE = __import__("re").compile(r"<\|im_end\|>|<tool_call>|</tool_call>|\w+|[^\w\s]|\s+")


def vllm_choice(raw, message, vocab):
    """A choice as vLLM's chat completions return it with logprobs=true and return_token_ids=true:
    `logprobs.content` (token text, logprob, utf-8 bytes, top_logprobs) and `token_ids`."""
    pieces = PIECE_RE.findall(raw + "<|im_end|>")
    assert "".join(pieces) == raw + "<|im_end|>"
    ids = [vocab.setdefault(p, len(vocab)) for p in pieces]
    content = [{"token": p, "logprob": -0.01 * (k % 7), "bytes": list(p.encode()), "top_logprobs": []}
               for k, p in enumerate(pieces)]
    return {"index": 0, "message": message, "logprobs": {"content": content}, "finish_reason": "stop",
            "stop_reason": None, "token_ids": ids}


def parsed_reply(name, arguments, call_id):
    """What a server with the hermes tool parser returns: the calls moved out of `content`."""
    raw = "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
    return raw, tool_calls_reply(name, arguments, call_id)


def text_only(name, arguments, thought):
    raw = f"{thought}\n<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
    return raw, {"role": "assistant", "content": raw}


WRONG_ADD = {**FIX_ADD, "new_str": "def add(a, b):\n    return a * b"}
EPISODES = [  # episode k (in the order their first request comes), turn by turn
    [parsed_reply("str_replace", FIX_ADD, "c1"), text_only("str_replace", FIX_MUL, "Now mul \u00e9."),
     parsed_reply("submit", {}, "c2")],
    [parsed_reply("str_replace", WRONG_ADD, "c1"), parsed_reply("submit", {}, "c2")],
]


class VllmReplayServer(ChatServer):
    """Replays recorded vLLM-format replies: the n-th conversation gets EPISODES[n]."""

    def __init__(self):
        super().__init__()
        self.vocab, self.started = {}, 0

    def respond(self, number: int, body: dict) -> dict:
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn == 0:
            self.started += 1
        script = EPISODES[(self.started - 1) % len(EPISODES)]
        raw, message = script[min(turn, len(script) - 1)]
        return completion(body, vllm_choice(raw, message, self.vocab))


def test_served_rollout_records_tokens_and_round_trips_into_token_advantages(tiny_task, tmp_path):
    out = tmp_path / "r.jsonl"
    with VllmReplayServer() as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="qwen-test", timeout=5, retries=0))
        outcomes = rollout([tiny_task], client, out, episodes_per_task=2, concurrency=1)
        client.close()
    assert [o.error for o in outcomes] == [None, None]
    body = server.requests[0][1]
    assert body["logprobs"] is True and body["return_token_ids"] is True
    trajectories = credit.load_jsonl(out)
    # the wrong add (a * b) scores no more than the untouched repo (0): the default reward's probes
    # also see behaviour the untouched add had right and a * b breaks (a regression probe, below 0)
    assert trajectories[0].reward == 1.0 and trajectories[1].reward <= 0.0
    assert [p.name for p in tmp_path.glob("r*")] == ["r.jsonl"]  # ids and logprobs in the same line
    good = trajectories[0]
    first, second = good.steps[0], good.steps[1]
    # the action is what the model wrote (the tool call the parser moved out of content), token for token
    assert first.action.startswith("<tool_call>\n{\"name\": \"str_replace\"") and "<|im_end|>" not in first.action
    assert second.action.startswith("Now mul \u00e9.")
    vocab = server.vocab
    for traj in trajectories:
        for step in traj.steps:
            offsets = step.offsets
            assert offsets is not None and len(step.token_ids) == len(step.logprobs) == len(offsets)
            # the ids and logprobs the server sent, token for token (the replay's k-th logprob is -0.01 (k % 7))
            assert [vocab[step.action[a:b]] for a, b in offsets[:-1]] == step.token_ids[:-1].tolist()
            np.testing.assert_allclose(step.logprobs, -0.01 * (np.arange(len(offsets)) % 7))
            assert "".join(step.action[a:b] for a, b in offsets) == step.action  # the pieces rebuild the text
            assert tuple(offsets[-1]) == (len(step.action),) * 2  # the end-of-turn token: zero-width
            assert step.calls and step.line_calls is not None or not step.diff
    result = credit.didpo(trajectories)
    assert all(t is not None for row in result.tokens for t in row)
    [(path, line, start, end)] = first.provenance
    assert first.action[start:end] == "    return a + b"
    # every credited token carries A^E + A^D of an anchor occurrence of its step; the bad episode's
    # written line `return a * b` is one (grouped with the good episode's mul fix)
    rows = [0, len(good.steps)]
    for i, row in enumerate(rows):
        values = result.steps.diff_advantage[result.steps.diff_row == row]
        extra = np.asarray(result.tokens[i][0]) - result.episode[i]
        assert values.size and np.isin(np.round(extra[extra != 0], 9), np.round(values, 9)).all()
    bad = trajectories[1].steps[0]
    [(_, _, start, end)] = bad.provenance
    assert bad.action[start:end] == "    return a * b"
    hit = (bad.offsets[:, 0] < end) & (bad.offsets[:, 1] > start)
    extra = np.asarray(result.tokens[1][0])[hit] - result.episode[1]
    assert hit.any() and np.all(extra < 0)  # the wrong line's tokens get the anchor's negative A^D


def test_sampled_tokens_reads_vllm_token_id_strings_and_split_characters():
    from code_gym.apps.client import sampled_tokens

    e_acute = "\u00e9".encode()
    choice = {"message": {"content": "a\u00e9"}, "logprobs": {"content": [
        {"token": "token_id:5", "logprob": -0.5, "bytes": [97]},
        {"token": "token_id:6", "logprob": -0.25, "bytes": [e_acute[0]]},
        {"token": "token_id:7", "logprob": -0.125, "bytes": [e_acute[1]]}]}}
    text, tokens = sampled_tokens(choice)
    assert text == "a\u00e9" and tokens.token_ids == [5, 6, 7] and tokens.logprobs == [-0.5, -0.25, -0.125]
    assert tokens.offsets == [(0, 1), (1, 1), (1, 2)]  # a split character belongs to the token that ends it
