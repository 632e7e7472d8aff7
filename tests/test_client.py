"""The model client against a real HTTP server on 127.0.0.1 that replays scripted chat completions."""
import json
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import credit
from code_gym import TOOL_NAMES
from code_gym.apps.cli import main
from code_gym.env.episode import SUBMIT
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
    assert not (tmp_path / "r.jsonl").exists() and len(server.requests) == 1


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



# --- Ctrl-C: a real SIGINT to a `code-gym rollout` process ----------------------------------------

class SlowServer(Server):
    """Server, each reply after `delay` seconds (so episodes are still running when the test signals)."""

    def __init__(self, delay):
        super().__init__()
        self.delay = delay

    def respond(self, number: int, body: dict) -> dict:
        return {**super().respond(number, body), "delay": self.delay}


def start_rollout(url, task, out, episodes):
    command = "import sys; from code_gym.apps.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", command, "rollout", "--base-url", url, "--model", "m",
                             "--tasks", str(task.root), "--episodes", str(episodes), "--concurrency", "2",
                             "--timeout", "10", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_requests(server, n, running):
    """Until the server has seen `n` requests; fails when the rollout ends (`running()` false) first."""
    deadline = time.monotonic() + 60
    while len(server.requests) < n:
        assert running() and time.monotonic() < deadline, "the rollout ended before sending its requests"
        time.sleep(0.02)


def test_ctrl_c_starts_no_more_episodes_writes_the_running_ones_and_exits_130(tiny_task, tmp_path):
    out = tmp_path / "r.jsonl"
    with SlowServer(delay=0.4) as server:
        proc = start_rollout(server.url, tiny_task, out, episodes=6)
        wait_for_requests(server, 2, lambda: proc.poll() is None)  # both running episodes have sent their first request
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Ctrl-C again to abandon them" in stderr
    assert sum(len(body["messages"]) == 1 for _, body in server.requests) == 2  # no episode started after it
    trajectories = credit.load_jsonl(out)
    assert len(trajectories) == 2 and all(t.reward == 1.0 and len(t.steps) == 3 for t in trajectories)
    assert "2 trajectories ->" in stdout and "interrupted (Ctrl-C): 2 of 6 episodes played, 4 never started" in stdout


def test_a_second_ctrl_c_abandons_the_running_episodes_at_their_next_request(tiny_task, tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text("an earlier run's line\n")
    with SlowServer(delay=1.0) as server:  # the second Ctrl-C lands while the first replies are in flight
        proc = start_rollout(server.url, tiny_task, out, episodes=6)
        wait_for_requests(server, 2, lambda: proc.poll() is None)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert len(server.requests) == 2  # the replies in flight came back; no request after them
    assert "0 of 6 episodes played, 2 abandoned, 4 never started" in stdout and "0 episodes failed" in stdout
    assert out.read_text() == "an earlier run's line\n"  # nothing finished: the file is as it was


# --- the context limit: vLLM refuses a conversation that outgrew the model's context --------------

CONTEXT_400 = {"status": 400, "body": {
    "object": "error", "type": "BadRequestError", "param": None, "code": 400,
    "message": "This model's maximum context length is 8192 tokens. However, you requested 8900 tokens (4804 in the "
               "messages, 4096 in the completion). Please reduce the length of the messages or completion."}}


class ContextLimitServer(VllmReplayServer):
    """VllmReplayServer until the conversation holds `from_turn` replies, then vLLM's context-length 400."""

    def __init__(self, from_turn):
        super().__init__()
        self.from_turn = from_turn

    def respond(self, number: int, body: dict) -> dict:
        if sum(m["role"] == "assistant" for m in body["messages"]) >= self.from_turn:
            return CONTEXT_400
        return super().respond(number, body)


def test_an_episode_cut_by_the_context_limit_is_graded_as_submitted_and_recorded(tiny_task, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    with ContextLimitServer(from_turn=1) as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--timeout", "5", "--retries", "2", "--out", str(out)])
    assert code == 0 and len(server.requests) == 2  # the refusal is not retried
    [trajectory] = credit.load_jsonl(out)
    written, submit = trajectory.steps
    assert "+    return a + b" in written.diff and len(written.offsets) == len(written.logprobs) > 0
    assert submit.action == SUBMIT and submit.offsets.shape == (0, 2)  # the client submitted: the model wrote nothing
    assert 0.0 < trajectory.reward < 1.0  # graded as it stood: add fixed, mul not
    assert "1 cut by the model's context limit (graded as if submitted)" in capsys.readouterr().out
    assert credit.didpo([trajectory]).tokens[0][1].size == 0


def test_a_first_prompt_over_the_context_limit_fails_its_episode_saying_what_to_do(tiny_task, tmp_path):
    with ContextLimitServer(from_turn=0) as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="m", timeout=5, retries=2))
        [outcome] = rollout([tiny_task], client, tmp_path / "r.jsonl")
        client.close()
    assert outcome.trajectory is None and not outcome.context_cut and len(server.requests) == 1
    assert "maximum context length" in outcome.error and "--max-model-len" in outcome.error


