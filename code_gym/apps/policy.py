"""The built-in learnable policy: a softmax over candidate edits for each region a task's reference
patch changes. It trains on CPU in seconds and acts through the real environment with real
tool-call text, so credit estimators see what they would see from a language model.

Each hunk of the reference patch is one *decision*. Its candidates, each one response of the agent
(a shared thought, then one Hermes `<tool_call>`):

- `reference`: the hunk as a `str_replace` (old_str: the hunk's source text, context included);
- wrong variants, up to `variants` of them: an AST mutation of the reference's changed lines
  (`code_gym.languages.python.builder.mutations`: flip-comparison, off-by-one, swap-arguments, drop-condition),
  or `partial`: the hunk with one of its blocks of changed lines left out;
- `untouched`: a `view` of the region, which edits nothing.

An episode plays one candidate per decision, in patch order, then `submit`: the decisions decide
the outcome together (every task in the suite needs every hunk).

The policy is the smallest autoregressive model of those texts. A decision's candidates share a
prefix (the thought, `<tool_call>`, ...) and part ways at a few characters: the tool name
(`str_replace` or `view`), then the first character where two edits differ. Each such *branch*
point has learnable logits over the ways on; a candidate's probability is the product of the
branch probabilities along its path. A language model's policy gradient puts each token's
advantage on that token's own log-probability; here only the branch tokens carry any, so
`EditPolicy.update` ascends mean_b sum_(branch n on the path of b) A_(b,n) log pi_n(way_b), with
A_(b,n) the estimator's advantage of the token at branch n. A credit estimator that puts more
credit on the lines an edit changed (DiDPO) thus reaches exactly the choice between edits, and the
choice to edit at all is made at the tool name, which no diff covers.
"""
from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from unidiff import PatchSet

from code_gym import languages
from code_gym.actions.replay import hermes, unique_edit
from code_gym.tasks.task import Task, TaskError
from code_gym.grading.reference import reference_changes

REFERENCE = "reference"
UNTOUCHED = "untouched"
PARTIAL = "partial"
# a word-level stand-in for a model's tokenizer: words, runs of whitespace, single symbols
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Candidate:
    kind: str  # REFERENCE, UNTOUCHED, PARTIAL, or a mutation operator
    action: str  # the response text: thought + one Hermes tool call
    call: tuple[int, int]  # character span of the tool call in `action`


@dataclass(frozen=True)
class Decision:
    """One region of the reference patch and the ways the agent may treat it."""
    path: str
    lines: tuple[int, int]  # first and last line of the region in the original file
    candidates: tuple[Candidate, ...]  # candidates[0] is the reference

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c.kind for c in self.candidates)

    @cached_property
    def branches(self) -> tuple["Branch", ...]:
        return branches([c.action for c in self.candidates])


@dataclass(frozen=True)
class Branch:
    """A point where candidate texts that agree up to `position` part ways."""
    position: int  # character offset (in each of these candidates' actions) of the first difference
    ways: tuple[tuple[int, ...], ...]  # the candidate indices that go each way

    def way(self, candidate: int) -> int | None:
        """The way `candidate` goes here (None: it does not pass this branch)."""
        return next((k for k, members in enumerate(self.ways) if candidate in members), None)


def branches(texts: Sequence[str]) -> tuple[Branch, ...]:
    """The branch points of the prefix tree of `texts`, parents before children."""
    out: list[Branch] = []
    pending = [(tuple(range(len(texts))), 0)]
    while pending:
        members, start = pending.pop(0)
        if len(members) < 2:
            continue
        position = start + len(os.path.commonprefix([texts[i][start:] for i in members]))
        ways: dict[str, list[int]] = {}
        for i in members:
            ways.setdefault(texts[i][position:position + 1], []).append(i)
        out.append(Branch(position, tuple(tuple(w) for w in ways.values())))
        pending += [(tuple(w), position) for w in ways.values()]
    return tuple(out)


def token_offsets(text: str) -> np.ndarray:
    """(n, 2) character spans of the word-level tokens of `text`."""
    spans = [m.span() for m in _TOKEN.finditer(text)]
    return np.asarray(spans, np.int64).reshape(-1, 2)


