"""Python's half of the execution vote (`code_gym.rewards.vote`): the calls made on every candidate
and the probe program that makes them inside the sandbox (PYTHONHASHSEED=0, each call under a
`per_call` second alarm, one marked JSON line of outputs: the `repr` of each result or the type of
the exception it raised).

The default calls are the task's own tests' calls, as the behavioural probes harvest and perturb
them (`code_gym.languages.python.probes`): each call replays one probe's steps (constructors,
methods, the package's own objects passed between them) through the probe replay laid next to
the program, and its output is every step's result in the probes' strict encoding. Those are inputs
the package is meant to take, so a sign flip and an off-by-one answer differently from the fix
(random arguments mostly raise the same error in every candidate). A task without probes (no
reference solution, none could be made) falls back to module-level functions some candidate
changes or adds, called on generated inputs (their arity read with `ast`, never by importing on
the host)."""
from __future__ import annotations

import ast
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from code_gym.languages.python import probes as behavioural
from code_gym.languages.python import source as pysource
from code_gym.languages.python.audit import MAX_SOURCE_BYTES
from code_gym.tasks.task import Task

MARK = "@@code-gym-vote@@"
_MARK = MARK
REPLAY = "probe_replay.py"  # laid next to the program: what a test-call scenario runs through
MAX_OUTPUT = 4000  # characters of one call's output kept

# runs inside the sandbox: python probe.py spec.json -> one marked JSON line of outputs
_PROBE = r'''
import importlib, importlib.util, json, os, re, signal, sys
sys.path[:0] = [".", "src"]
spec = json.load(open(sys.argv[1]))
_where = importlib.util.spec_from_file_location("code_gym_vote_replay", os.path.join(os.path.dirname(sys.argv[1]), "''' + REPLAY + r'''"))
_replay = importlib.util.module_from_spec(_where)
_where.loader.exec_module(_replay)  # binds what it uses before any candidate code is imported
def _alarm(*_):
    raise TimeoutError("probe call timed out")
signal.signal(signal.SIGALRM, _alarm)
namespace = {"_import": importlib.import_module, "_steps": lambda text: _replay.replay([{"steps": json.loads(text)}])[0]}
try:
    exec(spec["setup"], namespace)
except BaseException as exc:
    namespace["_setup_error"] = type(exc).__name__
outputs = []
for call in spec["calls"]:
    signal.alarm(spec["per_call"])
    try:
        outputs.append("ok:" + re.sub(r" at 0x[0-9a-fA-F]+", "", repr(eval(call, dict(namespace))))[:spec["max_output"]])
    except BaseException as exc:
        outputs.append("raise:" + type(exc).__name__)
    finally:
        signal.alarm(0)
print("\n''' + _MARK + r'''" + json.dumps(outputs))
'''


def generated_calls(task: Task, changes: Sequence[Mapping[str, bytes | None]], per_function: int,
                    seed: int, isolation="auto") -> tuple[str, ...]:
    """The default calls: the task's test-call scenarios (`scenario_calls`), else calls of every
    module-level function some candidate changes or adds, on generated inputs (`random_calls`)."""
    return scenario_calls(task, isolation) or random_calls(task, changes, per_function, seed)


def scenario_calls(task: Task, isolation="auto") -> tuple[str, ...]:
    """One call per behavioural probe of the task (made once and cached, like the probes): it
    replays that probe's steps, the task's own tests' calls with their inputs perturbed. Empty when
    the task has none."""
    made = behavioural.probe_set(task, isolation)
    return tuple(f"_steps({json.dumps(behavioural.replayed(p.steps))!r})" for p in made.probes)


def random_calls(task: Task, changes: Sequence[Mapping[str, bytes | None]], per_function: int,
                 seed: int) -> tuple[str, ...]:
    """Calls of every module-level function some candidate changes or adds, on generated inputs."""
    targets: dict[tuple[str, str], int] = {}
    for change in changes:
        for path, data in sorted(change.items()):
            if data is None or not path.endswith(".py") or task.is_protected(path):
                continue
            before = _functions(task.original_file(path))
            for name, (arity, source) in _functions(data).items():
                if before.get(name, (None, None))[1] != source:
                    targets.setdefault((_module(path), name), before.get(name, (arity,))[0])
    rng = np.random.default_rng(seed)
    return tuple(f"_import({module!r}).{name}({', '.join(_value(rng) for _ in range(arity))})"
                 for (module, name), arity in sorted(targets.items()) for _ in range(per_function))


def _functions(source: bytes | None) -> dict[str, tuple[int, str]]:
    """Module-level functions of a source: name -> (required positional arguments, its code)."""
    if source is None or len(source) > MAX_SOURCE_BYTES:  # too large to parse at a bounded cost (the audit flags it)
        return {}
    try:
        tree = pysource.parse(source)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            positional = len(args.posonlyargs) + len(args.args) - len(args.defaults)
            out[node.name] = (positional, ast.dump(node))
    return out


def _module(path: str) -> str:
    parts = path[:-3].split("/")
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


_POOL = (0, 1, 2, -1, 3, 7, -5, 10, 0.5, -2.25, "", "a", "abc", "Hello world", [], [1, 2, 3], [3, -1, 2],
         {"a": 1}, None, True, False)


def _value(rng: np.random.Generator) -> str:
    return repr(_POOL[int(rng.integers(len(_POOL)))])


def probe(task: Task, calls: Sequence[str], setup: str, per_call: int, inside: str) -> tuple[dict[str, str], str]:
    """(files to lay in the probe folder, the command that runs them there: `inside` is where the
    sandbox sees that folder) for one candidate."""
    files = {"probe.py": _PROBE, REPLAY: behavioural.REPLAY_SOURCE,
             "spec.json": json.dumps({"calls": list(calls), "setup": setup, "per_call": per_call,
                                      "max_output": MAX_OUTPUT})}
    command = (f"PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1 {_python(task)} {shlex.quote(inside + '/probe.py')} "
               f"{shlex.quote(inside + '/spec.json')}")
    return files, command


def _python(task: Task) -> str:
    """The interpreter the task's tests use (the first word of `python -m pytest`), else python3."""
    first = task.test_command.split()[0] if task.test_command.split() else ""
    return first if "python" in Path(first).name else "python3"
