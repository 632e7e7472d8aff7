"""The wheel ships every package and the bundled suite."""
import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set(find_packages(str(ROOT), include=["code_gym*", "credit*", "integrations*"]))
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"
    assert config["package-dir"]["code_gym.bundled_tasks"] == "tasks"


def test_entry_point_and_console_script_are_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["code-gym"] == "code_gym.apps.cli:main"
    assert project["entry-points"]["gymnasium.envs"]["code_gym"] == "code_gym:register_envs"
