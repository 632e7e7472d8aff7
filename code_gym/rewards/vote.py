"""Execution majority vote, a label-free group reward: the G rollouts of one task are compared by
what their final programs do, not by tests.

Each candidate (a final patch: the changes `path -> bytes | None`, or the patch text of
`info["patch"]`) is applied to a fresh copy of the task's repository (with the grader's file
policy: test files and configuration keep the task's version) and probed inside the sandbox: the
same generated calls run against every candidate, and the outputs (the `repr` of each result, or
the exception type it raised) are its behaviour. A candidate's vote is the fraction of the OTHER
candidates of the group whose behaviour is identical:

    vote_i = |{j != i : behaviour_j == behaviour_i}| / (G - 1)

A candidate with no changes, or whose probe could not run (sandbox timeout, crash), agrees with
no one and scores 0. Identical candidates are probed once.

The calls come from the task's language (`Language.vote`). Python: the task's own tests' calls,
as the behavioural probes harvest and perturb them (one call per probe, replaying its steps: the
constructors, methods and objects the tests use, on inputs near theirs), so candidates that
differ in behaviour answer differently where random arguments would raise the same error in all
of them; for a task without probes (no reference solution), every module-level function that some
candidate changes or adds in a non-test `.py` file, called `inputs_per_function` times with
positional arguments drawn with `seed` from small ints, floats, strings, lists, dicts, None and
booleans, the arity read by parsing the source, never by importing it on the host. `calls`
replaces them with your own expressions in that language, e.g. `["Inventory(5).reserve('a', 2)"]`
with `setup="from stockroom.inventory import Inventory"`.

Agreement is a consensus signal, not a verdict: a group that shares a wrong program votes for it,
and a candidate's code runs in the same process as its probe. Mix it with a verifiable reward.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from code_gym import languages
from code_gym.grading.file_policy import apply_changes
from code_gym.grading.grade import changes_digest
from code_gym.util.hostfs import owned_prefix
from code_gym.grading.reference import patch_changes
from code_gym.sandbox import Limits, make_sandbox
from code_gym.tasks.task import Task
from code_gym.workspace.working_copy import Workspace

Candidate = Union[Mapping[str, Union[bytes, None]], str]
PROBE_DIR = "/probe"

@dataclass(frozen=True)
class VoteResult:
    votes: tuple[float, ...]  # per candidate, in input order
    behaviour: tuple[str, ...]  # per candidate: a hash of its outputs ("" when it did not run)
    errors: tuple[str | None, ...]  # per candidate: why it has no behaviour (None: it ran)
    calls: tuple[str, ...]  # the calls every candidate ran


def execution_vote(task: Task, candidates: Sequence[Candidate], *, calls: Sequence[str] | None = None,
                   setup: str = "", inputs_per_function: int = 8, seed: int = 0, per_call: int = 2,
                   isolation: Any = "auto", timeout: float | None = None) -> VoteResult:
    """The execution majority vote of a group of final patches of `task` (module docstring)."""
    if inputs_per_function < 1 or per_call < 1:
        raise ValueError(f"inputs_per_function and per_call must be >= 1, got {inputs_per_function}, {per_call}")
    language = languages.of(task)
    if language.vote is None:
        raise ValueError(f"the execution vote needs calls to run, and {language.name} tasks have no generator of them: "
                         "use a reward without 'vote' (e.g. 'f2p') for this task")
    changes = [_as_changes(task, c) for c in candidates]
    if calls is None:
        calls = language.vote.generated_calls(task, changes, inputs_per_function, seed, isolation=isolation)
    calls = tuple(calls)
    runs: dict[str, tuple[str, str | None]] = {}
    behaviour, errors = [], []
    for change in changes:
        if not change:
            found: tuple[str, str | None] = ("", "no changes")
        elif not calls:
            found = ("", "no calls to probe: the candidates change no module-level function; pass calls=[...]")
        else:
            key = changes_digest(change)
            if key not in runs:
                runs[key] = _probe(task, change, calls, setup, per_call, isolation, timeout)
            found = runs[key]
        behaviour.append(found[0])
        errors.append(found[1])
    counts = Counter(b for b in behaviour if b)
    others = len(changes) - 1
    votes = tuple((counts[b] - 1) / others if b and others else 0.0 for b in behaviour)
    return VoteResult(votes, tuple(behaviour), tuple(errors), calls)


def _as_changes(task: Task, candidate: Candidate) -> dict[str, bytes | None]:
    if isinstance(candidate, str):
        return changes_from_patch(task, candidate)
    if not isinstance(candidate, Mapping):
        raise TypeError(f"a candidate is a final patch (text) or its changes (path -> bytes | None), "
                        f"got {type(candidate).__name__}")
    return dict(candidate)


def changes_from_patch(task: Task, patch: str) -> dict[str, bytes | None]:
    """The files a patch (as `info["patch"]` renders it) changes in the task's repository, applied
    with `git apply` to a copy (applying a patch runs none of its code). ValueError when it does not apply."""
    try:
        return patch_changes(task.repo, patch)
    except ValueError as exc:
        raise ValueError(f"the patch does not apply to {task.id}: {exc}") from None


def _probe(task: Task, changes: Mapping[str, bytes | None], calls: tuple[str, ...], setup: str, per_call: int,
           isolation: Any, timeout: float | None) -> tuple[str, str | None]:
    """(behaviour hash, None) of one candidate, or ("", why) when its probe did not run."""
    copy = Workspace(task.repo, strategy="copy")
    probe = Path(tempfile.mkdtemp(prefix=owned_prefix("vote")))
    try:
        apply_changes(task, copy.root, dict(changes))
        language = languages.of(task)
        limit = timeout or task.timeouts.tests
        sandbox = make_sandbox(isolation, copy.root, Limits(timeout=limit), mask=(task.root,) if task.root else (),
                               image=task.image, runtime=language.runtime(task))
        binds = {probe: PROBE_DIR}
        files, command = language.vote.probe(task, calls, setup, per_call, sandbox.inside(probe, binds))
        for name, text in files.items():
            (probe / name).write_text(text)
        try:
            run = sandbox.exec(command, timeout=limit, binds=binds)
        finally:
            sandbox.close()
        if run.timed_out:
            return "", f"the probe timed out after {limit:g}s"
        mark = language.vote.MARK
        lines = [line for line in run.output.splitlines() if line.startswith(mark)]
        if not lines:
            return "", f"the probe did not finish (exit code {run.exit_code}): {run.output[-300:]}"
        outputs = json.loads(lines[-1][len(mark):])
        return hashlib.sha256(json.dumps(outputs).encode()).hexdigest(), None
    except (ValueError, OSError) as exc:
        return "", f"the probe could not run: {type(exc).__name__}: {exc}"
    finally:
        copy.close()
        shutil.rmtree(probe, ignore_errors=True)
