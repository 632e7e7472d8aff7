"""Shared fixtures: a tiny task written in the test, and the bundled suite."""
from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from code_gym.tasks.task import bundled_tasks, load_task

TINY_MANIFEST = '''\
id = "tiny"
kind = "bugfix"
statement = """add() subtracts and mul() adds; both must do what their names say."""
visible_tests = ["tests/test_calc.py"]
hidden_tests = ["tests/test_hidden_calc.py"]
protected_paths = ["tests/"]
reference_patch = "solution.patch"
test_command = "python -m pytest"
[timeouts]
command = 5
tests = 30
'''

FILES = {
    "repo/calc/__init__.py": "from calc.ops import add, mul\n",
    "repo/calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n",
    "repo/data.bin": b"\x00\x01\x02binary\x00",
    "repo/tests/test_calc.py": "from calc import add\n\n\ndef test_add_zero():\n    assert add(2, 0) == 2\n",
    "hidden/tests/test_hidden_calc.py": textwrap.dedent("""\
        from calc import add, mul


        def test_add():
            assert add(2, 3) == 5


        def test_mul():
            assert mul(2, 3) == 6
        """),
}

SOLUTION = """\
diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,6 +1,6 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
-    return a + b
+    return a * b
"""


def write_tiny_task(root: Path) -> Path:
    folder = root / "tiny"
    for rel, content in FILES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    (folder / "task.toml").write_text(TINY_MANIFEST)
    (folder / "solution.patch").write_text(SOLUTION)
    return folder


@pytest.fixture
def tiny_task(tmp_path):
    return load_task(write_tiny_task(tmp_path))


def pytest_report_header(config):
    kinds = __import__("code_gym.sandbox", fromlist=["available_isolation"]).available_isolation()
    return f"code-gym sandboxes available: {kinds}"


BUNDLED = bundled_tasks()


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout
