"""Behavioural hidden probes: differential testing of a patch against the reference solution.

For each task (once, cached): the tests run with the reference applied under a profiler
(`code_gym.languages.python.probe_child`, in the sandbox), which records per test the calls test code makes into
the package (constructors, functions, methods, properties) with their plain-data arguments. A
test whose calls reach a function or module the reference patch changes becomes a scenario;
each scenario is perturbed (one number or every number renumbered across its calls, or each
argument on its own: numbers shifted, some strings and flags changed) into inputs no test shows.
Arguments the recording can now carry besides plain data: objects an earlier call returned
(handles), objects bound by name in an importable module (`ref`: builtins, the package's
functions and module-level objects) and functions the test defines (`stub`: a stand-in with
their signature that reports its calls); arguments left at a default that is not data are not
recorded. Of each test's candidates, fix probes (the untouched code answers differently) are kept
first, those that keep the fewest of the test's own values first among them: a FAIL_TO_PASS test
without fix probes cannot be told from a lookup table of its inputs, and earns no credit
(`ProbeReport.unchecked`, `rewards.tests`); `ProbeSet.census` and `probes.json` say which. The perturbed scenarios are replayed three times on the reference copy (twice in a
sandboxed process of their own with hash seeds 0 and 1, once as grading runs them); a probe whose
results differ is dropped as nondeterministic. A probe that differs from the untouched
repository only where it repeats a test's call and answer is dropped too. The set that is left is
replayed on the reference once more, alone and in grading's order (`_confirmed`): a probe whose
answer depended on a dropped probe run before it (state the package keeps between calls) is
dropped, until the set answers as recorded. What is kept
(steps + the reference's results) is a `ProbeSet`, stored in the task folder (`probes.json`,
written by `code-gym tasks validate --record`) or cached under `hostfs.cache_root()`.

At grading (`plant`, then `collect`), the probe replay (`code_gym.languages.python.probe_replay`: the probe child
without its harvest half) is laid in the graded copy as one more test file, run first in the
graded test run (a process of its own cost as much as the tests); it gets the steps and never the
reference's results; the results come back as plain-data JSON in the results folder and are
compared here, in the grader, by type and value (floats within 1e-9 relative). A probe fails when
any step differs. What could not be made (no changed function reached, a test whose calls cannot
be replayed, nondeterministic results) is listed in `ProbeSet.dropped`.
"""
from __future__ import annotations

import json
import math
import random
import re
import shlex
import shutil
import tempfile
import threading
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path

from unidiff import PatchSet

from code_gym.languages.python import probe_child

from code_gym.languages.python import probe_replay

from code_gym.languages.python import source as pysource
from code_gym.languages.python.canary import canary_path
from code_gym.grading.file_policy import apply_changes, lay_hidden_tests
from code_gym.util.hostfs import cache_root, owned_prefix
from code_gym.grading.reference import reference_changes, store_atomically, task_digest
from code_gym.languages.python.environments import task_runtime
from code_gym.sandbox import Limits, make_sandbox
from code_gym.tasks.task import Task, TaskError
from code_gym.workspace.working_copy import Workspace

PROBE_DIR = "/probe"  # where the probe folder is bound inside the sandbox
CHILD_FILE, REPLAY_FILE = "probe_child.py", "probe_replay.py"
# the sources the probe processes run: both for making probes; a graded run carries the replay half alone
_CHILD_SOURCE = Path(probe_child.__file__).read_text()
REPLAY_SOURCE = Path(probe_replay.__file__).read_text()
SPEC_NAME, OUT_NAME = "probe-spec.json", "probe-out.json"  # in the graded run's results folder
STORED_NAME = "probes.json"  # a task folder's recorded probes
VARIANTS = 3  # probes kept per test, fix probes first
CANDIDATES = 12  # perturbations tried per test: most near a test's inputs answer as the untouched code does
MAX_PROBES = 48
# a perturbed input can send the reference into a long loop (HumanEval/44's change_base with base 1):
# such a candidate is dropped alone, where it timed out the whole probe process before
PER_PROBE_SECONDS = 2.0
TIMED_OUT = {"t": "timeout"}
MAX_STEPS = 200
MAX_OUTPUT_BYTES = 32 << 20
REL_TOL, ABS_TOL = 1e-9, 1e-12
_FORMAT = 10


@dataclass(frozen=True)
class Probe:
    id: str  # "<test node id>#<variant>"
    test: str  # the test whose calls it perturbs
    steps: tuple  # the calls, as probe_child replays them
    expected: tuple  # the reference's result of each step (plain-data encoding)
    untouched_passes: bool = False  # the untouched repository gives the same results (a regression probe)
    changed: tuple[int, ...] = ()  # the steps whose arguments differ from the test's call


