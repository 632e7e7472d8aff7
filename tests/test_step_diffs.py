"""info["diff"], info["patch"] and provenance, whatever tool made the change."""
import json

import gymnasium as gym
import pytest

from code_gym.workspace.working_copy import Workspace
from unidiff import PatchSet


@pytest.fixture
def env(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task)
    env.reset(seed=0)
    yield env
    env.close()


def bash(cmd):
    return f"```bash\n{cmd}\n```"


def call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def test_sed_in_bash_appears_in_step_diff(env):
    action = bash("sed -i 's/a - b/a + b/' calc/ops.py")
    _, _, _, _, info = env.step(action)
    [patch] = PatchSet(info["diff"])
    assert patch.path == "calc/ops.py"
    assert [l.value for h in patch for l in h if l.is_added] == ["    return a + b\n"]
    assert [l.value for h in patch for l in h if l.is_removed] == ["    return a - b\n"]
    # the new line is not in the command as a line: no span of its own; made by call 0, whose edit
    # argument (the command) credit gives it
    command = action.index("sed")
    assert info["provenance"] == []
    assert info["edits"] == [{"call": 0, "kind": kd, "start": command,
                              "end": command + len("sed -i 's/a - b/a + b/' calc/ops.py\n")} for kd in ("added", "deleted")]
    assert info["line_calls"] == [{"path": "calc/ops.py", "kind": "added", "line": 2, "call": 0},
                                  {"path": "calc/ops.py", "kind": "deleted", "line": 2, "call": 0}]
    assert info["calls"] == [{"start": 0, "end": len(action)}]


def test_step_diff_is_per_step_and_patch_is_cumulative(env):
    _, _, _, _, first = env.step(bash("sed -i 's/a - b/a + b/' calc/ops.py"))
    _, _, _, _, second = env.step(bash("sed -i 's/return a + b$/return a * b/' calc/ops.py"))
    assert "a * b" in second["diff"] and "a - b" not in second["diff"]
    third = env.step(bash("true"))[4]
    assert third["diff"] == ""
    assert "-    return a - b" in third["patch"] and "+    return a * b" in third["patch"]


def test_new_deleted_renamed_binary_and_mode_changes(env):
    info = env.step(bash("echo hi > NEW.txt && rm calc/__init__.py && mv calc/ops.py calc/ops2.py "
                         "&& printf '\\x00\\x07' > data.bin && chmod +x tests/test_calc.py"))[4]
    diff = info["diff"]
    assert "new file mode 100644\n--- /dev/null\n+++ b/NEW.txt\n@@ -0,0 +1 @@\n+hi\n" in diff
    assert "deleted file mode 100644\n--- a/calc/__init__.py\n+++ /dev/null" in diff
    assert "rename from calc/ops.py\nrename to calc/ops2.py" in diff
    assert "diff --git a/data.bin b/data.bin\nindex " in diff and "100644\nGIT binary patch\nliteral 2\n" in diff
    assert "old mode 100644\nnew mode 100755" in diff
    # a rename lists both paths, the old one as gone (the diff's "rename from")
    assert info["changed_files"] == ["NEW.txt", "calc/__init__.py", "calc/ops.py", "calc/ops2.py", "data.bin",
                                     "tests/test_calc.py"]


def test_provenance_points_at_the_written_substring(env):
    new = "def add(a, b):\n    return a + b"
    action = "fixing add\n" + call("str_replace", path="calc/ops.py", old_str="def add(a, b):\n    return a - b",
                                   new_str=new)
    info = env.step(action)[4]
    assert not info["invalid_action"]
    [prov] = info["provenance"]
    assert prov["path"] == "calc/ops.py" and prov["line"] == 2
    assert action[prov["start"]:prov["end"]] == "    return a + b"


def test_provenance_for_create_and_insert(env):
    text = 'X = "t\u00e9\\t"\ny = 2\n'
    action = call("create", path="pkg/new.py", file_text=text) + call("insert", path="calc/ops.py",
                                                                      insert_line=0, new_str="import math")
    info = env.step(action)[4]
    spans = {(p["path"], p["line"]): action[p["start"]:p["end"]] for p in info["provenance"]}
    assert spans[("pkg/new.py", 1)] == json.dumps('X = "t\u00e9\\t"')[1:-1]
    assert spans[("pkg/new.py", 2)] == "y = 2"
    assert spans[("calc/ops.py", 1)] == "import math"


def test_patch_applies_with_git(env, tiny_task, tmp_path):
    import subprocess
    import shutil
    env.step(call("str_replace", path="calc/ops.py", old_str="a - b", new_str="a + b"))
    env.step(bash("echo x > extra.txt"))
    patch = env.step(bash("rm data.bin"))[4]["patch"]
    target = tmp_path / "copy"
    shutil.copytree(tiny_task.repo, target)
    (tmp_path / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", str(tmp_path / "p.diff")], cwd=target, check=True)
    assert "a + b" in (target / "calc/ops.py").read_text()
    assert (target / "extra.txt").read_text() == "x\n"
    assert not (target / "data.bin").exists()


@pytest.mark.parametrize("strategy", ["copy", "overlay"])
def test_same_size_rewrite_within_clock_tick_is_seen(tiny_task, strategy):
    from code_gym.util.hostfs import overlay_supported
    if strategy == "overlay" and not overlay_supported():
        pytest.skip("overlayfs cannot be mounted here (needs root)")
    ws = Workspace(tiny_task.repo, strategy=strategy)
    try:
        target = ws.root / "calc/ops.py"
        text = target.read_text()
        target.write_text(text.replace("a - b", "a + b"))
        assert [d.path for d in ws.scan_changes()] == ["calc/ops.py"]
        target.write_text(text.replace("a - b", "a * b"))  # same size, same coarse mtime likely
        [d] = ws.scan_changes()
        assert "+    return a * b" in d.text
        assert ws.changed_files() == {"calc/ops.py": text.replace("a - b", "a * b").encode()}
    finally:
        ws.close()
    assert not ws.base.exists()
