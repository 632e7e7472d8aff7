"""The files a Python project's grader owns: conftest files, pytest's configuration and the
interpreter's start-up hooks never come from the agent (`grader_owned`), and a run must leave them
untouched (`guarded`)."""
from __future__ import annotations

import configparser
import posixpath
import tomllib

CONFTEST = "conftest.py"
# every file pytest 9 reads its configuration from, besides setup.cfg and pyproject.toml (their
# pytest sections): _pytest/config/findpaths.py, locate_config
PYTEST_CONFIGS = frozenset({"pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini"})
STARTUP_HOOKS = frozenset({"sitecustomize.py", "usercustomize.py"})
GUARDED_NAMES = frozenset({CONFTEST, "setup.cfg", "pyproject.toml"}) | PYTEST_CONFIGS | STARTUP_HOOKS


def grader_owned(path: str, old: bytes | None, new: bytes | None) -> str | None:
    """The rule that makes the grader keep the task's own version of `path`, if any: conftest files,
    pytest configuration and interpreter start-up hooks never come from the agent."""
    name = posixpath.basename(path)
    if name == CONFTEST:
        return "conftest"
    if name in PYTEST_CONFIGS:
        return "test-config"
    if name == "setup.cfg" and _cfg_section(old) != _cfg_section(new):
        return "test-config"
    if name == "pyproject.toml" and _toml_section(old) != _toml_section(new):
        return "test-config"
    if name in STARTUP_HOOKS or name.endswith(".pth"):
        return "startup-hook"
    return None


def _cfg_section(data: bytes | None) -> object:
    if data is None:
        return {}
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(data.decode("utf-8", "replace"))
    except configparser.Error:
        return "unparseable"
    return {s: dict(parser.items(s)) for s in ("tool:pytest", "pytest") if parser.has_section(s)}


def _toml_section(data: bytes | None) -> object:
    if data is None:
        return None
    try:
        doc = tomllib.loads(data.decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError:
        return "unparseable"
    return doc.get("tool", {}).get("pytest") if isinstance(doc.get("tool"), dict) else None


def guarded(path: str) -> bool:
    """Whether a test run's verdict depends on `path` staying as it is (configuration and hooks)."""
    name = posixpath.basename(path)
    return name in GUARDED_NAMES or name.endswith(".pth")