# --- the out file ----------------------------------------------------------------------------------

def test_the_out_file_is_untouched_until_an_episode_finishes_and_readable_midway(tiny_task, tmp_path):
    out = tmp_path / "r.jsonl"
    earlier = "".join(json.dumps({"line": k}) + "\n" for k in range(8))
    out.write_text(earlier)
    client = ChatClient(config("http://127.0.0.1:9/v1"))  # nothing listens there: every request fails
    [outcome] = rollout([tiny_task], client, out)
    client.close()
    assert "failed 3 times" in outcome.error and out.read_text() == earlier

    with Server(faults={4: "timeout"}) as server:  # the second episode's first request: past the client's timeout
        client = ChatClient(config(server.url, tokens=False))
        run = threading.Thread(target=rollout, args=([tiny_task], client, out),
                               kwargs={"episodes_per_task": 2, "concurrency": 1})
        run.start()
        wait_for_requests(server, 4, run.is_alive)
        midway = credit.load_jsonl(out)  # the first episode, whole, while the second is running
        run.join()
        client.close()
    assert len(midway) == 1 and midway[0].reward == 1.0
    assert len(credit.load_jsonl(out)) == 2


# --- odd replies -------------------------------------------------------------------------------------

def content_not_a_list(choice):
    choice["logprobs"]["content"] = "oops"


def token_ids_as_strings(choice):
    choice["token_ids"] = [str(i) for i in choice["token_ids"]]


def tool_calls_not_a_list(choice):
    choice["message"] = {**choice["message"], "tool_calls": {"name": "submit"}}


class OddReplyServer(VllmReplayServer):
    """VllmReplayServer, with `odd(choice)` applied to the replies that `which(number)` picks."""

    def __init__(self, odd, which):
        super().__init__()
        self.odd, self.which = odd, which

    def respond(self, number: int, body: dict) -> dict:
        reply = super().respond(number, body)
        if self.which(number):
            self.odd(reply["body"]["choices"][0])
        return reply


@pytest.mark.parametrize("odd, field", [(content_not_a_list, "logprobs.content"), (token_ids_as_strings, "token_ids"),
                                        (tool_calls_not_a_list, "message.tool_calls")])
