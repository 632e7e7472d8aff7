"""The property of issue 31: after any sequence of edits (writes, appends, same-size rewrites with
the mtime set back, renames, deletes, chmod, new folders, links, binary content, names with
spaces, newlines and bytes that are not UTF-8), the cumulative patch applied to the original with
`git apply` equals the workspace byte for byte; so does the chain of step diffs, and so does the
graded copy (`changed_files` written over the original)."""
import os
import shutil

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from code_gym.util.hostfs import overlay_supported
from code_gym.workspace.diffs import render
from code_gym.workspace.working_copy import Workspace

from patch_check import copy_source, git_apply, tree_state

NAMES = ["a.py", "b c.txt", "new\nline", "tab\tx", 'q"uote', os.fsdecode(b"raw\xe9"), "caf\u00e9", "-dash", "d/e.py",
         "d/f g/h", "sub\ndir/x", os.fsdecode(b"\xff/\xfe")]
CONTENTS = [b"", b"x\n", b"one\ntwo\nthree\n", b"one\ntwo\nthree", b"\x00\x01binary\xff", b"caf\xc3\xa9\n",
            b"cr\rlf\r\nff\x0cline\n", b"\xe9not utf8\n", b"x\n" * 40, b"x\n" * 39 + b"y\n"]
SOURCE = {"a.py": b"def f():\n    return 1\n", "b c.txt": b"hello\n", "d/e.py": b"x\n" * 40, "bin.dat": b"\x00\x02",
          "run.sh": b"echo hi\n", "twin1": b"same\n", "twin2": b"same\n"}

name = st.sampled_from(NAMES + list(SOURCE))
op = st.one_of(
    st.tuples(st.just("write"), name, st.sampled_from(CONTENTS)),
    st.tuples(st.just("append"), name, st.sampled_from(CONTENTS[1:])),
    st.tuples(st.just("rewrite"), name, st.integers(0, 255)),  # same size, mtime set back
    st.tuples(st.just("move"), name, name),
    st.tuples(st.just("delete"), name, st.none()),
    st.tuples(st.just("chmod"), name, st.booleans()),
    st.tuples(st.just("mkdir"), name, st.none()),
    st.tuples(st.just("link"), name, st.sampled_from(["a.py", "nowhere", os.fsdecode(b"t\xe9 \n")])),
    st.tuples(st.just("scan"), st.none(), st.none()),
)


# the tiny task's files (tests/conftest.py) and new names
bash_name = st.sampled_from(NAMES + ["calc/ops.py", "calc/__init__.py", "data.bin", "tests/test_calc.py"])
bash_op = st.one_of(
    st.tuples(st.sampled_from(["write", "append"]), bash_name, st.sampled_from(CONTENTS[1:])),
    st.tuples(st.just("rewrite"), bash_name, st.integers(0, 255)),
    st.tuples(st.just("move"), bash_name, bash_name),
    st.tuples(st.sampled_from(["delete", "mkdir"]), bash_name, st.none()),
    st.tuples(st.just("chmod"), bash_name, st.booleans()),
    st.tuples(st.just("link"), bash_name, st.sampled_from(["calc/ops.py", os.fsdecode(b"t\xe9 \n")])),
)


def _source(tmp_path):
    root = tmp_path / "source"
    for rel, data in SOURCE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "run.sh").chmod(0o755)
    os.utime(root / "a.py", ns=(10**18, 10**18))  # an old mtime: a rewrite set back to it is not "racy"
    return root


def _apply(root, kind, path, arg):
    """One edit, as a bash command would make it; False when it cannot be made (a folder there)."""
    full = root / path
    try:
        if kind in ("write", "append"):
            full.parent.mkdir(parents=True, exist_ok=True)
            with open(full, "ab" if kind == "append" else "wb") as fh:
                fh.write(arg)
        elif kind == "rewrite":
            st_ = os.lstat(full)
            data = full.read_bytes()
            if not data or full.is_symlink():
                return False
            with open(full, "r+b") as fh:
                fh.write(bytes([(data[0] + 1 + arg) % 256]))
            os.utime(full, ns=(st_.st_atime_ns, st_.st_mtime_ns), follow_symlinks=False)
        elif kind == "move":
            (root / arg).parent.mkdir(parents=True, exist_ok=True)
            os.rename(full, root / arg)
        elif kind == "delete":
            shutil.rmtree(full) if full.is_dir() and not full.is_symlink() else full.unlink()
        elif kind == "chmod":
            if full.is_symlink():
                return False
            full.chmod(0o755 if arg else 0o644)
        elif kind == "mkdir":
            full.mkdir(parents=True)
        elif kind == "link":
            full.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(arg, full)
    except OSError:
        return False
    return True


def _check_roundtrip(tmp_path, source, ws, step_patches):
    state = tree_state(ws.root)
    applied = copy_source(source, tmp_path / "applied")
    patch = render(ws.patch())
    if patch:
        git_apply(patch, applied)
    assert tree_state(applied) == state
    chained = copy_source(source, tmp_path / "chained")
    for step in step_patches:
        git_apply(step, chained)
    assert tree_state(chained) == state
    graded = copy_source(source, tmp_path / "graded")
    for path, data in ws.changed_files().items():  # as the grader writes them: bytes (a link: its target)
        target = graded / path
        if target.is_symlink() or target.is_file():
            target.unlink()
        if data is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    assert {p: data for p, (_, data) in tree_state(graded).items()} == {p: data for p, (_, data) in state.items()}


