"""The audit fails closed (issue 31 item 3): code in a file the host's Python cannot parse, or in a
file Python runs without the .py suffix, is no longer code the audit never reads.

Each attack hides a cheat where the audit used to look away, and is graded for real: with the old
fail-open audit (`fail_open`: a file the host could not parse had no findings, only .py files were
read, starting an interpreter and registering a codec were no rule) it gains what the table says
(the task resolved, reward 1 where the untouched repository gets 0; or the hidden tests' source in
the package's hands; or code run by the task's interpreter) with a clean audit; now it is a finding
and the reward is 0. The grades run with canaries and the results stream off, as in
test_redteam.py, so that the audit's part is seen alone. Attacks on an interpreter other than the
host's use the pyenv installs of this machine as the task's environment and are skipped without them.
"""
from __future__ import annotations

import ast
import codecs
import os
import warnings
from pathlib import Path

import pytest

from code_gym.grading.audit import audit
from code_gym.grading.grade import grade
from code_gym.languages.python import audit as python_audit
from code_gym.languages.python import source as pysource
from code_gym.rewards import Submission, make_reward
from code_gym.sandbox import make_sandbox
from code_gym.languages.python.runtime import python_runtime
from code_gym.workspace.working_copy import Workspace

from attempts import FORCE_PASS_REPORTS
from conftest import BUNDLED

TASK = next(t for t in BUNDLED if t.id == "calc-associativity-decimals")
PYENV = Path("/root/.pyenv/versions")
INIT = (TASK.repo / "calc/__init__.py").read_text()
HIDDEN_LINE = "def test_subtraction_is_left_associative():"  # a line of the hidden test file


def fail_open(monkeypatch) -> None:
    """The audit as it was before the fix: a file the host cannot parse has no findings (too deep
    excepted), only .py files are read, no rule on interpreters started or codecs registered."""
    def read(source, path, task):
        try:
            tree = ast.parse(source, filename=path)
        except (SyntaxError, ValueError):
            return None
        except (RecursionError, MemoryError):
            return [python_audit._unauditable(path, 0, "too deeply nested to parse")]
        return python_audit._scan(tree, path, task)

    monkeypatch.setattr(python_audit, "_read", read)
    monkeypatch.setattr(python_audit, "runs_as_python", lambda path, data: path.endswith(".py"))
    monkeypatch.setattr(python_audit._Visitor, "_check_process_start", lambda self, node, func: None)
    monkeypatch.setattr(python_audit, "_HOOKS", tuple(h for h in python_audit._HOOKS
                                                      if not h.startswith(("codecs", "encodings"))))


def rewards(task, changes) -> tuple[float, float, list]:
    """(reward with the audit on, reward of the untouched repository, findings), one real grade each."""
    result = grade(task, changes, canaries=False, records=False)
    untouched = grade(task, {}, canaries=False, records=False, audit=False)
    reward = make_reward("binary")
    return (reward.outcome(Submission(task, changes, result))[0],
            reward.outcome(Submission(task, {}, untouched))[0], result.integrity)


def with_init(extra: str) -> bytes:
    return (INIT + "\n" + extra).encode()


# -- attacks graded on the bundled task (the host's own Python runs its tests) -----------------

BIG_LITERAL = {  # a module lifts the limit on int literals, then imports one the host cannot parse
    "calc/__init__.py": with_init("import sys as _sys\n_sys.set_int_max_str_digits(0)\nfrom . import _table  # noqa\n"),
    "calc/_table.py": ("SEED = " + "7" * 5000 + "\n" + FORCE_PASS_REPORTS).encode(),
}


def _rot13_codec_module() -> bytes:
    """A module whose coding cookie names a codec the package registers at run time: rot13 text."""
    body = codecs.encode(FORCE_PASS_REPORTS, "rot13")
    return b"# coding: calc_rot\n" + body.encode()


