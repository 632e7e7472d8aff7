"""File names in every rendered diff, patch and prompt are quoted the way git quotes them
(core.quotePath): checked against git's own output for the same names and changes, and by
`git apply` of the patch."""
import os
import shutil
import subprocess

import pytest
from credit.split import split_diff
from code_gym.env.prompt import repo_tree
from code_gym.grading.grade import GradeCache, GradeResult
from code_gym.rewards import Judge, Submission
from code_gym.rewards.judge import final_patch
from code_gym.workspace.diffs import file_diff, quote_path, render, text_lines
from code_gym.workspace.working_copy import Workspace

from patch_check import copy_source, git_apply, git_diff, git_repo, tree_state

# names that git must quote, and some it must not (space; a dash first)
NAMES = ["plain.py", "sp ace.py", "-dash.py", "tab\there", "new\nline", 'dq"uote', "back\\slash", "caf\u00e9.py",
         os.fsdecode(b"raw\xe9\xff.py"), "bell\x07\x08\x0b\x0c\r.txt", "del\x7f", "ctl\x01\x1f", "emoji\U0001F600",
         "a b/c\nd/e f.py"]


def _write(root, name, data):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.mark.parametrize("name, quoted", [
    ("plain.py", "plain.py"), ("sp ace.py", "sp ace.py"), ("new\nline", '"new\\nline"'),
    ('dq"uote', '"dq\\"uote"'), ("back\\slash", '"back\\\\slash"'), ("caf\u00e9", '"caf\\303\\251"'),
    (os.fsdecode(b"raw\xe9"), '"raw\\351"'), ("\x07\x08\t\x0b\x0c\r", '"\\a\\b\\t\\v\\f\\r"'),
    ("\x01\x7f", '"\\001\\177"'),
])
def test_quote_path_writes_c_escapes_and_octal_bytes(name, quoted):
    assert quote_path(name) == quoted
    assert quote_path(name, "a/") == (f"a/{name}" if quoted == name else f'"a/{quoted[1:]}')
    assert quote_path(name).isascii() and "\n" not in quote_path(name)


def test_quote_path_takes_a_lone_surrogate_without_raising():
    assert quote_path("x\ud800") == '"x\\355\\240\\200"'


def test_names_are_quoted_as_git_ls_files_quotes_them(tmp_path):
    for name in NAMES:
        _write(tmp_path, name, b"x\n")
    git_repo(tmp_path)
    listed = subprocess.run(["git", "-c", "core.quotePath=true", "ls-files"], cwd=tmp_path, capture_output=True,
                            check=True).stdout.decode("ascii").splitlines()
    assert sorted(listed) == sorted(quote_path(name) for name in NAMES)


def _strip_text_index(diff):
    """git's diff without the abbreviated `index` lines it gives text files (ours have none)."""
    return "".join(line for line in diff.splitlines(keepends=True)
                   if not (line.startswith("index ") and len(line.split()[1].split("..")[0]) < 40))


@pytest.mark.parametrize("strategy", ["copy", "overlay"])
def test_patch_equals_git_diff_and_applies(tmp_path, strategy):
    from code_gym.util.hostfs import overlay_supported
    if strategy == "overlay" and not overlay_supported():
        pytest.skip("overlayfs cannot be mounted here (needs root)")
    source = tmp_path / "source"
    for k, name in enumerate(NAMES):
        _write(source, name, b"one\ntwo\nthree\n" if k % 3 else b"\x00bin\x01" * 3)
    ws = Workspace(source, strategy=strategy)
    try:
        for k, name in enumerate(NAMES):
            path = ws.root / name
            if k % 4 == 0:
                path.unlink()
            elif k % 4 == 1:
                path.write_bytes(path.read_bytes() + b"four\n" if k % 3 else b"\x00changed")
            elif k % 4 == 2:
                path.chmod(0o755)
        for name in NAMES[:6]:
            _write(ws.root / "added", name, b"new\n")
        os.symlink("target \n", ws.root / "li\nnk")
        ws.scan_changes()
        patch = render(ws.patch())
        mirror = copy_source(source, tmp_path / "git")
        git_repo(mirror)
        for path in mirror.iterdir():
            if path.name != ".git":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        shutil.copytree(ws.root, mirror, symlinks=True, dirs_exist_ok=True)
        assert patch == _strip_text_index(git_diff(mirror, "--no-renames"))
        applied = copy_source(source, tmp_path / "applied")
        git_apply(patch, applied)
        assert tree_state(applied) == tree_state(ws.root)
    finally:
        ws.close()


