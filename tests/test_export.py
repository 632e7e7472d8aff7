"""`code-gym export sft` and `code-gym export predictions`, run for real on rollouts a local server
played: the SFT lines render through a real tokenizer's chat template (built here: no model is
downloaded) into text whose tool calls parse back into the episode's own calls, with the assistant
turns (what TRL's assistant-only loss trains on) masked exactly; the predictions' patches apply to
the SWE-bench instance's base commit and fix it."""
import json
import subprocess
import textwrap

import pytest

import credit
from code_gym.actions.parse import parse_action
from code_gym.actions.tools import TOOL_SCHEMAS
from code_gym.apps.cli import main
from code_gym.apps.export import call_outputs
from code_gym.apps.records import load_rollouts
from conftest import git
from replay_server import ChatServer

FIX_ADD = {"path": "calc/ops.py", "old_str": "def add(a, b):\n    return a - b", "new_str": "def add(a, b):\n    return a + b"}
FIX_MUL = {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b", "new_str": "def mul(a, b):\n    return a * b"}


def call(name, arguments, call_id):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def hermes(name, arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


SOLVER = [  # the model's turns in a solving conversation, in every form the client meets
    {"role": "assistant", "content": "Let me look, then fix add.",
     "tool_calls": [call("view", {"path": "calc/ops.py"}, "a"), call("str_replace", FIX_ADD, "b")]},
    {"role": "assistant", "content": "Now mul.\n" + hermes("str_replace", FIX_MUL)},  # no tool parser
    {"role": "assistant", "content": "Check the tests:\n```bash\npython -m pytest -q tests\n```"},  # a fenced block
    {"role": "assistant", "content": None, "tool_calls": [call("submit", {}, "c")]},
]
GIVE_UP = [{"role": "assistant", "content": None, "tool_calls": [call("submit", {}, "z")]}]


class ScriptServer(ChatServer):
    """The first `solvers` conversations play SOLVER, the others GIVE_UP; `script` picks by task."""

    def __init__(self, solvers=1, script=None):
        super().__init__()
        self.solvers, self.started, self.script = solvers, 0, script

    def respond(self, number, body):
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn == 0:
            self.started += 1
        script = self.script(body) if self.script else (SOLVER if self.started <= self.solvers else GIVE_UP)
        message = script[min(turn, len(script) - 1)]
        return {"status": 200, "body": {"id": "x", "object": "chat.completion", "model": body["model"],
                                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}}


@pytest.fixture
def evaluated(tiny_task, tmp_path):
    """An eval folder with two samples of the tiny task: one solved (SOLVER), one given up."""
    out = tmp_path / "eval"
    with ScriptServer(solvers=1) as server:
        code = main(["eval", "--base-url", server.url, "--model", "qwen-test", "--tasks", str(tiny_task.root),
                     "-n", "2", "--concurrency", "1", "--timeout", "30", "--out", str(out)])
    assert code == 0
    return out / "rollouts.jsonl"


# a Hermes / Qwen-style chat template with tools, tool calls, tool results and generation marks
TEMPLATE = textwrap.dedent("""\
    {%- if tools %}<|im_start|>system
    # Tools
    <tools>
    {%- for tool in tools %}
    {{ tool | tojson }}
    {%- endfor %}
    </tools><|im_end|>
    {% endif %}
    {%- for message in messages %}
    {%- if message.role == "assistant" %}<|im_start|>assistant
    {% generation %}{{ message.content or "" }}
    {%- for call in message.tool_calls or [] %}
    <tool_call>
    {"name": {{ call.function.name | tojson }}, "arguments": {{ call.function.arguments | tojson }}}
    </tool_call>
    {%- endfor %}<|im_end|>{% endgeneration %}
    {% elif message.role == "tool" %}<|im_start|>user
    <tool_response>
    {{ message.content }}
    </tool_response><|im_end|>
    {% else %}<|im_start|>{{ message.role }}
    {{ message.content }}<|im_end|>
    {% endif %}
    {%- endfor %}""")


def chat_tokenizer(texts):
    """A byte-level BPE tokenizer trained on `texts`, with TEMPLATE as its chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|im_start|>", "<|im_end|>"], show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, chat_template=TEMPLATE, eos_token="<|im_end|>",
                                   pad_token="<|im_end|>")


def test_sft_lines_render_through_a_chat_template_and_their_tool_calls_parse_back(evaluated, tmp_path, capsys):
    pytest.importorskip("transformers", reason="the chat-template check needs transformers (pip install -e '.[tiny-lm]')")
    out = tmp_path / "sft.jsonl"
    assert main(["export", "sft", str(evaluated), "--resolved", "--out", str(out)]) == 0
    assert "1 of 2 episodes" in capsys.readouterr().out
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["tools"] == TOOL_SCHEMAS and row["metadata"] == {"task_id": "tiny", "reward": 1.0, "sample": 0,
                                                                "resolved": True}
    messages = row["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant",
                                             "user", "assistant"]
    first = messages[1]
    assert first["content"] == "Let me look, then fix add."
    assert [c["function"] for c in first["tool_calls"]] == [{"name": "view", "arguments": {"path": "calc/ops.py"}},
                                                           {"name": "str_replace", "arguments": FIX_ADD}]
    view, replace = messages[2], messages[3]  # the step's observation split into each call's output
    assert view["tool_call_id"] == first["tool_calls"][0]["id"] and "def mul(a, b):" in view["content"]
    assert replace["name"] == "str_replace" and "steps left" not in replace["content"]
    assert messages[4]["content"] == "Now mul." and messages[4]["tool_calls"][0]["function"]["arguments"] == FIX_MUL
    assert "tool_calls" not in messages[6] and "```bash" in messages[6]["content"]  # the fenced block stays text
    assert "passed" in messages[7]["content"]  # its results as the user message the client sent

    tokenizer = chat_tokenizer([m["content"] or "" for m in messages] + [json.dumps(TOOL_SCHEMAS)])
    text = tokenizer.apply_chat_template(messages, tools=row["tools"], tokenize=False)
    for message in messages:
        assert (message["content"] or "") in text
    assistant_texts = [part.split("<|im_end|>")[0] for part in text.split("<|im_start|>assistant\n")[1:]]
    [trajectory] = [t for t in credit.load_jsonl(evaluated) if t.reward == 1.0]
    for rendered, step in zip(assistant_texts, trajectory.steps, strict=True):
        assert [(c.name, c.arguments) for c in parse_action(rendered).calls] == [
            (c.name, c.arguments) for c in parse_action(step.action).calls]
    encoded = tokenizer.apply_chat_template(messages, tools=row["tools"], return_dict=True,
                                            return_assistant_tokens_mask=True)
    ids, mask = encoded["input_ids"], encoded["assistant_masks"]
    assert tokenizer.decode(ids) == text  # the tokens hold the whole conversation
    trained = tokenizer.decode([i for i, m in zip(ids, mask) if m])
    assert trained == "".join(t + "<|im_end|>" for t in assistant_texts)  # exactly the model's turns


def test_sft_filters_by_reward_and_pass_band(evaluated, tmp_path, capsys):
    out = tmp_path / "sft.jsonl"
    assert main(["export", "sft", str(evaluated), "--min-reward", "0.5", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 1
    assert main(["export", "sft", str(evaluated), "--pass-band", "0.5", "0.5", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2  # the task's rate is 1/2: both episodes kept
    assert main(["export", "sft", str(evaluated), "--pass-band", "0.6", "1", "--out", str(out)]) == 1
    assert out.read_text() == "" and "0 of 2 episodes" in capsys.readouterr().out


def test_filters_that_need_records_say_so(evaluated, tmp_path, capsys):
    bare = tmp_path / "bare.jsonl"
    credit.dump_jsonl(credit.load_jsonl(evaluated), bare)  # the trajectories without their records
    assert main(["export", "sft", str(bare), "--resolved", "--out", str(tmp_path / "sft.jsonl")]) == 2
    assert "has no episode records" in capsys.readouterr().err and not (tmp_path / "sft.jsonl").exists()


def test_call_outputs_split_only_what_the_calls_wrote():
    observation = "[view]\nline one\n\n[bash]\n\n\n[str_replace error]\nno match\n\n(7 steps left)"
    assert call_outputs(observation, ["view", "bash", "str_replace"]) == ["line one", "", "no match"]
    assert call_outputs(observation, ["view", "str_replace"]) == ["line one\n\n[bash]\n", "no match"]
    assert call_outputs("[format error]\nerror: x\n\n[view]\ny\n\n(3 steps left)", ["view"]) is None
    assert call_outputs("[view]\ny\n\n(3 steps left)\n\n[code-gym context] elided", ["view"]) == [
        "y\n\n[code-gym context] elided"]


# --- SWE-bench predictions ------------------------------------------------------------------------

BUGGY = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\ndef spread(xs):\n    return max(xs) + min(xs)\n"
FIXED = BUGGY.replace("(len(xs) + 1)", "len(xs)").replace("max(xs) + min(xs)", "max(xs) - min(xs)")
TESTS = "from stats.ops import mean, spread\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n" \
        "def test_spread():\n    assert spread([1, 5]) == 4\n"


@pytest.fixture
def swebench_jsonl(tmp_path, monkeypatch):
    """A SWE-bench-style record (instance id with capitals and underscores) over a local clone."""
    monkeypatch.setenv("CODE_GYM_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "Acme__stats"
    (repo / "stats").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "stats" / "__init__.py").write_text("")
    (repo / "stats" / "ops.py").write_text(BUGGY)
    (repo / "tests" / "test_ops.py").write_text("def test_nothing():\n    pass\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    (repo / "stats" / "ops.py").write_text(FIXED)
    (repo / "tests" / "test_ops.py").write_text(TESTS)
    git("add", "-A", cwd=repo)
    patch, test_patch = git("diff", "--cached", "--", "stats", cwd=repo), git("diff", "--cached", "--", "tests", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "fix", cwd=repo)
    record = {"instance_id": "Acme__stats-7", "repo": "Acme/stats", "base_commit": base, "patch": patch,
              "test_patch": test_patch, "problem_statement": "mean() and spread() are wrong.",
              "FAIL_TO_PASS": ["tests/test_ops.py::test_mean", "tests/test_ops.py::test_spread"], "PASS_TO_PASS": []}
    path = tmp_path / "swe.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path, repo, base


def two_step_fix(body):
    """The fix in two steps on the same file, then submit: the final patch must chain them."""
    mean = {"path": "stats/ops.py", "old_str": "(len(xs) + 1)", "new_str": "len(xs)"}
    spread = {"path": "stats/ops.py", "old_str": "max(xs) + min(xs)", "new_str": "max(xs) - min(xs)"}
    return [{"role": "assistant", "content": None, "tool_calls": [call("str_replace", mean, "a")]},
            {"role": "assistant", "content": None, "tool_calls": [call("str_replace", spread, "b")]},
            {"role": "assistant", "content": None, "tool_calls": [call("submit", {}, "c")]}]


def test_predictions_hold_the_final_patch_that_fixes_the_instance(swebench_jsonl, tmp_path, capsys):
    jsonl, repo, base = swebench_jsonl
    rollouts = tmp_path / "r.jsonl"
    with ScriptServer(script=two_step_fix) as server:
        code = main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(jsonl), "--timeout", "60",
                     "--out", str(rollouts)])
    assert code == 0 and credit.load_jsonl(rollouts)[0].reward == 1.0
    out = tmp_path / "preds.jsonl"
    assert main(["export", "predictions", str(rollouts), "--tasks", str(jsonl), "--out", str(out)]) == 2
    assert "--model-name NAME" in capsys.readouterr().err  # `rollout` writes no records naming the model
    assert main(["export", "predictions", str(rollouts), "--tasks", str(jsonl), "--model-name", "my-model",
                 "--out", str(out)]) == 0
    [prediction] = [json.loads(line) for line in out.read_text().splitlines()]
    assert prediction["instance_id"] == "Acme__stats-7" and prediction["model_name_or_path"] == "my-model"
    checkout = tmp_path / "checkout"
    git("worktree", "add", "-q", "--detach", str(checkout), base, cwd=repo)
    subprocess.run(["git", "apply", "-"], input=prediction["model_patch"].encode(), cwd=checkout, check=True)
    assert (checkout / "stats" / "ops.py").read_text() == FIXED  # both steps, chained


def test_predictions_refuse_tasks_that_are_not_swebench_style(evaluated, tiny_task, tmp_path, capsys):
    code = main(["export", "predictions", str(evaluated), "--tasks", str(tiny_task.root), "--out",
                 str(tmp_path / "p.jsonl")])
    assert code == 2 and "task tiny has no SWE-bench instance id" in capsys.readouterr().err
    assert load_rollouts(evaluated).records[0].model == "qwen-test"


def test_a_format_error_reaches_the_model_and_the_sft_conversation_alike(tiny_task, tmp_path):
    mixed = [{"role": "assistant", "content": "<tool_call>{not json</tool_call>",
              "tool_calls": [call("view", {"path": "calc/ops.py"}, "a")]}] + GIVE_UP
    rollouts = tmp_path / "r.jsonl"
    with ScriptServer(script=lambda body: mixed) as server:
        assert main(["rollout", "--base-url", server.url, "--model", "m", "--tasks", str(tiny_task.root),
                     "--timeout", "30", "--out", str(rollouts)]) == 0
    sent = server.requests[1][1]["messages"][1:]
    assert [m["role"] for m in sent] == ["assistant", "tool", "user"] and "format error" in sent[2]["content"]
    out = tmp_path / "sft.jsonl"
    assert main(["export", "sft", str(rollouts), "--out", str(out)]) == 0
    messages = json.loads(out.read_text())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[3]["content"] == sent[2]["content"]  # what the model read, word for word