def test_a_malformed_reply_fails_only_its_episode(odd, field, tiny_task, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    with OddReplyServer(odd, which=lambda number: number == 1) as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--episodes", "2", "--concurrency", "1", "--timeout", "5", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and f"the server's reply is malformed: {field} is" in captured.err
    assert "1 trajectory ->" in captured.out and "1 episode failed" in captured.out
    [trajectory] = credit.load_jsonl(out)  # the second episode, whole
    assert all(step.offsets is not None and step.logprobs is not None for step in trajectory.steps)


def logprob_missing(choice):
    del choice["logprobs"]["content"][1]["logprob"]


def logprob_null(choice):
    choice["logprobs"]["content"][1]["logprob"] = None


@pytest.mark.parametrize("odd", [logprob_missing, logprob_null])
def test_a_token_without_a_logprob_leaves_the_steps_logprobs_absent_and_warns_once(odd, tiny_task, tmp_path):
    out = tmp_path / "r.jsonl"
    with OddReplyServer(odd, which=lambda number: True) as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="m", timeout=5, retries=0))
        with pytest.warns(UserWarning) as caught:
            outcomes = rollout([tiny_task], client, out, episodes_per_task=2, concurrency=1)
        client.close()
    assert [o.error for o in outcomes] == [None, None]
    [warning] = [w for w in caught if "logprob" in str(w.message)]
    assert "5 of 5 recorded steps came with a token that has no numeric logprob" in str(warning.message)
    for trajectory in credit.load_jsonl(out):
        for step in trajectory.steps:  # never a made-up logprob; the tokens themselves are kept
            assert step.logprobs is None and len(step.token_ids) == len(step.offsets) > 0


# --- steps without tokens, and --tokenizer ---------------------------------------------------------------

def test_steps_without_logprobs_warn_once_with_their_count(tiny_task, tmp_path):
    with Server() as server:
        client = ChatClient(config(server.url))
        with pytest.warns(UserWarning) as caught:
            rollout([tiny_task], client, tmp_path / "r.jsonl", episodes_per_task=2, concurrency=2)
        client.close()
    [warning] = [str(w.message) for w in caught]
    assert "6 of 6 recorded steps have no tokens" in warning and "6 came without logprobs" in warning
    assert "--tokenizer PATH" in warning


def llama_json(choice):
    """The model wrote its calls as llama3_json (a tool parser turned them into tool_calls): the
    sampled text holds no Hermes <tool_call> blocks to place."""
    calls = [c["function"] for c in choice["message"].get("tool_calls") or []]
    if calls:
        raw = "; ".join(json.dumps({"name": c["name"], "parameters": json.loads(c["arguments"])}) for c in calls)
        choice.update({key: value for key, value in vllm_choice(raw, choice["message"], {}).items()
                       if key in ("logprobs", "token_ids")})


def test_tool_calls_the_client_cannot_place_warn_and_a_tokenizer_records_their_tokens(tiny_task, tmp_path, capsys):
    with OddReplyServer(llama_json, which=lambda number: True) as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="m", timeout=5, retries=0))
        with pytest.warns(UserWarning) as caught:
            rollout([tiny_task], client, tmp_path / "r.jsonl")
        client.close()
    [warning] = [str(w.message) for w in caught]
    assert "2 of 3 recorded steps have no tokens" in warning and "2 held tool calls the client cannot place" in warning

    folder = tmp_path / "tok"
    folder.mkdir()
    tiny_tokenizer().save(str(folder / "tokenizer.json"))
    out = tmp_path / "tok.jsonl"
    with OddReplyServer(llama_json, which=lambda number: True) as server:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no step without tokens now
            code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                         "--timeout", "5", "--tokenizer", str(folder), "--out", str(out)])
    assert code == 0
    assert all(step.token_ids is not None for t in credit.load_jsonl(out) for step in t.steps)


def test_a_wrong_tokenizer_path_is_an_error_naming_it_before_any_request(tiny_task, tmp_path, capsys):
    missing = tmp_path / "no-such" / "tokenizer.json"
    with Server() as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--tokenizer", str(missing), "--out", str(tmp_path / "r.jsonl")])
    assert code == 2 and server.requests == []
    assert f"tokenizer '{missing}': no such file" in capsys.readouterr().err
    with pytest.raises(ValueError, match="holds no tokenizer.json"):
        ChatClient(config(server.url, tokenizer=str(tmp_path)))


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator([json.dumps(FIX_ADD), json.dumps(FIX_MUL)] * 5, trainer)
    return tokenizer