def build_decisions(task: Task, variants: int = 2, seed: int = 0) -> list[Decision]:
    """The decisions of `task`: one per hunk of its reference patch, each with the reference edit,
    up to `variants` wrong variants (drawn with `seed`) and the untouched option."""
    if variants < 0:
        raise ValueError(f"variants must be >= 0, got {variants}")
    patched = reference_changes(task)
    decisions = []
    for pf in PatchSet(task.reference_patch):
        if pf.is_added_file or pf.is_removed_file or pf.is_binary_file:
            raise TaskError(f"{task.id}: the built-in policy edits existing text files only; "
                            f"{pf.path} is added, removed or binary in the reference patch")
        original = (task.repo / pf.path).read_text()
        new_file = (patched.get(pf.path) or b"").decode()
        for hunk in pf:
            decisions.append(_decision(task, pf.path, original, new_file, hunk, variants,
                                       random.Random(f"{task.id}:{len(decisions)}:{seed}")))
    return decisions


def _decision(task: Task, path: str, original: str, new_file: str, hunk, variants: int,
              rng: random.Random) -> Decision:
    old = "".join(line.value for line in hunk if not line.is_added)
    new = "".join(line.value for line in hunk if not line.is_removed)
    edit = unique_edit(original, old, new)
    if edit is None:
        raise TaskError(f"{task.id}: {path}: the hunk at line {hunk.source_start} cannot be located uniquely")
    old_str, new_str = edit
    pre = old_str[: old_str.index(old)] if old else ""
    post = old_str[len(pre) + len(old):]
    wrong = _pick(_mutations(languages.of(task).mutations, path, new_file, hunk) + _partials(hunk), variants, rng)
    first, last = hunk.source_start, hunk.source_start + max(hunk.source_length, 1) - 1
    thought = f"Next I handle {path}, lines {first}-{last}."

    def edit_call(text: str) -> dict:
        return {"name": "str_replace", "arguments": {"path": path, "old_str": old_str, "new_str": text}}

    calls = [(REFERENCE, edit_call(new_str))]
    seen = {new_str, old_str}
    for kind, text in wrong:
        widened = pre + text + post
        if widened not in seen:
            seen.add(widened)
            calls.append((kind, edit_call(widened)))
    calls.append((UNTOUCHED, {"name": "view", "arguments": {"path": path, "view_range": [first, last]}}))
    return Decision(path, (first, last), tuple(_candidate(kind, call, thought) for kind, call in calls))


def _candidate(kind: str, call: dict, thought: str) -> Candidate:
    action = hermes([call], thought)
    body = json.dumps(call)
    start = action.index(body)
    return Candidate(kind, action, (start, start + len(body)))


def _pick(pool: list[tuple[str, str]], count: int, rng: random.Random) -> list[tuple[str, str]]:
    """Up to `count` variants, spread over their kinds (one of each kind in turn)."""
    by_kind: dict[str, list[str]] = {}
    for kind, text in pool:
        if text not in by_kind.setdefault(kind, []):
            by_kind[kind].append(text)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    for texts in by_kind.values():
        rng.shuffle(texts)
    picked: list[tuple[str, str]] = []
    while len(picked) < count and any(by_kind.values()):
        for kind in kinds:
            if by_kind[kind] and len(picked) < count:
                picked.append((kind, by_kind[kind].pop()))
    return picked


def _mutations(mutations, path: str, new_file: str, hunk) -> list[tuple[str, str]]:
    """(operator, hunk target text) for each of the language's mutations (`Language.mutations`) of
    the reference that changes only lines the hunk adds; none for a language without mutations
    (Dafny: its wrong variants are the partial hunks, proofs with annotations missing)."""
    if mutations is None:
        return []
    try:
        fns = mutations.functions(path, new_file)
    except (SyntaxError, ValueError):
        return []
    added = {line.target_line_no for line in hunk if line.is_added}
    top, length = hunk.target_start, hunk.target_length
    lines_before = new_file.count("\n")
    out = []
    for fn in fns:
        if not added & set(range(fn.node.lineno, fn.node.end_lineno + 1)):
            continue
        for change in mutations.mutation_sites(fn, new_file):
            first, last = _changed_lines(new_file, change.source)
            if not set(range(first, last + 1)) <= added:
                continue
            shift = change.source.count("\n") - lines_before
            text = "".join(change.source.splitlines(keepends=True)[top - 1: top - 1 + length + shift])
            out.append((change.operator, text))
    return out


