"""The editor tools run on the host, as root, on the agent's workspace. `resolve` checks a path, then
the tool reads or writes it; a process of the agent's that outlives its command (the red team kept
one alive in Docker) can swap a link in between. The red team won that race and wrote a file
anywhere on the host (a hidden test, then reward 1.0 for the untouched repo). Here the swap is made
to win every time: whatever the race, the host's read or write must stay inside the workspace."""
import os
from pathlib import Path

import pytest

from code_gym.util import hostfs

from code_gym.actions import tools
from code_gym.actions.parse import ToolCall
from code_gym.sandbox import Limits, make_sandbox
from code_gym.actions.tools import ToolContext, run_tool


def _swapping_resolve(monkeypatch, target: Path):
    """`resolve` as it was, then the path (or its folder) swapped for a link to `target`, as the
    racing process would do right after the check."""
    resolve = tools.resolve

    def raced(ctx, path, must_exist=True):
        full = resolve(ctx, path, must_exist)
        victim = full.parent if full.parent != ctx.root else full
        if victim.is_dir() and not victim.is_symlink():
            for child in victim.iterdir():
                child.unlink()
            victim.rmdir()
        elif victim.exists() or victim.is_symlink():
            victim.unlink()
        os.symlink(target if victim == full else target.parent, victim)
        return full
    monkeypatch.setattr(tools, "resolve", raced)


@pytest.mark.parametrize("tool, arguments", [
    ("create", {"path": "pkg/new.py", "file_text": "PWNED\n"}),
    ("str_replace", {"path": "pkg/mod.py", "old_str": "x = 1", "new_str": "PWNED"}),
    ("insert", {"path": "pkg/mod.py", "insert_line": 0, "new_str": "PWNED"}),
])
def test_a_link_swapped_in_after_the_check_gets_no_host_write(tool, arguments, tmp_path, monkeypatch):
    work, outside = tmp_path / "repo", tmp_path / "host"
    (work / "pkg").mkdir(parents=True)
    outside.mkdir()
    victim = outside / ("new.py" if tool == "create" else "mod.py")
    if tool != "create":
        victim.write_text("x = 1\n")  # the host file the link points at, with the text the edit expects
    box = make_sandbox("none", work, Limits(timeout=10))
    ctx = ToolContext(work, box, (), "python -m pytest")

    def attack():
        (work / "pkg").mkdir(exist_ok=True)
        (work / "pkg" / "mod.py").write_text("x = 1\n")
        return run_tool(ctx, ToolCall(tool, arguments))

    try:
        _swapping_resolve(monkeypatch, victim)
        result = attack()
        assert "resolves outside the repository" in result.output, result.output
        assert not victim.exists() or "PWNED" not in victim.read_text()
        # the defence off (the write follows links, as before): the attack lands on the host
        monkeypatch.setattr(tools, "write_beneath",
                            lambda root, rel, data, exclusive=False: (Path(root) / rel).write_bytes(data))
        monkeypatch.setattr(tools, "read_beneath", lambda root, rel: (Path(root) / rel).read_bytes())
        monkeypatch.setattr(tools, "make_dirs_beneath", lambda root, rel: (Path(root) / rel).mkdir(parents=True,
                                                                                                  exist_ok=True))
        for entry in (work / "pkg",):
            if entry.is_symlink():
                entry.unlink()
        attack()
        assert "PWNED" in victim.read_text()
    finally:
        box.close()


def test_reads_stay_inside_and_links_inside_still_work(tmp_path):
    (tmp_path / "repo" / "pkg").mkdir(parents=True)
    (tmp_path / "secret").write_text("host secret\n")
    (tmp_path / "repo" / "pkg" / "mod.py").write_text("x = 1\n")
    os.symlink("mod.py", tmp_path / "repo" / "pkg" / "alias.py")
    assert hostfs.read_beneath(tmp_path / "repo", "pkg/alias.py") == b"x = 1\n"
    os.symlink(tmp_path / "secret", tmp_path / "repo" / "pkg" / "leak.py")
    with pytest.raises(OSError):
        hostfs.read_beneath(tmp_path / "repo", "pkg/leak.py")