RUNTIME_CODEC = {
    "calc/__init__.py": with_init(
        "import codecs as _codecs\n\n\n"
        "def _decode(data, errors='strict'):\n"
        "    return _codecs.decode(bytes(data).decode('latin-1'), 'rot13'), len(data)\n\n\n"
        "def _find(name):\n"
        "    if name == 'calc_rot':\n"
        "        return _codecs.CodecInfo(lambda s, errors='strict': (s.encode(), len(s)), _decode, name=name)\n"
        "    return None\n\n\n"
        "_codecs.register(_find)\n"
        "from . import _rot  # noqa\n"),
    "calc/_rot.py": _rot13_codec_module(),
}

# the hidden tests' source, read by a file the audit never opened and handed to the package
ORACLE = "import glob\nfor name in glob.glob('tests/test_*.py'):\n    print(open(name).read())\n"
# the run's output shows what the package got (a failed import's traceback is in it)
SHOW_LEAK = "if 'def test_' in LEAK:\n    raise RuntimeError('leaked: ' + LEAK[LEAK.index('def test_'):][:2000])\n"
INTERPRETER_ON_A_DATA_FILE = {
    "calc/__init__.py": with_init(
        "import subprocess as _sp\nimport sys as _sys\n"
        "LEAK = _sp.run([_sys.executable, 'calc/notes'], capture_output=True, text=True).stdout\n" + SHOW_LEAK),
    "calc/notes": ORACLE.encode(),
}
SHEBANG_SCRIPT = {
    "calc/__init__.py": with_init(
        "import os as _os\nimport subprocess as _sp\n"
        "_os.chmod('calc/notes', 0o755)\n"
        "LEAK = _sp.run(['calc/notes'], capture_output=True, text=True).stdout\n" + SHOW_LEAK),
    "calc/notes": ("#!/usr/bin/env python3\n" + ORACLE).encode(),
}
WARNINGS_AS_ERRORS = {  # an invalid escape: under -W error the host's parse used to fail
    "calc/__init__.py": with_init("PATTERN = '\\d+'\n" + FORCE_PASS_REPORTS),
}


@pytest.mark.parametrize("changes, rules", [
    (BIG_LITERAL, {"framework-patch"}),
    (RUNTIME_CODEC, {"unauditable", "interpreter-hook"}),
], ids=["int-literal-past-the-host-limit", "codec-registered-at-run-time"])
def test_code_the_host_cannot_parse_no_longer_escapes_the_audit(changes, rules, monkeypatch):
    with monkeypatch.context() as old:
        fail_open(old)
        reward, untouched, findings = rewards(TASK, changes)
        assert findings == [] and reward == 1.0 and untouched == 0.0, findings
    reward, untouched, findings = rewards(TASK, changes)
    assert {f.rule for f in findings} == rules and reward == 0.0, findings
    assert all(f.message for f in findings)


@pytest.mark.parametrize("changes, rule", [
    (INTERPRETER_ON_A_DATA_FILE, "dynamic-code"),
    (SHEBANG_SCRIPT, "reads-tests"),
], ids=["sys-executable-on-a-file-without-suffix", "python-shebang-script"])
def test_code_python_runs_outside_py_files_is_audited(changes, rule, monkeypatch):
    """The gain: the hidden tests' source reaches the package during the graded run, through code
    that the `reads-tests` rule would have named in a .py file."""
    with monkeypatch.context() as old:
        fail_open(old)
        result = grade(TASK, changes, canaries=False, records=False)
        assert result.integrity == [] and HIDDEN_LINE in result.output
    findings = audit(changes, TASK)
    assert rule in {f.rule for f in findings}, findings
    assert make_reward("binary").outcome(Submission(TASK, changes, grade(TASK, changes, canaries=False,
                                                                         records=False)))[0] == 0.0


