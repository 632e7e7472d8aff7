"""`code-gym eval` against a chat-completions server on 127.0.0.1 that answers with real tool calls:
the task's reference patch as str_replace calls (solved) or a bare submit (not), so the pass@k it
reports can be checked against a hand count; resuming plays only the missing (task, sample) pairs."""
import json
from collections import Counter

import pytest

import credit
from code_gym.actions.replay import patch_to_calls
from code_gym.apps.cli import main
from code_gym.apps.evaluate import pass_at_k
from code_gym.apps.records import EpisodeRecord, RolloutWriter, load_rollouts, records_path
from conftest import BUNDLED
from replay_server import ChatServer, status


def tool_calls(calls):
    return [{"id": f"call_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for i, c in enumerate(calls)]


class ReferenceServer(ChatServer):
    """Knows the task by its statement in the first message. The first `solve[task id]` conversations
    of a task get its reference patch as tool calls in one reply, then a submit; the others submit at
    once. `fail` names conversations (task id, k-th started) answered with HTTP 400 instead."""

    def __init__(self, tasks, solve, fail=()):
        super().__init__()
        self.tasks, self.solve, self.fail = list(tasks), dict(solve), set(fail)
        self.started = Counter()
        self.conversation = {}

    def respond(self, number, body):
        messages = body["messages"]
        task = next(t for t in self.tasks if t.statement.strip() in messages[0]["content"])
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn == 0:
            self.started[task.id] += 1
            if (task.id, self.started[task.id]) in self.fail:
                return status(400)
        solving = turn == 0 and self.started[task.id] <= self.solve.get(task.id, 0)
        calls = patch_to_calls(task.reference_patch, task.repo) if solving else [{"name": "submit", "arguments": {}}]
        message = {"role": "assistant", "content": "Fixing it." if solving else None, "tool_calls": tool_calls(calls)}
        return {"status": 200, "body": {"id": "x", "object": "chat.completion", "model": body["model"],
                                        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                                        "usage": {"prompt_tokens": 100 + turn, "completion_tokens": 10,
                                                  "total_tokens": 110 + turn}}}


def eval_args(url, out, tasks, *more):
    return ["eval", "--base-url", url, "--model", "m", "--tasks", *map(str, tasks), "--timeout", "30",
            "--retries", "0", "--out", str(out), *more]


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)  # pass@1 is c/n
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 3, 2) == 1.0  # fewer than k failures: always one right
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(2, 1, 3)


def test_eval_on_the_bundled_suite_matches_a_hand_count(tmp_path, capsys):
    tasks = BUNDLED
    solve = {t.id: i % 4 for i, t in enumerate(tasks)}  # 0..3 of the 3 samples solved (3 counts as 3)
    out = tmp_path / "eval"
    with ReferenceServer(tasks, solve) as server:
        code = main(eval_args(server.url, out, [t.root for t in tasks], "-n", "3", "-k", "1", "2", "3",
                              "--concurrency", "2"))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads((out / "summary.json").read_text())
    resolved = {t.id: min(solve[t.id], 3) for t in tasks}
    hand_pass2 = {0: 0.0, 1: 2 / 3, 2: 1.0, 3: 1.0}  # 1 - C(3-c, 2) / C(3, 2)
    assert summary["pass_at"]["1"] == pytest.approx(sum(c / 3 for c in resolved.values()) / len(tasks))
    assert summary["pass_at"]["2"] == pytest.approx(sum(hand_pass2[c] for c in resolved.values()) / len(tasks))
    assert summary["pass_at"]["3"] == pytest.approx(sum(c > 0 for c in resolved.values()) / len(tasks))
    assert summary["resolved"] == sum(resolved.values()) and summary["episodes"] == 3 * len(tasks)
    assert {t["task_id"]: t["resolved"] for t in summary["tasks"]} == resolved
    assert summary["incomplete"] == []
    # the server's usage, summed: each solved episode made 2 requests, each unsolved one 1
    requests = sum(2 if c else 1 for t in tasks for c in [k < resolved[t.id] for k in range(3)])
    assert summary["completion_tokens"] == 10 * requests
    rollouts = load_rollouts(out / "rollouts.jsonl")
    assert len(rollouts.trajectories) == 3 * len(tasks) and all(
        t.reward == 1.0 for t, r in zip(rollouts.trajectories, rollouts.records) if r.resolved)
    assert sorted((r.task_id, r.sample) for r in rollouts.records) == sorted(
        (t.id, k) for t in tasks for k in range(3))
    table_row = next(line for line in captured.out.splitlines() if line.startswith(tasks[1].id))
    assert "0.333" in table_row and "0.667" in table_row  # c = 1 of 3: pass@1 1/3, pass@2 2/3
    assert "pass@2" in captured.out and "rollouts" in captured.err  # the table; the progress bar