@dataclass(frozen=True)
class ProbeSet:
    probes: tuple[Probe, ...] = ()
    dropped: tuple[str, ...] = ()  # what could not be made, and why
    targets: tuple[str, ...] = ()  # the changed functions ("path:line") and modules the probes aim at

    @property
    def reason(self) -> str | None:
        """Why the task has no probes (None when it has some)."""
        if self.probes:
            return None
        return "; ".join(self.dropped[:3]) or "no probe could be made"

    def census(self, tests: tuple[str, ...]) -> dict[str, tuple[int, int]]:
        """{test: (fix probes, regression probes)} for each of `tests`."""
        return {t: (sum(p.test == t and not p.untouched_passes for p in self.probes),
                    sum(p.test == t and p.untouched_passes for p in self.probes)) for t in tests}

    def without_fix_probes(self, tests: tuple[str, ...]) -> tuple[str, ...]:
        """Those of `tests` (a task's FAIL_TO_PASS) that no fix probe checks: nothing tells a fix of
        their behaviour from a special case of their inputs, so they earn no credit."""
        fixed = {p.test for p in self.probes if not p.untouched_passes}
        return tuple(t for t in tests if t not in fixed)

    def why_no_fix_probe(self, test: str) -> str:
        """What was dropped for `test` (the first reason), or why the task has no probes."""
        mine = [d.split(": ", 1)[1] for d in self.dropped if d.split("#")[0].split(": ")[0] == test]
        if mine:
            return mine[0]
        if any(p.test == test for p in self.probes):
            return "every probe made from its calls answers as the untouched code does"
        return self.reason or "its calls gave no probe"


@dataclass(frozen=True)
class ProbeReport:
    """The probes of one graded run."""
    total: int
    passed: int
    failures: tuple[str, ...] = ()  # "<probe id> step k: <what differed>"
    failed_tests: frozenset[str] = frozenset()  # tests whose probes failed
    probed_tests: frozenset[str] = frozenset()  # tests with probes of their own
    unavailable: str | None = None  # why the task has no probes
    dropped: tuple[str, ...] = ()
    fix_total: int = 0  # probes the untouched repository fails (what the fix must change) ...
    fix_passed: int = 0  # ... and how many of them passed
    regression_failed: int = 0  # probes the untouched repository passes that failed
    fix_tests: frozenset[str] = frozenset()  # tests with fix probes of their own

    def unchecked(self, tests: tuple[str, ...]) -> tuple[str, ...]:
        """Those of `tests` (a task's FAIL_TO_PASS) without a fix probe: a pass of theirs cannot be
        told from a special case of their inputs, so it earns no credit (`rewards.tests`)."""
        return tuple(t for t in tests if t not in self.fix_tests)

    @property
    def ok(self) -> bool:
        return self.passed == self.total

    def uncredited(self, test: str) -> bool:
        """Whether a passing `test` earns no credit: its probes failed, or it has none of its own
        and some probe failed (a test the probes cannot check is trusted only when all pass)."""
        return test in self.failed_tests or (not self.ok and test not in self.probed_tests)

    def summary(self) -> str:
        if self.unavailable:
            return f"no probes ({self.unavailable})"
        return f"{self.passed}/{self.total} probes passed"


# ---------------------------------------------------------------- what the reference changes