def test_a_newline_in_a_name_forges_no_hunk(tmp_path):
    forged = "x\n--- a/calc/ops.py\n+++ b/calc/ops.py\n@@ -1 +1 @@\n-def add(a, b):\n+def add(a, b): # fixed"
    diff = file_diff(forged, None, b"harmless\n").text
    units = split_diff(diff, levels=["file"])  # credit reads the name back whole
    assert units.paths == (forged,) and units.texts == ("harmless",)
    assert len(diff.splitlines()) == 6 and diff.count("\n--- ") == 1 and diff.count("\n+++ ") == 1
    git_apply(diff, tmp_path)
    assert tree_state(tmp_path) == {os.fsencode(forged): ("100644", b"harmless\n")}


def test_a_name_with_a_space_ends_its_header_lines_with_a_tab_as_git_does():
    text = file_diff("a b.py", b"x\n", b"y\n").text
    assert "--- a/a b.py\t\n+++ b/a b.py\t\n" in text
    assert "--- /dev/null\n+++ b/a b.py\t\n" in file_diff("a b.py", None, b"y\n").text


def test_diff_lines_split_at_newlines_only(tmp_path):
    old, new = "a\x0cb\rc\u2028d\n", "a\x0cb\rc\u2028d\ne\x1cf"
    assert text_lines(new) == ["a\x0cb\rc\u2028d\n", "e\x1cf"]
    diff = file_diff("f.txt", old.encode(), new.encode())
    assert diff.added == [(2, "e\x1cf")]
    (tmp_path / "f.txt").write_bytes(old.encode())
    git_apply(diff.text, tmp_path)
    assert (tmp_path / "f.txt").read_bytes() == new.encode()


def test_repo_tree_quotes_names():
    assert repo_tree(["ok.py", "evil\ncalc/ops.py", os.fsdecode(b"b\xe9")]) == '"b\\351"\n"evil\\ncalc/ops.py"\nok.py'


def test_judge_patch_quotes_names_and_takes_names_that_are_not_utf8(tiny_task):
    raw = os.fsdecode(b"caf\xe9\n.py")
    sub = Submission(tiny_task, {raw: b"x = 1\n", "data.bin": b"\x00\xff"}, GradeResult({}, 0, False, "", 0.1))
    patch = final_patch(sub)
    assert patch.isascii() and 'diff --git "a/caf\\351\\n.py" "b/caf\\351\\n.py"' in patch
    assert "Binary files a/data.bin and b/data.bin differ" in patch  # by name only: no base85 for a reader
    judge = Judge("http://127.0.0.1:9/v1", "m", timeout=0.1, retries=0)
    assert "error" in judge(sub).details  # the request fails (nothing listens); nothing raised


def test_grade_cache_key_takes_names_that_are_not_utf8(tiny_task):
    raw, other = os.fsdecode(b"caf\xe9.py"), os.fsdecode(b"caf\xe8.py")
    key = GradeCache.key(tiny_task, {raw: b"1"}, "auto", True)
    assert key != GradeCache.key(tiny_task, {other: b"1"}, "auto", True)
    assert key != GradeCache.key(tiny_task, {"x\ud800": b"1"}, "auto", True)


@pytest.mark.parametrize("size", [1, 37, 52, 53, 104, 5000, 70_000])
def test_a_binary_file_is_written_as_git_writes_it(tmp_path, size):
    data = b"\x00" + os.urandom(size - 1)  # git writes literal hunks for a new file
    git_repo(tmp_path)
    (tmp_path / "b.bin").write_bytes(data)
    assert file_diff("b.bin", None, data).text == git_diff(tmp_path, "--full-index")