def _changed_lines(before: str, after: str) -> tuple[int, int]:
    """First and last line (1-based, in `before`) of the one region where `after` differs."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    end = max(prefix, len(before) - suffix - 1)
    return before.count("\n", 0, prefix) + 1, before.count("\n", 0, end) + 1


def _partials(hunk) -> list[tuple[str, str]]:
    """The hunk's target text with one block of changed lines left as it was, for each block
    (none when the hunk has a single block)."""
    blocks: list[list[int]] = []
    lines = list(hunk)
    for i, line in enumerate(lines):
        if line.is_context:
            continue
        if blocks and blocks[-1][-1] == i - 1:
            blocks[-1].append(i)
        else:
            blocks.append([i])
    if len(blocks) < 2:
        return []
    out = []
    for block in blocks:
        skipped = set(block)
        text = "".join(line.value for i, line in enumerate(lines)
                       if (line.is_removed and i in skipped) or (not line.is_removed and
                                                                  not (line.is_added and i in skipped)))
        out.append((PARTIAL, text))
    return out


class EditPolicy:
    """Learnable logits at every branch point of every decision of every task, set at the start so
    that all candidates of a decision are equally likely; trained by gradient ascent.

    Args:
        decisions: task id -> its decisions (`build_decisions`).
        lr: step size on the logits.
    """

    def __init__(self, decisions: Mapping[str, Sequence[Decision]], lr: float = 2.0):
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.decisions = {task_id: list(ds) for task_id, ds in decisions.items()}
        self.branches = {t: [d.branches for d in ds] for t, ds in self.decisions.items()}
        self.lr = lr
        self.logits = {t: [[np.log([len(w) for w in b.ways]).astype(np.float64) for b in bs] for bs in per_task]
                       for t, per_task in self.branches.items()}

    def probabilities(self, task_id: str) -> list[np.ndarray]:
        """pi_d over the candidates of each decision."""
        out = []
        for decision, branch_list, logits in zip(self.decisions[task_id], self.branches[task_id], self.logits[task_id]):
            p = np.ones(len(decision.candidates))
            for branch, x in zip(branch_list, logits):
                q = _softmax(x)
                for k, members in enumerate(branch.ways):
                    p[list(members)] *= q[k]
            out.append(p)
        return out

    def sample(self, task_id: str, rng: np.random.Generator) -> tuple[int, ...]:
        """One candidate index per decision."""
        return tuple(int(rng.choice(len(p), p=p / p.sum())) for p in self.probabilities(task_id))

    def success_probability(self, task_id: str) -> float:
        """The probability of playing the reference at every decision."""
        return float(np.prod([p[0] for p in self.probabilities(task_id)]))

    def update(self, task_id: str, choices: np.ndarray, advantages: Sequence[np.ndarray]) -> None:
        """One ascent step on mean_b sum_d sum_(branch n on the path of choices[b, d]) A log pi_n.

        Args:
            choices: (B, D) candidate index of each episode's decisions.
            advantages: per decision d, a (B, n_branches_d) array: the advantage of the token at each
                branch point on the path of choices[b, d] (entries off the path are ignored).
        """
        choices = np.asarray(choices)
        branch_lists = self.branches[task_id]
        if choices.ndim != 2 or choices.shape[1] != len(branch_lists) or len(advantages) != len(branch_lists):
            raise ValueError(f"choices must be (episodes, {len(branch_lists)}) and advantages one array per decision")
        for d, (branch_list, logits) in enumerate(zip(branch_lists, self.logits[task_id])):
            a = np.asarray(advantages[d], np.float64)
            if a.shape != (choices.shape[0], len(branch_list)):
                raise ValueError(f"advantages[{d}] must be ({choices.shape[0]}, {len(branch_list)}), got {a.shape}")
            for n, (branch, x) in enumerate(zip(branch_list, logits)):
                q = _softmax(x)
                grad = np.zeros_like(x)
                for b, c in enumerate(choices[:, d].tolist()):
                    way = branch.way(c)
                    if way is not None:
                        grad += a[b, n] * (np.eye(len(q))[way] - q)
                x += self.lr * grad / choices.shape[0]

    def state(self) -> dict:
        """Candidate labels and probabilities per decision, as JSON-ready lists."""
        return {t: [{"path": d.path, "lines": list(d.lines), "labels": list(d.labels),
                     "probabilities": p.round(6).tolist()}
                    for d, p in zip(self.decisions[t], self.probabilities(t))] for t in self.decisions}


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()
