"""How much of DiDPO's diff credit reaches tokens, per edit path, through the real env.

For each edit path (str_replace, create, insert, bash sed, bash heredoc, bash printf, python script,
OpenAI dict, served rollout) a group of G episodes on a small task writes one line in G
different ways (so the written lines lie in anchors), and `credit.didpo` runs with each
`cover`. Reported per path and cover: of the changed lines of steps that have an anchor occurrence,
the fraction whose A^D reaches at least one token (a token over the line's region has A^D: added
lines the env's provenance span, or its edit argument / call for "edit" / "call"; deleted lines
their text in the call, or the call's edit argument / call), and the fraction of all tokens with
A^D. Tokens: a word/punctuation/space split of the action (served rollouts: the tokens the replay
server's vLLM-format reply gives). Rewards: 1 .. 0 over the group's episodes in place of their
grades, so every anchor has a nonzero A^D (coverage, not learning, is measured). Also the cost of the per-call snapshots (`scan_changes`).

    python benchmarks/credit_coverage.py [--group 4]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

import credit  # noqa: E402
from code_gym.env import CodeRepoEnv  # noqa: E402
from code_gym.table import format_table, markdown_table  # noqa: E402
from code_gym.task import bundled_tasks, load_task  # noqa: E402
from code_gym.trajectory import RecordTrajectory  # noqa: E402
from code_gym.workspace import Workspace  # noqa: E402

TOKEN_RE = re.compile(r"<tool_call>|</tool_call>|\w+|[^\w\s]|\s+")
OPS = ["*", "**", "-", "%", "&", "|", "^", "<<"]
TASK = {
    "task.toml": 'id = "cov"\nkind = "bugfix"\nstatement = "mul() adds."\nvisible_tests = ["tests/test_calc.py"]\n'
                 'hidden_tests = ["tests/test_hidden.py"]\nprotected_paths = ["tests/"]\n'
                 'reference_patch = "solution.patch"\ntest_command = "python -m pytest"\n[timeouts]\ncommand = 10\ntests = 60\n',
    "solution.patch": "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
                      "@@ -1,6 +1,6 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n"
                      " def mul(a, b):\n-    return a + b\n+    return a * b\n",
    "repo/calc/__init__.py": "from calc.ops import add, mul\n",
    "repo/calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n",
    "repo/tests/test_calc.py": "def test_nothing():\n    pass\n",
    "hidden/tests/test_hidden.py": "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                                   "def test_mul():\n    assert mul(2, 3) == 6\n",
}


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


PATHS = {
    "str_replace": lambda op: call("str_replace", path="calc/ops.py", old_str="def mul(a, b):\n    return a + b",
                                   new_str=f"def mul(a, b):\n    return a {op} b"),
    "create": lambda op: call("create", path="calc/extra.py", file_text=f"VALUE = 3 {op} 2\n"),
    "insert": lambda op: call("insert", path="calc/ops.py", insert_line=6,
                              new_str=f"NEG = 1 {op} 2"),
    "bash sed": lambda op: call("bash", command=f"sed -i 's/return a + b/return a {op} b/' calc/ops.py"),
    "bash heredoc": lambda op: call("bash", command=f"cat > calc/extra.py <<'EOF'\nVALUE = 3 {op} 2\nEOF"),
    "bash printf": lambda op: call("bash", command=f"printf '%s\\n' 'VALUE = 3 {op} 2' > calc/extra.py"),
    "python script": lambda op: call("bash", command="python -c \"import pathlib; p = pathlib.Path('calc/ops.py'); "
                                     f"p.write_text(p.read_text().replace('return a + b', 'return a {op} b'))\""),
    "OpenAI dict": lambda op: {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c", "type": "function", "function": {"name": "str_replace", "arguments": json.dumps(
            {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b",
             "new_str": f"def mul(a, b):\n    return a {op} b"})}}]},
}


def tokens_of(text: str) -> np.ndarray:
    return np.array([m.span() for m in TOKEN_RE.finditer(text)], np.int64).reshape(-1, 2)


def play(task, actions, offsets=None):
    env = RecordTrajectory(CodeRepoEnv(tasks=[task], max_steps=10))
    env.reset(seed=0)
    infos = [env.step(a)[4] for a in actions]
    infos.append(env.step(call("submit"))[4])
    env.close()
    traj = infos[-1]["trajectory"]
    steps = [credit.Step.from_dict(s.to_dict(), token_offsets=tokens_of(s.action) if s.token_offsets is None
                                   else s.token_offsets) for s in traj.steps]
    return credit.Trajectory(task_id=traj.task_id, steps=steps, reward=traj.reward)


def rewarded(trajectories):
    """The episodes with distinct rewards 1, ..., 0 in place of their grades (all variants of a line
    would otherwise mostly grade alike, and an A^D of 0 reaches tokens invisibly)."""
    g = len(trajectories)
    return [credit.Trajectory(task_id=t.task_id, steps=t.steps, reward=1.0 - k / max(g - 1, 1))
            for k, t in enumerate(trajectories)]


def group(task, make, g):
    return rewarded([play(task, [make(OPS[k])]) for k in range(g)])


class Replay:
    """A chat-completions server on 127.0.0.1 that answers in vLLM's format (tool parser, logprobs,
    token ids): the n-th conversation writes variant n of the str_replace edit."""

    def __init__(self):
        self.started, self.lock = 0, threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                turn = sum(m["role"] == "assistant" for m in body["messages"])
                with replay.lock:
                    replay.started += turn == 0
                    k = replay.started - 1
                script = [("str_replace", {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b",
                                           "new_str": f"def mul(a, b):\n    return a {OPS[k]} b"})]
                name, args = (script + [("submit", {})])[min(turn, len(script))]
                raw = "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"
                pieces = TOKEN_RE.findall(raw) + ["<|im_end|>"]
                choice = {"index": 0, "finish_reason": "tool_calls", "token_ids": list(range(len(pieces))),
                          "message": {"role": "assistant", "content": None, "tool_calls": [
                              {"id": f"c{turn}", "type": "function",
                               "function": {"name": name, "arguments": json.dumps(args)}}]},
                          "logprobs": {"content": [{"token": p, "logprob": -0.1, "bytes": list(p.encode()),
                                                    "top_logprobs": []} for p in pieces]}}
                data = json.dumps({"id": "r", "object": "chat.completion", "choices": [choice]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def served_group(task, g, folder):
    from code_gym.apps.client import ChatClient, ClientConfig, rollout

    server = Replay()
    client = ChatClient(ClientConfig(base_url=server.url, model="m", timeout=30, retries=0))
    try:
        rollout([task], client, folder / "served.jsonl", episodes_per_task=g, concurrency=1, isolation="auto")
    finally:
        client.close()
        server.httpd.shutdown()
    return rewarded(credit.load_jsonl(folder / "served.jsonl"))


def _region(step, kind, path, line, call, cover):
    calls, edits = step.calls or (), step.edits or ()
    if cover == "call" and call < len(calls):
        return calls[call]
    if cover == "edit":
        for c, k, s, e in edits:
            if c == call and k == kind:
                return s, e
    if kind == "added":
        for p, ln, s, e in step.provenance or ():
            if p == path and ln == line:
                return s, e
        return None
    old = _deleted_text(step.diff, path, line)
    lo, hi = calls[call] if call < len(calls) else (0, len(step.action))
    at = step.action.find(old.strip(), lo, hi) if old and old.strip() else -1
    return (at, at + len(old.strip())) if at >= 0 else None


def _deleted_text(diff, path, line):
    from unidiff import PatchSet

    for f in PatchSet(diff):
        if f.path == path:
            for h in f:
                for ln in h:
                    if ln.is_removed and ln.source_line_no == line:
                        return ln.value.rstrip("\n")
    return ""


def coverage(trajectories, cover):
    result = credit.didpo(trajectories, cover=cover)
    rows = set(result.steps.diff_row.tolist())
    reached = total = 0
    row = 0
    for i, traj in enumerate(trajectories):
        for t, step in enumerate(traj.steps):
            if row in rows and step.line_calls:
                extra = np.asarray(result.tokens[i][t]) - result.episode[i]
                offsets = step.offsets
                for path, kind, line, c in step.line_calls:
                    region = _region(step, kind, path, line, c, cover)
                    total += 1
                    if region is not None:
                        hit = (offsets[:, 0] < region[1]) & (offsets[:, 1] > region[0])
                        reached += bool(np.any(extra[hit] != 0))
            row += 1
    return (reached / total if total else float("nan")), result.stats["coverage"]["tokens"], total


def scan_cost(runs=30):
    """Median ms of `Workspace.scan_changes` with nothing changed and with one file edited, on the
    bundled task with the most files."""
    task = max(bundled_tasks(), key=lambda t: sum(1 for _ in t.repo.rglob("*")))
    ws = Workspace(task.repo, git=True)
    try:
        target = next(p for p in sorted(ws.root.rglob("*.py")) if ".git" not in p.parts)
        idle, edit = [], []
        for k in range(runs):
            t0 = time.perf_counter()
            ws.scan_changes()
            idle.append(time.perf_counter() - t0)
            target.write_text(target.read_text() + f"\n# {k}\n")
            t0 = time.perf_counter()
            ws.scan_changes()
            edit.append(time.perf_counter() - t0)
        n_files = len(ws.last.keys)
    finally:
        ws.close()
    return task.id, n_files, statistics.median(idle) * 1e3, statistics.median(edit) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", type=int, default=4, help="episodes per path (distinct written lines)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    covers = ("lines", "edit", "call")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for rel, text in TASK.items():
            (folder / "cov" / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / "cov" / rel).write_text(text)
        task = load_task(folder / "cov")
        paths = {name: (lambda make=make: group(task, make, args.group)) for name, make in PATHS.items()}
        paths["served rollout"] = lambda: served_group(task, args.group, folder)
        for name, make_group in paths.items():
            trajectories = make_group()
            cells = [coverage(trajectories, c) for c in covers]
            rows.append([name, cells[0][2]] + [f"{100 * c[0]:.0f}% / {100 * c[1]:.0f}%" for c in cells])
            print(name, rows[-1][1:], flush=True)
    headers = ["path", "changed lines"] + [f"cover={c}: lines / tokens" for c in covers]
    scan = scan_cost()
    print(format_table(headers, rows))
    print(f"scan_changes on {scan[0]} ({scan[1]} files): {scan[2]:.2f} ms unchanged, {scan[3]:.2f} ms one file edited")
    if not args.no_write:
        body = (f"`python benchmarks/credit_coverage.py --group {args.group}`: each edit path through the real env, "
                f"{args.group} episodes writing the same line {args.group} ways (every written line is in an anchor). "
                "Per `cover`: the fraction of changed lines of anchored steps whose A^D reaches at least one token "
                "(a token over the line's region: added lines the env's provenance span, deleted lines their text "
                "in the call; the call's edit argument or the call itself for `edit` / `call`), then the fraction "
                "of all tokens with A^D.\n\n" + markdown_table(headers, rows) +
                f"\n\nThe per-call snapshots: `Workspace.scan_changes` on {scan[0]} ({scan[1]} files) takes "
                f"{scan[2]:.2f} ms when nothing changed and {scan[3]:.2f} ms after one file edit (median of 30); "
                "a step snapshots after each call that may write except the last, which the step's own scan "
                "covers, so a one-call step costs what it did before.")
        write_section("credit coverage", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