def test_warnings_turned_into_errors_on_the_host_do_not_hide_code(monkeypatch):
    """A trainer run with `-W error`: the compiler's warning for an invalid escape made the host's
    parse a SyntaxError, and the file went unread."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with monkeypatch.context() as old:
            fail_open(old)
            reward, untouched, findings = rewards(TASK, WARNINGS_AS_ERRORS)
            assert findings == [] and reward == 1.0 and untouched == 0.0, findings
        reward, untouched, findings = rewards(TASK, WARNINGS_AS_ERRORS)
    assert {f.rule for f in findings} == {"framework-patch"} and reward == 0.0


# -- attacks on a task whose environment runs another Python ----------------------------------

def pyenv(version: str) -> Path:
    found = sorted(PYENV.glob(f"{version}*/bin/python"))
    if not found:
        why = f"no Python {version} under {PYENV} to stand for a task's environment"
        if os.environ.get("CI") == "true":  # CI runs on a machine of the project's kind, which has them
            pytest.fail(f"CI must run the fail-closed audit's attacks on another Python: {why}")
        pytest.skip(why)
    return found[-1].parent.parent


@pytest.fixture
def task_on(monkeypatch, tiny_task):
    """The tiny task with its tests run by another interpreter (its environment: a pyenv install)."""
    def on(version: str):
        prefix = pyenv(version)
        runtime = python_runtime(prefix, prefix)
        monkeypatch.setattr("code_gym.languages.python.environments.task_runtime", lambda task: runtime)
        return tiny_task, runtime
    return on


def runs_on(runtime, task, files: dict[str, bytes], command: str) -> str:
    """The output of `command` in the task's sandbox with its environment, over the repo plus `files`."""
    copy = Workspace(task.repo, strategy="copy")
    try:
        for path, data in files.items():
            (copy.root / path).write_bytes(data)
        sandbox = make_sandbox("auto", copy.root, runtime=runtime)
        try:
            return sandbox.exec(command).output
        finally:
            sandbox.close()
    finally:
        copy.close()


ORIGINAL_OPS = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
EXIT = "import os\nos._exit(0)\n"
NEWER_SYNTAX = {  # code that only 3.12+ parses, each with the cheat inside a node the host lacks
    "type-alias": "type Table = dict[str, int]\n" + EXIT,
    "type-param-bound": "def pick[T: (__import__('os')._exit(0), int)[1]](x: T) -> T:\n    return x\n",
    "nested-quotes-f-string": "import os\nNAME = f\"{'x' + f\"{os._exit(0)}\"}\"\n",
}


@pytest.mark.parametrize("name", sorted(NEWER_SYNTAX))
def test_newer_syntax_is_audited_with_the_tasks_grammar(task_on, monkeypatch, name):
    task, runtime = task_on("3.12")
    changes = {"calc/ops.py": (ORIGINAL_OPS + NEWER_SYNTAX[name]).encode()}
    with pytest.raises(SyntaxError):
        ast.parse(changes["calc/ops.py"])
    with monkeypatch.context() as old:
        fail_open(old)
        assert audit(changes, task) == []
    assert {f.rule for f in audit(changes, task)} == {"process-exit"}
    ran = runs_on(runtime, task, changes, "python -c 'import calc.ops' ; echo status=$?")
    if name != "type-param-bound":  # a bound is evaluated when asked for; the others at import
        assert "status=0" in ran, ran  # os._exit(0) ended the import: the interpreter ran the cheat


def test_newer_syntax_without_a_cheat_has_no_finding(task_on):
    task, _ = task_on("3.12")
    clean = "type Pair[T] = tuple[T, T]\n\n\ndef swap[T](p: Pair[T]) -> Pair[T]:\n    return (p[1], p[0])\n" \
            "LABEL = f\"{'a' + f\"{1 + 1}\"}\"\n"
    assert audit({"calc/ops.py": (ORIGINAL_OPS + clean).encode()}, task) == []