def test_eval_resumes_only_the_missing_samples_and_adds_samples(tiny_task, tmp_path, capsys):
    out = tmp_path / "eval"
    with ReferenceServer([tiny_task], {"tiny": 9}, fail={("tiny", 2)}) as server:
        code = main(eval_args(server.url, out, [tiny_task.root], "-n", "2", "--concurrency", "1"))
        assert code == 0 and server.started["tiny"] == 2
        first = capsys.readouterr().out
        assert "1 tasks have fewer than 2 finished samples" in first and "1 episode failed" in first

        code = main(eval_args(server.url, out, [tiny_task.root], "-n", "2"))
        assert code == 0 and server.started["tiny"] == 3  # only the failed sample again
        assert "1 found finished" in capsys.readouterr().out

        code = main(eval_args(server.url, out, [tiny_task.root], "-n", "3"))
        assert code == 0 and server.started["tiny"] == 4  # one more sample
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 3 and summary["resolved"] == 3 and summary["pass_at"]["3"] == 1.0
    records = load_rollouts(out / "rollouts.jsonl").records
    assert sorted(r.sample for r in records) == [0, 1, 2] and {r.model for r in records} == {"m"}


def test_a_folder_of_another_models_results_is_refused(tiny_task, tmp_path, capsys):
    out = tmp_path / "eval"
    with ReferenceServer([tiny_task], {"tiny": 1}) as server:
        assert main(eval_args(server.url, out, [tiny_task.root])) == 0
        requests = len(server.requests)
        code = main(eval_args(server.url, out, [tiny_task.root], "--model", "other"))
    assert code == 2 and len(server.requests) == requests
    assert "holds an evaluation of m: pass another --out for 'other'" in capsys.readouterr().err


def test_k_above_the_samples_is_refused_before_any_request(tiny_task, tmp_path, capsys):
    code = main(eval_args("http://127.0.0.1:9/v1", tmp_path / "eval", [tiny_task.root], "-n", "2", "-k", "5"))
    assert code == 2 and "-k 5 needs at least that many --samples (got 2)" in capsys.readouterr().err


def test_a_resumed_file_loses_what_a_crash_left_half_written(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    trajectory = credit.Trajectory("t", [credit.Step("a", "")], 1.0)
    writer = RolloutWriter(path, records=True)
    writer.write(trajectory, EpisodeRecord("t", 0, True, 1.0, 1, 0.5))
    writer.close()
    with path.open("a") as f:  # the crash: a whole trajectory line without its record, then half a line
        f.write(json.dumps(trajectory.to_dict()) + "\n" + '{"task_id": "t", "st')
    writer = RolloutWriter(path, records=True, append=True)
    writer.write(trajectory, EpisodeRecord("t", 1, False, 0.0, 1, 0.5))
    writer.close()
    rollouts = load_rollouts(path)
    assert [r.sample for r in rollouts.records] == [0, 1] and len(rollouts.trajectories) == 2
    assert len(records_path(path).read_text().splitlines()) == 2