@pytest.mark.parametrize("strategy", ["copy", "overlay"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=14))
def test_patch_applied_to_the_original_equals_the_workspace(tmp_path_factory, strategy, ops):
    if strategy == "overlay" and not overlay_supported():
        pytest.skip("overlayfs cannot be mounted here (needs root)")
    tmp_path = tmp_path_factory.mktemp("roundtrip")
    source = _source(tmp_path)
    ws = Workspace(source, strategy=strategy, disk_quota=0)
    try:
        steps = []
        for kind, path, arg in ops:
            if kind == "scan":
                steps.append(render(ws.scan_changes()))
            else:
                _apply(ws.root, kind, path, arg)
        steps.append(render(ws.scan_changes()))
        _check_roundtrip(tmp_path, source, ws, [s for s in steps if s])
    finally:
        ws.close()


def _shell(path: str) -> str:
    """A path as a bash word of its exact bytes ($'\\xHH...')."""
    return "$'" + "".join(f"\\x{b:02x}" for b in os.fsencode(path)) + "'"


def _bash(kind, path, arg):
    """The same edits as bash commands, for the env's bash tool."""
    f = _shell(path)
    parent = f'mkdir -p "$(dirname {f})"'
    if kind in ("write", "append"):
        data = "".join(f"\\x{b:02x}" for b in arg)
        return f"{parent}; printf '{data}' {'>>' if kind == 'append' else '>'} {f}"
    if kind == "rewrite":  # one byte changed in place, the mtime put back (touch -d of stat's own ns stamp)
        return (f'[ -f {f} ] && [ ! -L {f} ] && [ -s {f} ] && {{ m="$(stat -c %y {f})"; '
                f"printf '\\x{arg:02x}' | dd of={f} bs=1 count=1 conv=notrunc 2>/dev/null; touch -d \"$m\" {f}; }}")
    if kind == "move":
        return f'mkdir -p "$(dirname {_shell(arg)})"; mv -T {f} {_shell(arg)}'
    if kind == "delete":
        return f"rm -rf {f}"
    if kind == "chmod":
        return f"[ -L {f} ] || chmod {'+x' if arg else '-x'} {f}"
    if kind == "mkdir":
        return f"mkdir -p {f}"
    return f"{parent}; ln -s {_shell(arg)} {f}"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=st.lists(st.lists(bash_op, min_size=1, max_size=4), min_size=1, max_size=4))
def test_bash_edits_through_env_step_roundtrip(tmp_path_factory, tiny_task, steps):
    tmp_path = tmp_path_factory.mktemp("env")
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    try:
        ws = env.unwrapped.ws
        diffs = []
        for ops in steps:
            command = "; ".join(_bash(*o) for o in ops) + "; true"
            info = env.step(f"```bash\n{command}\n```")[4]
            assert not info["tool_results"][0]["error"], info["tool_results"]
            if info["diff"]:
                diffs.append(info["diff"])
        applied = copy_source(tiny_task.repo, tmp_path / "applied")
        if info["patch"]:
            git_apply(info["patch"], applied)
        assert tree_state(applied) == tree_state(ws.root)
        chained = copy_source(tiny_task.repo, tmp_path / "chained")
        for diff in diffs:
            git_apply(diff, chained)
        assert tree_state(chained) == tree_state(ws.root)
    finally:
        env.close()


def test_files_over_the_size_limit_apply_when_their_new_content_is_small(tmp_path):
    """A file over hostfs.MAX_DIFF_BYTES is held as its hash: deleting or shrinking it still gives
    a patch that applies (the new side's data, the old side's id); a large new content is named
    only ("Binary files ... differ"), by design: the patch stays bounded."""
    from code_gym.util.hostfs import MAX_DIFF_BYTES
    source = tmp_path / "source"
    source.mkdir()
    big = bytes(range(256)) * (MAX_DIFF_BYTES // 256 + 8)
    for name in ("shrunk.bin", "gone.bin", "grown.txt"):
        (source / name).write_bytes(big)
    ws = Workspace(source, strategy="copy", disk_quota=0)
    try:
        (ws.root / "shrunk.bin").write_bytes(b"\x00small")
        (ws.root / "gone.bin").unlink()
        (ws.root / "grown.txt").write_bytes(big + b"more")
        ws.scan_changes()
        by_path = {d.path: d.text for d in ws.patch()}
        assert "Binary files a/grown.txt and b/grown.txt differ\n" in by_path["grown.txt"]
        applied = copy_source(source, tmp_path / "applied")
        git_apply(by_path["shrunk.bin"] + by_path["gone.bin"], applied)
        assert (applied / "shrunk.bin").read_bytes() == b"\x00small" and not (applied / "gone.bin").exists()
    finally:
        ws.close()
