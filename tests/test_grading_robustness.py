"""Patches whose shape, not content, once broke grading: a package folder replaced by a file of
the same name (or the reverse) made the grader's apply_changes raise, and env.step with it. Each
change that can be applied is applied; one that cannot is skipped and the rest graded."""
import dataclasses
import shutil

import gymnasium as gym

import code_gym  # noqa: F401  (registers CodeRepo-v0)
from code_gym.grading.file_policy import apply_changes
from code_gym.actions.replay import hermes

SUBMIT = hermes([{"name": "submit", "arguments": {}}])
FIXED_OPS = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"


def pristine(task, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(task.repo, root, symlinks=True)
    return root


def test_a_folder_replaced_by_a_file_and_a_file_by_a_folder_both_apply(tiny_task, tmp_path):
    root = pristine(tiny_task, tmp_path)
    changes = {"data.bin/readme.txt": b"moved\n", "data.bin": None,  # not in sorted order: the grader sorts
               "calc": b"x = 1\n", "calc/__init__.py": None, "calc/ops.py": None}
    assert apply_changes(tiny_task, root, changes) == []
    assert (root / "calc").read_bytes() == b"x = 1\n"
    assert (root / "data.bin" / "readme.txt").read_bytes() == b"moved\n"


def test_what_the_grader_keeps_is_never_removed_to_make_room(tiny_task, tmp_path):
    root = pristine(tiny_task, tmp_path)
    (root / "calc" / "conftest.py").write_text("")  # a task's own conftest: grader-owned
    task = dataclasses.replace(tiny_task, hidden_tests=("checks/test_hidden_calc.py",))
    changes = {"calc": b"x = 1\n", "calc/__init__.py": None, "calc/ops.py": None,
               "checks": b"a file where a hidden test's folder goes\n", "tests": b"", "tests/test_calc.py": None}
    assert sorted(apply_changes(task, root, changes)) == ["calc", "checks", "tests", "tests/test_calc.py"]
    assert (root / "calc" / "conftest.py").exists() and (root / "tests" / "test_calc.py").exists()
    assert not (root / "checks").exists()


def test_links_in_the_way_are_removed_never_followed(tiny_task, tmp_path):
    root = pristine(tiny_task, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "lib").symlink_to(outside)
    (root / "calc" / "old.py").symlink_to(outside / "old.py")
    changes = {"lib/x.py": b"y = 2\n", "calc/old.py": b"z = 3\n", "calc/old.py/deeper.py": b"w = 4\n"}
    apply_changes(tiny_task, root, changes)
    assert list(outside.iterdir()) == []
    assert (root / "lib").is_dir() and not (root / "lib").is_symlink() and (root / "lib" / "x.py").read_bytes() == b"y = 2\n"


def test_a_path_the_copy_cannot_hold_is_skipped_and_the_rest_applied(tiny_task, tmp_path):
    root = pristine(tiny_task, tmp_path)
    too_long = "calc/" + "a" * 300 + ".py"
    changes = {too_long: b"x = 1\n", "calc/ops.py": FIXED_OPS.encode(), "../escape.py": b"", "/abs.py": b""}
    assert sorted(apply_changes(tiny_task, root, changes)) == sorted(["../escape.py", "/abs.py", too_long])
    assert (root / "calc" / "ops.py").read_text() == FIXED_OPS
    assert not (tmp_path / "escape.py").exists()


def _submit_after(task, command: str):
    env = gym.make("CodeRepo-v0", task=task, reward="fraction")
    try:
        env.reset(seed=0)
        env.step(f"```bash\n{command}\n```")
        return env.step(SUBMIT)
    finally:
        env.close()


def test_a_package_replaced_by_a_file_of_its_name_is_graded_through_the_env(tiny_task):
    """The red team's `rm -rf calc && echo 'x = 1' > calc`: env.step raised IsADirectoryError."""
    _, reward, terminated, _, info = _submit_after(tiny_task, "rm -rf calc && echo 'x = 1' > calc")
    assert terminated and info["tests_total"] == 3 and info["ignored_changes"] == []
    assert reward == 0.0 and set(info["tests"].values()) == {"error"}  # `import calc` fails: a graded 0


def test_a_file_replaced_by_a_folder_of_its_name_is_graded_through_the_env(tiny_task):
    fix = f"printf '{FIXED_OPS}' > calc/ops.py"
    _, reward, terminated, _, info = _submit_after(tiny_task, f"{fix} && rm data.bin && mkdir data.bin && "
                                                              "echo kept > data.bin/readme.txt")
    assert terminated and info["ignored_changes"] == [] and info["resolved"] and reward == 1.0


def test_a_path_the_host_cannot_look_up_is_audited_not_raised(tiny_task):
    from code_gym.grading.audit import audit

    deep = "/".join(["d" * 200] * 25) + "/m.py"  # over PATH_MAX: stat() raises ENAMETOOLONG
    assert audit({deep: b"import os\nos._exit(0)\n"}, tiny_task)[0].rule == "process-exit"