def changed_code(task: Task, changes: dict[str, bytes | None]) -> tuple[dict[str, list[int]], list[str]]:
    """({path: first lines of the functions the reference patch changes}, [paths whose module-
    or class-level code it changes]) for the non-test Python files of the patch. A function's
    first line is its first decorator's or its `def` (what `co_firstlineno` holds)."""
    import ast

    targets: dict[str, list[int]] = {}
    modules: list[str] = []
    for patched in PatchSet(task.reference_patch):
        path = patched.path
        if not path.endswith(".py") or task.is_protected(path) or changes.get(path) is None:
            continue
        lines = _changed_lines(patched)
        try:
            tree = pysource.parse(changes[path])
        except SyntaxError:
            continue
        spans = [(min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno or n.lineno)
                 for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for line in lines:
            inner = [s for s in spans if s[0] <= line <= s[1]]
            if inner:
                first = max(inner)[0]
                if first not in targets.setdefault(path, []):
                    targets[path].append(first)
            elif path not in modules:
                modules.append(path)
    return targets, modules


def _changed_lines(patched) -> set[int]:
    """Lines of the new file that the patch adds, or next to which it removes lines."""
    lines: set[int] = set()
    for hunk in patched:
        previous = hunk.target_start
        for line in hunk:
            if line.is_added:
                lines.add(line.target_line_no)
            elif line.is_removed:
                lines.add(previous)
            if line.target_line_no:
                previous = line.target_line_no
    return lines


# ---------------------------------------------------------------- perturbation

def perturb(steps: list[dict], rng: random.Random) -> list[dict]:
    """A copy of `steps` with some plain-data arguments changed, in one of three ways:
    - one number renumbered wherever the scenario uses it (an integer argument or a number inside
      a string), so inputs keep the relations the test set up between them (`1.0.0-alpha < 1.0.0`
      becomes `4.0.0-alpha < 4.0.0`, still a question about pre-releases);
    - every number renumbered, in order (equal numbers stay equal, smaller ones stay smaller): no
      number the test shows is left, so a table keyed on any of them (`"-3"` inside a line of
      text) misses, while the question keeps its shape;
    - each argument on its own: integers shifted, floats and decimals scaled, numbers in strings
      shifted, a few other strings and flags changed (other strings mostly stay, so keys and names
      still match across steps).
    Handles and structure are kept. A step may come out unchanged: `make_probes` keeps a probe only
    where it differs from the untouched repository at a step that does not repeat what its test
    shows."""
    mode = rng.random()
    numbers = sorted({n for step in steps for arg in _arguments(step) for n in _numbers(arg)})
    if numbers and mode < 2 / 3:
        if mode < 1 / 3:
            old = rng.choice(numbers)
            new = old + rng.choice((-2, -1, 1, 2, 3, 9))
            mapping = {old: new if new >= 0 else old + 1}
        else:
            mapping, shift = {}, rng.choice((1, 2, 3, 5))
            for n in numbers:
                shift += rng.randrange(3)
                mapping[n] = n + shift
        return [dict(step, args=[_renumber(a, mapping) for a in step.get("args", [])],
                     kwargs=[[k, _renumber(v, mapping)] for k, v in step.get("kwargs", [])]) for step in steps]
    return [dict(step, args=[_perturb(a, rng) for a in step.get("args", [])],
                 kwargs=[[k, _perturb(v, rng)] for k, v in step.get("kwargs", [])]) for step in steps]


def novelty(steps: list[dict], variant: list[dict]) -> int:
    """How many of the values the test's calls show (plain arguments, numbers inside strings) no
    longer appear in `variant`: a probe that keeps none of them cannot be answered from a table of
    the test's inputs, whatever the table is keyed on."""
    return len(_values(steps) - _values(variant))


def _values(steps: list[dict]) -> set[tuple]:
    found: set[tuple] = set()
    for step in steps:
        for arg in _arguments(step):
            found.update(_leaves(arg))
    return found


def _leaves(arg: dict) -> list[tuple]:
    t = arg.get("t")
    if t in ("list", "tuple", "set", "frozenset"):
        return [leaf for v in arg["v"] for leaf in _leaves(v)]
    if t == "dict":
        return [leaf for pair in arg["v"] for v in pair for leaf in _leaves(v)]
    if t in ("int", "float", "decimal", "fraction", "str", "bytes", "bool"):
        return [(t, str(arg["v"]))] + [("number", n) for n in _numbers(arg) if t == "str"]
    return []


def _arguments(step: dict) -> list[dict]:
    return list(step.get("args", [])) + [v for _, v in step.get("kwargs", [])]


def _numbers(arg: dict) -> list[int]:
    """The non-negative integers an argument holds: int values (their size) and numbers in strings."""
    t = arg.get("t")
    if t in ("list", "tuple", "set", "frozenset"):
        return [n for v in arg["v"] for n in _numbers(v)]
    if t == "dict":
        return [n for pair in arg["v"] for v in pair for n in _numbers(v)]
    if t == "int":
        return [abs(int(arg["v"]))]
    if t == "str":
        return [int(m) for m in re.findall(r"[0-9]+", arg["v"]) if len(m) < 12]
    return []


def _renumber(arg: dict, mapping: dict[int, int]) -> dict:
    t = arg["t"]
    if t in ("list", "tuple", "set", "frozenset"):
        return dict(arg, v=[_renumber(v, mapping) for v in arg["v"]])
    if t == "dict":
        return dict(arg, v=[[_renumber(k, mapping), _renumber(v, mapping)] for k, v in arg["v"]])
    if t == "int" and abs(int(arg["v"])) in mapping:
        new = mapping[abs(int(arg["v"]))]
        return dict(arg, v=str(new if int(arg["v"]) >= 0 else -new))
    if t == "str":
        def swap(m):
            text = m.group()
            return str(mapping[int(text)]) if len(text) < 12 and int(text) in mapping and str(int(text)) == text else text
        return dict(arg, v=re.sub(r"[0-9]+", swap, arg["v"]))
    return arg


def _perturb(arg: dict, rng: random.Random) -> dict:
    t = arg["t"]
    if t in ("list", "tuple", "set", "frozenset"):
        return dict(arg, v=[_perturb(v, rng) for v in arg["v"]])
    if t == "dict":
        return dict(arg, v=[[k, _perturb(v, rng)] for k, v in arg["v"]])
    if rng.random() < 0.5:
        return arg
    if t == "int":
        n = int(arg["v"])
        return dict(arg, v=str(n + rng.choice((-2, -1, 1, 2, 3)) if abs(n) < 4 or rng.random() < 0.5
                               else n * rng.choice((2, 3)) // rng.choice((1, 2))))
    if t == "float":
        x = float.fromhex(arg["v"])
        if not math.isfinite(x):
            return arg
        y = round(x * rng.uniform(0.3, 1.9), 3) if x else rng.choice((0.5, -1.25, 2.0))
        return dict(arg, v=float.hex(float(y)))
    if t == "decimal":
        try:
            d = Decimal(arg["v"])
            exp = d.as_tuple().exponent
            step = Decimal(1).scaleb(exp if isinstance(exp, int) else 0)
            return dict(arg, v=str(d + step * rng.choice((-3, -1, 1, 2, 7, 13))))
        except (InvalidOperation, ValueError):
            return arg
    if t == "fraction":
        try:
            x = Fraction(arg["v"])
            return dict(arg, v=str(x + Fraction(rng.choice((-3, -1, 1, 2, 5)), rng.choice((1, 2, 3)))))
        except (ValueError, ZeroDivisionError):
            return arg
    if t == "bool" and rng.random() < 0.3:
        return dict(arg, v=not arg["v"])
    if t == "str" and arg["v"] and (rng.random() < 0.25 or any(c in "0123456789" for c in arg["v"])):
        return dict(arg, v=_perturb_text(arg["v"], rng))
    return arg


def _perturb_text(text: str, rng: random.Random) -> str:
    """A number in the text shifted (`alpha.2` -> `alpha.5`, `1.0.9` -> `1.0.11`: still a number where
    the text held one), else a character inserted."""
    numbers = list(re.finditer(r"[0-9]+", text))  # ASCII digits only: int("²") fails
    if numbers:
        found = rng.choice(numbers)
        number = int(found.group())
        value = number + rng.choice((-2, -1, 1, 2, 3, 9))
        shifted = str(value if value >= 0 else number + 1)
        return text[:found.start()] + shifted + text[found.end():]
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice("xq ,-0") + text[i:]


# ---------------------------------------------------------------- comparison

def mismatch(want, got) -> str | None:
    """What differs between the reference's encoded result `want` and the graded copy's `got`
    (None: the same type and value). `got` comes from the sandbox: anything malformed differs."""
    try:
        return _mismatch(want, got)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError):
        return f"malformed result (expected {_describe(want)})"


def _mismatch(want: dict, got: dict) -> str | None:
    if not isinstance(got, dict) or got.get("t") != want["t"]:
        return f"expected {_describe(want)}, got {_describe(got)}"
    t = want["t"]
    if t == "float":
        a, b = float.fromhex(want["v"]), float.fromhex(got["v"])
        same = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
        return None if same else f"expected float {a!r}, got {b!r}"
    if t in ("list", "tuple", "set", "frozenset"):
        if got["n"] != want["n"] or len(got["v"]) != len(want["v"]):
            return f"expected a {t} of {want['n']} items, got {got['n']}"
        return next((f"item {i}: {m}" for i, (w, g) in enumerate(zip(want["v"], got["v"]))
                     if (m := _mismatch(w, g))), None)
    if t == "dict":
        if got["n"] != want["n"] or len(got["v"]) != len(want["v"]):
            return f"expected a dict of {want['n']} items, got {got['n']}"
        for (wk, wv), (gk, gv) in zip(want["v"], got["v"]):
            if m := _mismatch(wk, gk) or _mismatch(wv, gv):
                return f"dict item: {m}"
        return None
    if t == "obj":
        if got["type"] != want["type"]:
            return f"expected {_describe(want)}, got {_describe(got)}"
        if "repr" in want and got.get("repr") != want["repr"]:
            return f"{want['type']} shows as {str(got.get('repr'))[:60]!r}, expected {want['repr'][:60]!r}"
        attrs = got["attrs"]
        for name, value in want["attrs"].items():
            if name not in attrs:
                return f"{want['type']}.{name} is missing"
            if m := _mismatch(value, attrs[name]):
                return f"{want['type']}.{name}: {m}"
        return None
    if t in ("raise", "new", "deep", "opaque", "unencodable"):
        return None if got.get("type") == want.get("type") else f"expected {_describe(want)}, got {_describe(got)}"
    return None if got.get("v") == want.get("v") else f"expected {_describe(want)}, got {_describe(got)}"


def _describe(value) -> str:
    if not isinstance(value, dict):
        return "nothing"
    t = value.get("t")
    if t == "raise":
        return f"exception {value.get('type')}"
    if t in ("obj", "new", "deep", "opaque", "enum"):
        return f"a {value.get('type')}" + (f".{value.get('v')}" if t == "enum" else "")
    if t == "float" and isinstance(value.get("v"), str):
        try:
            return f"float {float.fromhex(value['v'])!r}"
        except ValueError:
            pass
    if "v" in value and not isinstance(value["v"], list):
        return f"{t} {str(value['v'])[:60]!r}"
    return str(t)


# ---------------------------------------------------------------- running the child

class ChildFailed(RuntimeError):
    """The probe process did not produce results (timeout, crash, unreadable output)."""


def run_child(task: Task, root: Path, mode: str, spec: dict, isolation="auto", timeout: float | None = None,
              hash_seed: int | None = None) -> dict:
    """Run `probe_child.py MODE` in a fresh sandbox on `root` (a process of its own, with
    PYTHONHASHSEED=`hash_seed` when given); its JSON output."""
    timeout = timeout or task.timeouts.tests
    folder = Path(tempfile.mkdtemp(prefix=owned_prefix("probes")))
    try:
        (folder / CHILD_FILE).write_text(_CHILD_SOURCE)
        (folder / REPLAY_FILE).write_text(REPLAY_SOURCE)
        (folder / "spec.json").write_text(json.dumps(spec))
        sandbox = make_sandbox(isolation, root, Limits(timeout=timeout), mask=(task.root,) if task.root else (),
                               image=task.image, runtime=task_runtime(task))
        binds = {folder: PROBE_DIR}
        inside = sandbox.inside(folder, binds)
        try:
            run = sandbox.exec(_command(task, mode, inside, hash_seed), timeout=timeout, binds=binds)
        finally:
            sandbox.close()
        if run.timed_out:
            raise ChildFailed(f"the probe process timed out after {timeout:g}s")
        return read_output(folder / "out.json", run.exit_code, run.output)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_output(out: Path, exit_code: int | None = None, output: str = "") -> dict:
    """The probe child's JSON output (ChildFailed when missing, too large or malformed)."""
    if not out.is_file() or out.is_symlink() or out.stat().st_size > MAX_OUTPUT_BYTES:
        raise ChildFailed(f"the probes wrote no results (exit code {exit_code}): {output.strip()[-300:]}")
    try:
        data = json.loads(out.read_bytes())
    except (ValueError, RecursionError):
        raise ChildFailed("the probes wrote unreadable results") from None
    if not isinstance(data, dict):
        raise ChildFailed("the probes wrote unreadable results")
    return data


def _command(task: Task, mode: str, inside: str, hash_seed: int | None) -> str:
    words = shlex.split(task.test_command)
    python = words[0] if words and "python" in Path(words[0]).name else "python"
    seed = f"PYTHONHASHSEED={int(hash_seed)} " if hash_seed is not None else ""
    return seed + shlex.join([python, f"{inside}/{CHILD_FILE}", mode, f"{inside}/spec.json", f"{inside}/out.json"])


def replayed(steps) -> list[dict]:
    """Steps as the probe process gets them: without what the test saw (the reference's answers
    stay in the grader)."""
    return [{k: v for k, v in step.items() if k != "seen"} for step in steps]


# ---------------------------------------------------------------- making the probes

def make_probes(task: Task, isolation="auto") -> ProbeSet:
    """Harvest the tests' calls with the reference applied, perturb them, keep what the
    reference answers the same way three times."""
    try:
        changes = reference_changes(task)
    except TaskError as exc:
        return ProbeSet(dropped=(f"no reference solution: {exc}",))
    targets, modules = changed_code(task, changes)
    names = tuple(f"{p}:{line}" for p, lines in sorted(targets.items()) for line in lines) + tuple(modules)
    if not names:
        return ProbeSet(dropped=("the reference patch changes no Python function or module of the package",))
    copy = Workspace(task.repo, strategy="copy")
    try:
        apply_changes(task, copy.root, changes)
        lay_hidden_tests(task, copy.root)
        spec = {"test_files": list(task.visible_tests + task.hidden_tests), "targets": targets, "module_files": modules}
        try:
            harvested = run_child(task, copy.root, "harvest", spec, isolation, timeout=3 * task.timeouts.tests)
        except ChildFailed as exc:
            return ProbeSet(dropped=(f"harvest failed: {exc}",), targets=names)
        candidates, dropped = _candidates(task, harvested.get("scenarios", {}))
        if not candidates:
            return ProbeSet(dropped=tuple(dropped), targets=names)
        try:
            spec = {"probes": [{"steps": replayed(c["steps"])} for c in candidates], "per_probe": PER_PROBE_SECONDS}
            first = run_child(task, copy.root, "replay", spec, isolation, hash_seed=0)["results"]
            slow = {i for i, result in enumerate(first) if result == [TIMED_OUT]}
            dropped += [f"{candidates[i]['id']}: takes the reference more than {PER_PROBE_SECONDS:g}s" for i in sorted(slow)]
            candidates = [c for i, c in enumerate(candidates) if i not in slow]
            first = [r for i, r in enumerate(first) if i not in slow]
            spec = {"probes": [{"steps": replayed(c["steps"])} for c in candidates], "per_probe": PER_PROBE_SECONDS}
            second = run_child(task, copy.root, "replay", spec, isolation, hash_seed=1)["results"]
            third = _in_test_run(task, copy.root, spec, isolation)["results"]
        except (ChildFailed, KeyError, TypeError) as exc:
            return ProbeSet(dropped=tuple(dropped) + (f"the reference's probe run failed: {exc}",), targets=names)
    finally:
        copy.close()
    kept = []
    for candidate, a, b, c in zip(candidates, first, second, third):
        if a != b or a != c:
            other = b if a != b else c
            step = next(i for i, (x, y) in enumerate(zip(a, other)) if x != y) if len(a) == len(other) else 0
            dropped.append(f"{candidate['id']}: nondeterministic (the reference's runs differ at step {step})")
        else:
            kept.append(Probe(candidate["id"], candidate["test"], tuple(candidate["steps"]), tuple(a),
                              changed=tuple(candidate["changed"])))
    untouched = _untouched_results(task, kept, isolation) or [None] * len(kept)
    probes = []
    for probe, got in zip(kept, untouched):
        differs = _differing_steps(probe, got)
        if differs and all(_seen(probe, i) for i in differs):
            dropped.append(f"{probe.id}: differs from the untouched repository only where it repeats what a "
                           f"test shows (steps {', '.join(map(str, differs))})")
        else:
            probes.append(replace(probe, untouched_passes=not differs))
    probes = _per_test(probes, VARIANTS, {c["id"]: c["novelty"] for c in candidates})
    final, unstable = _confirmed(task, changes, _spread(probes, MAX_PROBES, task.fail_to_pass), isolation)
    return ProbeSet(tuple(final), tuple(dropped + unstable), names)


def _per_test(probes: list[Probe], limit: int, novel: dict[str, int]) -> list[Probe]:
    """At most `limit` probes of each test: its fix probes first (what tells a fix from a special
    case), those that keep the fewest of the test's own values first among them (`novelty`: a
    table keyed on a value the probe kept could answer it), then regression probes."""
    out: list[Probe] = []
    for p in sorted(probes, key=lambda p: (p.untouched_passes, -novel.get(p.id, 0))):
        if sum(q.test == p.test for q in out) < limit:
            out.append(p)
    return sorted(out, key=probes.index)


def _confirmed(task: Task, changes, probes: list[Probe], isolation, rounds: int = 3) -> tuple[list[Probe], list[str]]:
    """The kept probes replayed once more on the reference, as one set and in the order grading
    replays them (the candidates were checked together with the ones dropped since): a probe whose
    answer depends on the probes run before it (state the package keeps between calls, such as a
    registry that an earlier, dropped probe filled) would fail the reference itself. Such probes are
    dropped and the rest replayed again, for at most `rounds` rounds; what still differs then is
    dropped whole."""
    dropped: list[str] = []
    for _ in range(rounds):
        if not probes:
            break
        copy = Workspace(task.repo, strategy="copy")
        try:
            apply_changes(task, copy.root, changes)
            lay_hidden_tests(task, copy.root)
            got = _in_test_run(task, copy.root, {"probes": [{"steps": replayed(p.steps)} for p in probes]},
                               isolation).get("results")
        except ChildFailed as exc:
            return [], dropped + [f"the reference's confirming probe run failed: {exc}"]
        finally:
            copy.close()
        if not isinstance(got, list) or len(got) != len(probes):
            return [], dropped + ["the reference's confirming probe run returned the wrong number of results"]
        bad = {i: problem for i, (p, r) in enumerate(zip(probes, got)) if (problem := _probe_mismatch(p, r))}
        if not bad:
            return probes, dropped
        dropped += [f"{probes[i].id}: depends on the probes replayed before it (the reference's answer changed "
                    f"when run with the kept set: {problem})" for i, problem in bad.items()]
        probes = [p for i, p in enumerate(probes) if i not in bad]
    if probes:
        dropped += [f"{p.id}: dropped with the rest of an unstable set" for p in probes]
    return [], dropped


def _seen(probe: Probe, index: int) -> bool:
    """Whether step `index` repeats a call of the probe's test with the answer the test saw (an
    oracle reading the tests' literals could give it). A raise or None counts as seen: the
    profiler cannot tell a call that raised from one that returned None."""
    if index in probe.changed:
        return False
    want, saw = probe.expected[index], probe.steps[index].get("seen")
    return want.get("t") in ("raise", "none") or saw is None or mismatch(want, saw) is None


def _differing_steps(probe: Probe, got) -> list[int]:
    """The steps at which `got` (the untouched repository's results) differs from the reference's."""
    if not isinstance(got, list) or len(got) != len(probe.expected):
        return list(probe.changed) or [0]
    return [i for i, (want, result) in enumerate(zip(probe.expected, got)) if mismatch(want, result)]


def _untouched_results(task: Task, probes: list[Probe], isolation) -> list | None:
    """The untouched repository's results for `probes` (None when its run failed)."""
    if not probes:
        return None
    copy = Workspace(task.repo, strategy="copy")
    try:
        results = run_child(task, copy.root, "replay", {"probes": [{"steps": replayed(p.steps)} for p in probes],
                                                        "per_probe": PER_PROBE_SECONDS}, isolation).get("results")
    except ChildFailed:
        return None
    finally:
        copy.close()
    return results if isinstance(results, list) and len(results) == len(probes) else None


def _candidates(task: Task, scenarios: dict) -> tuple[list[dict], list[str]]:
    """Perturbed scenarios (id, test, steps) from the harvested ones, and what was dropped."""
    dropped: list[str] = []
    out: list[dict] = []
    seen = {json.dumps(s.get("steps", []), sort_keys=True) for s in scenarios.values()}
    graded = set(task.fail_to_pass + task.pass_to_pass)
    for test in sorted(scenarios):
        scenario = scenarios[test]
        if graded and test not in graded:
            dropped.append(f"{test}: not among the task's graded tests (FAIL_TO_PASS / PASS_TO_PASS)")
            continue
        steps, reached = scenario.get("steps", []), scenario.get("reached", [])
        cut = f" (recording stopped at {scenario['cut']})" if scenario.get("cut") else ""
        if not steps:
            dropped.append(f"{test}: makes no call into the package that can be replayed{cut}")
            continue
        if not reached:
            dropped.append(f"{test}: none of its replayable calls reaches the changed code{cut}")
            continue
        steps = steps[:MAX_STEPS]
        rng = random.Random(f"{task.id}|{test}")
        made = 0
        for attempt in range(CANDIDATES * 4):
            variant = perturb(steps, rng)
            key = json.dumps(variant, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            out.append({"id": f"{test}#{made}", "test": test, "steps": variant, "changed": changed_steps(steps, variant),
                        "novelty": novelty(steps, variant)})
            made += 1
            if made == CANDIDATES:
                break
        if not made:
            dropped.append(f"{test}: its calls take no argument that can be perturbed")
    return out, dropped


def changed_steps(steps: list[dict], variant: list[dict]) -> list[int]:
    """The steps of `variant` whose input differs from the test's: their own arguments changed, or
    they use what a changed step returned (`a < b` where `a` was parsed from a changed string is a
    new question, though its arguments read the same)."""
    changed: set[int] = set()
    for index, (a, b) in enumerate(zip(steps, variant)):
        if a != b or any(step in changed for step in _handles(b)):
            changed.add(index)
    return sorted(changed)


def _handles(value) -> list[int]:
    """The steps whose results a step (or an argument) refers to."""
    if isinstance(value, dict):
        if value.get("t") == "h":
            return [value.get("step")]
        return [h for key, v in value.items() if key != "seen" for h in _handles(v)]
    if isinstance(value, list):
        return [h for v in value for h in _handles(v)]
    return []


def _spread(probes: list[Probe], limit: int, first: tuple[str, ...] = ()) -> list[Probe]:
    """At most `limit` probes, taken round-robin over their tests, the tests in `first`
    (FAIL_TO_PASS) first, and in each test its fix probes first."""
    by_test: dict[str, list[Probe]] = {}
    for p in sorted(probes, key=lambda p: (p.test not in first, p.untouched_passes)):
        by_test.setdefault(p.test, []).append(p)
    out: list[Probe] = []
    while len(out) < min(limit, len(probes)):
        for group in by_test.values():
            if group and len(out) < limit:
                out.append(group.pop(0))
    return out


# ---------------------------------------------------------------- storing

_MADE: dict[str, ProbeSet] = {}
_OWN_SOURCE = Path(__file__).read_text()
_LOCK = threading.Lock()


def _digest(task: Task) -> str:
    return task_digest(task, f"probes-{_FORMAT}", *task.fail_to_pass, "|", *task.pass_to_pass,
                       _CHILD_SOURCE, REPLAY_SOURCE, _OWN_SOURCE)


def _to_json(task: Task, probes: ProbeSet, digest: str) -> str:
    graded = task.fail_to_pass + task.pass_to_pass
    unchecked = probes.without_fix_probes(task.fail_to_pass)
    return json.dumps({"format": _FORMAT, "digest": digest, "targets": list(probes.targets),
                       "census": {t: {"fix": f, "regression": r} for t, (f, r) in probes.census(graded).items()},
                       "without_fix_probes": {t: probes.why_no_fix_probe(t) for t in unchecked},
                       "dropped": list(probes.dropped),
                       "probes": [{"id": p.id, "test": p.test, "steps": list(p.steps), "expected": list(p.expected),
                                   "untouched_passes": p.untouched_passes, "changed": list(p.changed)}
                                  for p in probes.probes]}, indent=1)


def _from_json(text: str, digest: str) -> ProbeSet | None:
    try:
        data = json.loads(text)
        if data.get("digest") != digest:
            return None
        return ProbeSet(tuple(Probe(p["id"], p["test"], tuple(p["steps"]), tuple(p["expected"]), p["untouched_passes"],
                                    tuple(p["changed"])) for p in data["probes"]),
                        tuple(data["dropped"]), tuple(data["targets"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def probe_set(task: Task, isolation="auto") -> ProbeSet:
    """The task's probes: from its folder's `probes.json` when it matches the task, else from the
    cache, else made now (and cached)."""
    digest = _digest(task)
    with _LOCK:
        if digest in _MADE:
            return _MADE[digest]
    found = None
    for path in ((task.root / STORED_NAME) if task.root else None, cache_root() / "probes" / f"{digest}.json"):
        if path is not None and path.is_file():
            found = _from_json(path.read_text(), digest)
            if found is not None:
                break
    if found is None:
        found = make_probes(task, isolation)
        store_atomically(cache_root() / "probes" / f"{digest}.json", _to_json(task, found, digest))
    with _LOCK:
        _MADE[digest] = found
    return found


def record(task: Task, isolation="auto") -> ProbeSet:
    """Write the task's probes into its folder (`probes.json`), as `tasks validate --record` does."""
    if task.root is None:
        raise TaskError(f"task {task.id} has no folder to record its probes in")
    probes = probe_set(task, isolation)
    (task.root / STORED_NAME).write_text(_to_json(task, probes, _digest(task)))
    return probes


# ---------------------------------------------------------------- grading

@dataclass(frozen=True)
class Planted:
    """The probe file laid in a graded copy (`path` None: the task has no probes)."""
    path: str | None
    results: Path  # the host folder the run's results go to
    probes: ProbeSet

    def is_probe(self, node_id: str) -> bool:
        return self.path is not None and (node_id == self.path or node_id.startswith(self.path + "::"))

    @property
    def ids(self) -> tuple[str, ...]:
        """The test ids the probe file gives a run (none without probes)."""
        return (f"{self.path}::test_probe_replay",) if self.path else ()


def lay(root: Path, spec: dict, results: Path, inside: str, test_files: tuple[str, ...]) -> str:
    """Write the probe replay (`probe_replay.py`, without the harvest half: pytest compiles what a
    graded run carries, so it carries no more) as a test file of `root` (named like a canary, in the
    folder of the task's first test file) that replays `spec` from the results folder (`inside` in
    the sandbox) and writes its results there. Its path, relative to `root`."""
    path = canary_path(test_files, lambda p: (root / p).exists() or (root / p).is_symlink())
    (results / SPEC_NAME).write_text(json.dumps(spec))
    source = REPLAY_SOURCE + (f"\nSPEC_PATH, OUT_PATH = {inside + '/' + SPEC_NAME!r}, "
                                                        f"{inside + '/' + OUT_NAME!r}\n")
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(source)
    return path


def plant(task: Task, root: Path, results: Path, inside: str, isolation="auto") -> Planted:
    """Lay the task's probes in the graded copy `root`: the grader runs the returned file first,
    in the test run itself (no process of its own: that cost as much again as the tests)."""
    probes = probe_set(task, isolation)
    if not probes.probes:
        return Planted(None, results, probes)
    spec = {"probes": [{"steps": replayed(p.steps)} for p in probes.probes]}
    return Planted(lay(root, spec, results, inside, task.hidden_tests + task.visible_tests), results, probes)


def collect(planted: Planted, exit_code: int | None, output: str = "") -> ProbeReport:
    """Compare what the planted probes wrote with the reference's results."""
    probes = planted.probes
    if planted.path is None:
        return ProbeReport(0, 0, unavailable=probes.reason, dropped=probes.dropped)
    try:
        results = read_output(planted.results / OUT_NAME, exit_code, output).get("results")
    except ChildFailed as exc:
        return _report(probes, [str(exc)] * len(probes.probes))
    if not isinstance(results, list) or len(results) != len(probes.probes):
        return _report(probes, ["the probes returned the wrong number of results"] * len(probes.probes))
    return _report(probes, [_probe_mismatch(p, got) for p, got in zip(probes.probes, results)])


def _in_test_run(task: Task, root: Path, spec: dict, isolation) -> dict:
    """Replay `spec` the way grading does: first in a test run of the task's test files on `root`."""
    results = Path(tempfile.mkdtemp(prefix=owned_prefix("probes")))
    try:
        sandbox = make_sandbox(isolation, root, Limits(timeout=task.timeouts.tests),
                               mask=(task.root,) if task.root else (), image=task.image,
                               runtime=task_runtime(task))
        binds = {results: PROBE_DIR}
        inside = sandbox.inside(results, binds)
        path = lay(root, spec, results, inside, task.hidden_tests + task.visible_tests)
        files = " ".join(shlex.quote(t) for t in (path, *task.visible_tests, *task.hidden_tests))
        try:
            run = sandbox.exec(f"{task.test_command} -p no:cacheprovider -q {files}", timeout=task.timeouts.tests,
                               binds=binds)
        finally:
            sandbox.close()
            (root / path).unlink(missing_ok=True)
        if run.timed_out:
            raise ChildFailed(f"the reference's test run timed out after {task.timeouts.tests:g}s")
        return read_output(results / OUT_NAME, run.exit_code, run.output)
    finally:
        shutil.rmtree(results, ignore_errors=True)


def _report(probes: ProbeSet, problems: list[str | None]) -> ProbeReport:
    failures = tuple(f"{p.id} {problem}" for p, problem in zip(probes.probes, problems) if problem)
    failed = frozenset(p.test for p, problem in zip(probes.probes, problems) if problem)
    fixes = [problem is None for p, problem in zip(probes.probes, problems) if not p.untouched_passes]
    regressions = sum(problem is not None for p, problem in zip(probes.probes, problems) if p.untouched_passes)
    return ProbeReport(len(problems), problems.count(None), failures, failed, frozenset(p.test for p in probes.probes),
                       dropped=probes.dropped, fix_total=len(fixes), fix_passed=sum(fixes),
                       regression_failed=regressions,
                       fix_tests=frozenset(p.test for p in probes.probes if not p.untouched_passes))


def _probe_mismatch(probe: Probe, got) -> str | None:
    if not isinstance(got, list) or len(got) != len(probe.expected):
        return "returned the wrong number of step results"
    for index, (want, result) in enumerate(zip(probe.expected, got)):
        problem = mismatch(want, result)
        if problem:
            return f"step {index}: {problem}"
    return None
