"""Limits a user can hit, answered with what the limit is and what to do (issue 31, item 12).

A 900 KB bash command used to come back after 9.3 s as a raw OS error ("Argument list too long:
/usr/bin/bwrap"): the kernel takes at most 128 KiB in one argument, and the 9 s went to splitting the
command with shlex to see whether the warm runner takes it.
"""
from __future__ import annotations

import shlex

import pytest

from code_gym.languages.python.warm import pytest_argv
from code_gym.sandbox import Limits, make_sandbox
from code_gym.sandbox.base import MAX_ARGUMENT_BYTES, CappedOutput

from sandbox_backends import require


@pytest.mark.parametrize("kind", ["bwrap", "unshare", "docker"])
def test_a_command_over_the_argument_limit_is_refused_with_the_limit_and_what_to_do(kind, tmp_path):
    require(kind)
    box = make_sandbox(kind, tmp_path, Limits(timeout=20))
    try:
        long = box.exec("touch ran; echo " + "x" * 900_000)
        fits = box.exec("echo " + "x" * 100_000 + " | wc -c")
    finally:
        box.close()
    assert long.exit_code == 126 and not (tmp_path / "ran").exists()
    assert "900,016 bytes" in long.output and "128 KiB" in long.output and "editor tool (create)" in long.output
    assert f"at most {MAX_ARGUMENT_BYTES:,} bytes" in long.output or kind == "unshare"  # unshare wraps it in more
    assert fits.exit_code == 0 and fits.output.strip() == "100001"


def test_capped_output_says_what_the_cap_is_and_how_to_see_the_rest():
    output = CappedOutput(1000)
    output.feed(b"y" * 5000)
    text = output.text()
    assert "4000 bytes of output omitted" in text and "capped at 1,000 bytes" in text and "> out.txt" in text


@pytest.mark.parametrize("args", [
    [], ["-q"], ["tests/test_a.py::test_b[x y]"], ["-k", "a and not b"], ["it's"], [""], ["a'\"b"], ["-p", "no:cache"],
    ["é", "$HOME"], ["-x", "--tb=short", "tests/x.py"],
])
def test_the_warm_runner_takes_exactly_the_commands_shlex_join_writes(args):
    for python in ("python", "python3"):
        command = shlex.join([python, "-m", "pytest", *args])
        assert pytest_argv(command) == args
        assert pytest_argv(" " + command + " ") == args
    assert pytest_argv("python -m pytest 'a' b") is None  # not as shlex.join writes it: the shell's to read
    assert pytest_argv("python -m pytest $HOME") is None
    assert pytest_argv("python -m pytest -p myplugin") is None
    assert pytest_argv("echo python -m pytest") is None


def test_a_long_command_is_parsed_in_linear_time():
    """shlex.split took 18 s on 900 KB; the runner's check must not be what a long command waits for
    (the size here would take minutes with shlex)."""
    ids = [f"tests/test_{i}.py::test_{i}" for i in range(60_000)]
    assert pytest_argv(shlex.join(["python", "-m", "pytest", *ids])) == ids
    assert pytest_argv("echo " + "x" * 3_000_000) is None
