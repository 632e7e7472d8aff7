import shutil

import pytest

from code_gym import languages
from code_gym.tasks.task import TaskError, load_task, resolve_task

from conftest import BUNDLED, write_tiny_task


def test_tiny_task_loads(tmp_path):
    task = load_task(write_tiny_task(tmp_path))
    assert task.id == "tiny"
    assert task.visible_tests == ("tests/test_calc.py",)
    assert task.timeouts.command == 5
    assert task.is_protected("tests/test_calc.py")
    assert task.is_protected("./tests/new_test.py")
    assert not task.is_protected("calc/ops.py")


@pytest.mark.parametrize("field, replacement, message", [
    ('id = "tiny"', 'id = "other"', "field 'id'"),
    ('id = "tiny"', 'id = "Tiny Task"', "field 'id'"),
    ('visible_tests = ["tests/test_calc.py"]', 'visible_tests = ["tests/missing.py"]', "field 'visible_tests'"),
    ('hidden_tests = ["tests/test_hidden_calc.py"]', 'hidden_tests = "tests/x.py"', "field 'hidden_tests'"),
    ('reference_patch = "solution.patch"', 'reference_patch = "nope.patch"', "field 'reference_patch'"),
    ('kind = "bugfix"', 'kind = "refactor"', "field 'kind'"),
    ('statement = """add() subtracts and mul() adds; both must do what their names say."""', "", "field 'statement'"),
    ("command = 5", "command = -1", "[timeouts]"),
    ('id = "tiny"', 'id = "tiny', "not valid TOML"),
])
def test_invalid_manifest_names_file_and_field(tmp_path, field, replacement, message):
    folder = write_tiny_task(tmp_path)
    manifest = folder / "task.toml"
    manifest.write_text(manifest.read_text().replace(field, replacement))
    with pytest.raises(TaskError) as err:
        load_task(folder)
    assert "task.toml" in str(err.value)
    assert message in str(err.value)


def test_hidden_test_visible_in_repo_is_rejected(tmp_path):
    folder = write_tiny_task(tmp_path)
    shutil.copy(folder / "hidden/tests/test_hidden_calc.py", folder / "repo/tests/test_hidden_calc.py")
    with pytest.raises(TaskError, match="also exists in repo"):
        load_task(folder)


def test_missing_repo_and_manifest(tmp_path):
    folder = write_tiny_task(tmp_path)
    shutil.rmtree(folder / "repo")
    with pytest.raises(TaskError, match="repo"):
        load_task(folder)
    with pytest.raises(TaskError, match="no task.toml"):
        load_task(tmp_path)


def test_bundled_suite_is_big_and_multi_region():
    assert len(BUNDLED) >= 12
    kinds = {t.kind for t in BUNDLED}
    assert kinds == {"bugfix", "feature"}
    for task in BUNDLED:
        if task.language != "dafny":  # a proof may be one block of annotations; code tasks have regions
            assert task.reference_patch.count("\n@@ ") + task.reference_patch.startswith("@@") >= 2, task.id
        suffixes = languages.of(task).source_suffixes
        sources = [p for p in task.repo.rglob("*") if p.is_file() and p.name.endswith(suffixes)]
        fewest = 1 if task.language == "dafny" else 3  # a Dafny task is one program and its proof
        lines = sum(len(p.read_bytes().splitlines()) for p in sources)
        # a project to find one's way in: a few files, or one library of some size (strsim is one
        # 900-line lib.rs); never more than a task's statement and tests can point into
        assert fewest <= len(sources) or lines >= 500, task.id
        assert len(sources) <= 15 + len(task.visible_tests), task.id


def test_resolve_task_by_id_and_unknown():
    assert resolve_task(BUNDLED[0].id).id == BUNDLED[0].id
    with pytest.raises(TaskError, match="unknown task"):
        resolve_task("no-such-task")


def test_a_manifest_cannot_make_the_loader_read_outside_its_task(tmp_path, monkeypatch):
    """Task data is the attacker's here: the red team named "../secret.txt" as the reference patch
    and linked a hidden test to a host file; load_task read both (the hidden test then ran)."""
    import os

    from code_gym.tasks import task as task_module
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    folder = write_tiny_task(tmp_path)
    manifest = folder / "task.toml"
    manifest.write_text(manifest.read_text().replace('reference_patch = "solution.patch"',
                                                     'reference_patch = "../secret.txt"'))
    with pytest.raises(TaskError, match="reference_patch"):
        load_task(folder)
    monkeypatch.setattr(task_module, "_inside", lambda folder, rel: True)  # the defence off
    assert load_task(folder).reference_patch == "host secret\n"
    monkeypatch.undo()
    manifest.write_text(manifest.read_text().replace('reference_patch = "../secret.txt"',
                                                     'reference_patch = "solution.patch"'))
    hidden = folder / "hidden" / "tests" / "test_hidden_calc.py"
    hidden.unlink()
    os.symlink(secret, hidden)
    with pytest.raises(TaskError, match="a link to outside the task folder"):
        load_task(folder)


def test_write_task_writes_hidden_files_beneath_hidden_only(tmp_path):
    """A loader's data names the hidden files: a path out of hidden/ is refused, never written."""
    from code_gym.tasks.loaders.folder import write_task

    def fill(repo):
        (repo / "m.py").write_text("x = 1\n")

    manifest = {"id": "t", "statement": "s", "visible_tests": [], "hidden_tests": ["tests/test_h.py"]}
    with pytest.raises(OSError):
        write_task(tmp_path / "t", manifest, fill, {"tests/test_h.py": "def test_h(): pass\n",
                                                    "../../../escaped.py": "x"}, "")
    assert not list(tmp_path.rglob("escaped.py")) and not (tmp_path.parent / "escaped.py").exists()