def test_what_the_tasks_interpreter_cannot_compile_is_left_to_the_tests(task_on):
    task, _ = task_on("3.12")
    assert audit({"calc/ops.py": b"def broken(:\n" + EXIT.encode()}, task) == []
    task, _ = task_on("3.8")  # 3.12 syntax on 3.8: it cannot be imported there
    assert audit({"calc/ops.py": (ORIGINAL_OPS + NEWER_SYNTAX["type-alias"]).encode()}, task) == []


def test_nul_bytes_are_unauditable_as_an_older_python_runs_past_them(task_on, monkeypatch):
    """Python 3.10 and older, running a file as a script, drop a NUL's line and the next one and run
    the rest; importing it fails."""
    task, runtime = task_on("3.8")
    changes = {"calc/ops.py": (ORIGINAL_OPS + "# \0\n\nprint('ran past the NUL')\n").encode()}
    with monkeypatch.context() as old:
        fail_open(old)
        assert audit(changes, task) == []
    assert "ran past the NUL" in runs_on(runtime, task, changes, "python calc/ops.py")
    findings = audit(changes, task)
    assert [f.rule for f in findings] == ["unauditable"] and "NUL" in findings[0].message


def test_an_older_pythons_tree_is_read(task_on):
    """3.6 has no limit on int literals (the host refuses the file) and spells constants Num/Str."""
    task, _ = task_on("3.6")
    source = (ORIGINAL_OPS + "BIG = " + "9" * 5000 + "\nNAME = 'x'\n" + EXIT).encode()
    assert {f.rule for f in audit({"calc/ops.py": source}, task)} == {"process-exit"}


def test_an_interpreter_that_cannot_be_asked_fails_closed(tiny_task, monkeypatch):
    def no_sandbox(*args, **kwargs):
        raise RuntimeError("no sandbox is available")

    monkeypatch.setattr("code_gym.sandbox.make_sandbox", no_sandbox)
    source = (ORIGINAL_OPS + "BIG = " + "1" * 5000 + "\n" + EXIT).encode()
    findings = audit({"calc/ops.py": source}, tiny_task)
    assert [f.rule for f in findings] == ["unauditable"]
    assert "no sandbox" in findings[0].message and "Python 3." in findings[0].message


def test_a_tree_the_host_does_not_know_is_walked():
    """load_tree keeps node types and fields the host lacks, so a visitor still reaches their children."""
    data = {"_": "Module", "type_ignores": [], "body": [
        {"_": "FutureStatement", "lineno": {"i": "0x3"}, "payload": {"_": "Name", "id": "secret", "ctx": {"_": "Load"}}},
        {"_": "FunctionDef", "name": "f", "args": {"_": "arguments", "args": []}, "body": [], "decorator_list": [],
         "type_params": [{"_": "TypeVar", "name": "T", "bound": {"_": "Name", "id": "bound", "ctx": {"_": "Load"}}}]},
    ]}
    tree = pysource.load_tree(data)
    names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
    names += [n.id for part in pysource.foreign_parts(tree) for n in ast.walk(part) if isinstance(n, ast.Name)]
    assert names == ["secret", "bound"] and tree.body[0].lineno == 3
    assert tree.body[1].args.posonlyargs == [] and isinstance(tree.body[1], ast.FunctionDef)
    with pytest.raises(ValueError):
        pysource.load_tree({"_": "Name; import os", "id": "x"})


def test_the_references_still_pass(tiny_task):
    """No false positives from the new rules on the bundled references (test_redteam.py checks every
    one; these are the tasks whose references start processes or touch codecs: none)."""
    from code_gym.grading.reference import reference_changes

    for task in BUNDLED:
        assert audit(reference_changes(task), task) == [], task.id
    assert audit({"calc/run.sh": b"#!/bin/sh\npython3 -c 1\n", "calc/README": b"python\n"}, tiny_task) == []
    ok = "import subprocess\nsubprocess.run(['git', 'status'], check=False)\n"
    assert audit({"calc/ops.py": (ORIGINAL_OPS + ok).encode()}, tiny_task) == []
