"""Per-project environments: requirements read statically from a project's metadata, a virtualenv
built once and cached, the builder making validated tasks whose tests need a PyPI package and a
pytest plugin that code-gym's own venv lacks, the env and the agent's bash running with it, and an
uninstallable requirement rejected by name.

The tests that install from PyPI share one xdist group; without the index they skip with the
reason, except under CI=true, where they fail."""
import os
import subprocess
import textwrap
import urllib.request
from pathlib import Path

import pytest

from code_gym.languages.python.builder import BuildError, BuildOptions, build_tasks
from code_gym.languages.python.builder.project import EnvOptions
from code_gym.env.environment import CodeRepoEnv
from code_gym.languages.python.environments import (BASE_REQUIREMENTS, EnvironmentBuildError, build_environment, default_python,
                                   environment_spec, project_environment, project_requirements, task_runtime)
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.sandbox import make_sandbox
from code_gym.tasks.task import load_task
from code_gym.grading.gates import validate_task
from sandbox_backends import IN_CI, require

PYPI_PACKAGE = "toolz"  # pure Python, one wheel, not in code-gym's venv (checked below)
PLUGIN = "pytest-timeout"


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_requirements_come_from_every_metadata_file_without_running_any(tmp_path):
    marker = tmp_path / "setup-py-ran"
    _write(tmp_path, {
        "pyproject.toml": '''\
            [project]
            name = "demo"
            dependencies = ["toolz>=0.12", "attrs; python_version >= '3.8'"]
            [project.optional-dependencies]
            test = ["demo[speed]", "pytest-mock"]
            speed = ["cytoolz"]
            docs = ["sphinx"]
            [dependency-groups]
            test = ["freezegun", {include-group = "lint"}]
            lint = ["pyflakes"]
            [tool.pytest.ini_options]
            asyncio_mode = "auto"
            addopts = "-p xdist --strict-markers"
            ''',
        "setup.py": f'''\
            from setuptools import setup
            open({str(marker)!r}, "w").write("ran")
            BASE = ["six"]
            setup(name="demo", install_requires=BASE + ["idna"], tests_require=["iniconfig"],
                  extras_require={{"testing": ["tomli-w"]}})
            ''',
        "setup.cfg": "[options]\ninstall_requires =\n    packaging\n    colorama; sys_platform == 'win32'\n",
        "requirements-test.txt": "-r requirements/extra.txt\n-e .\n./local-wheel\nexceptiongroup  # why\n",
        "requirements/extra.txt": "sortedcontainers\n",
        "tox.ini": "[testenv]\ndeps =\n    py311: wcwidth\n    {env:EXTRA}\n    -r{toxinidir}/requirements/tox.txt\n",
        "requirements/tox.txt": "tabulate\n",
        "noxfile.py": 'import nox\n@nox.session\ndef tests(session):\n    session.install("-e", ".", "pyparsing")\n',
        "tests/test_x.py": "import hypothesis\nimport pytest\ntry:\n    import hypothesmith\nexcept ImportError:\n"
                           "    pass\n\n@pytest.mark.timeout(5)\ndef test_x(mocker):\n    pass\n",
    })
    found = project_requirements(tmp_path)
    names = {r.split(";")[0].split(">")[0].split("=")[0].split("[")[0] for r in found.requirements}
    assert not marker.exists()  # setup.py was read as a syntax tree, never run
    assert found.project == "demo" and "demo" not in names and "sphinx" not in names
    assert names >= {"toolz", "attrs", "pytest-mock", "cytoolz", "freezegun", "pyflakes", "six", "idna", "iniconfig",
                     "tomli-w", "packaging", "colorama", "sortedcontainers", "exceptiongroup", "wcwidth", "pyparsing", "tabulate",
                     "pytest-asyncio", "pytest-xdist", "pytest-timeout", "hypothesis",
                     "hypothesmith"}  # mccabe's optional import: without it its test module does not collect
    assert "toolz>=0.12" in found.requirements and 'colorama; sys_platform == "win32"' in found.requirements
    assert found.sources["pytest-asyncio"] == ("pytest config asyncio_mode",)
    assert any("./local-wheel" in s for s in found.skipped) and any("{env:EXTRA}" in s for s in found.skipped)


def test_a_project_that_declares_nothing_needs_no_environment(tmp_path):
    _write(tmp_path, {"lib.py": "X = 1\n", "tests/test_lib.py": "def test_x():\n    assert True\n"})
    requirements, environment = project_environment(tmp_path)
    assert requirements.requirements == () and environment is None


def test_a_task_without_an_environment_runs_with_the_backends_interpreter(tiny_task):
    """`task_runtime` gives every task the Python runtime: no folders to bind then, but the records
    reporter, the warm pytest server (run by the backend's python3) and plugin autoloading off."""
    runtime = task_runtime(tiny_task)
    assert tiny_task.environment is None and runtime.folders == () and runtime.path == ()
    assert runtime.reporter is not None and runtime.warm.interpreter == ("python3", "-c")
    assert runtime.warm.takes("python -m pytest -q tests") == ["-q", "tests"]
    assert runtime.variables("/usr/bin") == {"PATH": "/usr/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def test_an_edited_environment_table_is_refused(tmp_path):
    spec = environment_spec(["toolz"])
    task = _write(tmp_path / "t", {"repo/lib.py": "X = 1\n", "solution.patch": "", "hidden/tests/test_h.py": "",
                                   "task.toml": f'''\
        id = "t"
        statement = "s"
        visible_tests = []
        hidden_tests = ["tests/test_h.py"]
        reference_patch = "solution.patch"
        [environment]
        key = "{spec.key}"
        python = "{spec.python}"
        python_version = "{spec.python_version}"
        requirements = ["toolz", "evil-package"]
        '''})
    with pytest.raises(ValueError, match="does not match its requirements"):
        load_task(task)


# ---- with PyPI ----

def _pypi_reason() -> str | None:
    try:
        urllib.request.urlopen(f"https://pypi.org/simple/{PYPI_PACKAGE}/", timeout=15).close()
    except OSError as exc:
        return f"PyPI is not reachable ({exc}): these tests install {PYPI_PACKAGE} and {PLUGIN} from it"
    return None


@pytest.fixture(scope="module")
def pypi():
    reason = _pypi_reason()
    if reason:
        if IN_CI:
            pytest.fail(f"CI must run the environment tests: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def cache(tmp_path_factory, pypi):
    """A fresh code-gym cache for this module: the first build is cold."""
    folder = tmp_path_factory.mktemp("cache")
    old = os.environ.get("CODE_GYM_CACHE")
    os.environ["CODE_GYM_CACHE"] = str(folder)
    yield folder
    if old is None:
        del os.environ["CODE_GYM_CACHE"]
    else:
        os.environ["CODE_GYM_CACHE"] = old


STATS = {
    "pyproject.toml": f'''\
        [project]
        name = "statkit"
        version = "1.0"
        dependencies = ["{PYPI_PACKAGE}>=0.12"]
        [project.optional-dependencies]
        test = ["{PLUGIN}>=2"]
        [tool.pytest.ini_options]
        addopts = "--strict-markers"
        timeout = 60
        ''',
    "statkit/__init__.py": "",
    "statkit/counts.py": '''\
        """Counting helpers built on toolz."""
        from toolz import frequencies, groupby


        def top(items, n):
            """The `n` most frequent items, most frequent first, ties in order of first appearance."""
            counts = frequencies(items)
            order = {item: i for i, item in reversed(list(enumerate(items)))}
            return sorted(counts, key=lambda item: (-counts[item], order[item]))[:n]


        def by_length(words):
            """Words grouped by their length, each group in input order."""
            return groupby(len, words)
        ''',
    "tests/test_counts.py": '''\
        import pytest

        from statkit.counts import by_length, top


        @pytest.mark.timeout(30)  # --strict-markers: an error unless pytest-timeout is loaded
        def test_top():
            assert top(list("abracadabra"), 2) == ["a", "b"]
            assert top([3, 1, 1, 3, 2], 3) == [3, 1, 2]


        @pytest.mark.timeout(30)
        def test_by_length():
            assert by_length(["ab", "c", "de", "fgh"]) == {2: ["ab", "de"], 1: ["c"], 3: ["fgh"]}
        ''',
}


def test_the_package_is_not_in_code_gyms_own_venv():
    import importlib.util

    assert importlib.util.find_spec(PYPI_PACKAGE) is None and importlib.util.find_spec("pytest_timeout") is None


@pytest.fixture(scope="module")
def built(tmp_path_factory, cache):
    require("bwrap")
    project = _write(tmp_path_factory.mktemp("statkit"), STATS)
    out = tmp_path_factory.mktemp("out")
    report = build_tasks(project, out, BuildOptions(mutations_per_function=1, progress=False, workers=1))
    return project, report


pytestmark = pytest.mark.xdist_group("pypi")


def test_the_builder_makes_tasks_with_the_environment_built_once(built, cache):
    project, report = built
    assert report.tasks, report.summary()
    env = report.manifest["environment"]
    assert env["cached"] is False and any(r.startswith(PYPI_PACKAGE) for r in env["requirements"])
    assert any(i.startswith("toolz==") for i in env["installed"]) and any(i.startswith("pytest-timeout==")
                                                                          for i in env["installed"])
    assert Path(env["prefix"]).parent == cache / "environments"
    assert all(t.environment is not None and t.environment.key == env["key"] for t in report.tasks)
    # the second build of the same requirement set is a cache hit
    again, environment = project_environment(project)
    assert environment.cached and environment.spec.key == env["key"]
    assert set(BASE_REQUIREMENTS) <= set(environment.spec.install_set)


def test_without_the_environment_the_baseline_cannot_run(built, tmp_path):
    project, _ = built
    options = BuildOptions(progress=False, workers=1, environment=EnvOptions(enabled=False))
    with pytest.raises(BuildError, match="no test file passes|tests do not run"):
        build_tasks(project, tmp_path / "out", options)


def test_built_tasks_validate_with_their_environment(built):
    _, report = built
    task = report.tasks[0]
    verdict = validate_task(task, runs=1)
    assert verdict.ok, verdict.problems


def test_the_agents_bash_and_tests_run_with_the_environment(built):
    _, report = built
    task = next(t for t in report.tasks if t.kind == "bugfix")
    prefix = report.manifest["environment"]["prefix"]
    env = CodeRepoEnv(task=task)
    try:
        env.reset(seed=0)
        probe = ("python -c 'import sys, toolz, statkit; print(sys.prefix); print(statkit.__file__)'; which pytest; "
                 f"touch {prefix}/planted; echo rc=$?")
        _, _, _, _, info = env.step(hermes([{"name": "bash", "arguments": {"command": probe}}]))
        out = info["tool_results"][0]["output"]
        assert prefix in out and "/repo/statkit/__init__.py" in out  # the repo copy is what is imported
        assert f"{prefix}/bin/pytest" in out
        assert "Read-only file system" in out and not Path(prefix, "planted").exists()
        env.step(hermes(patch_to_calls(task.reference_patch, task.repo)))
        _, reward, terminated, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
        assert terminated and reward == 1.0 and info["resolved"], info
    finally:
        env.close()


def test_an_uninstallable_requirement_rejects_the_project_by_name(tmp_path, cache):
    files = dict(STATS)
    files["pyproject.toml"] = STATS["pyproject.toml"].replace(
        f'"{PYPI_PACKAGE}>=0.12"', f'"{PYPI_PACKAGE}>=0.12", "code-gym-no-such-distribution==1.0"')
    project = _write(tmp_path / "broken", files)
    with pytest.raises(BuildError) as caught:
        build_tasks(project, tmp_path / "out", BuildOptions(progress=False))
    message = str(caught.value)
    assert "'code-gym-no-such-distribution==1.0' cannot be installed" in message
    assert "declared in pyproject.toml [project] dependencies" in message
    assert not list((cache / "environments").glob("*/code-gym-environment.json")) or \
        all("no-such" not in p.read_text() for p in (cache / "environments").glob("*/code-gym-environment.json"))


def test_pip_names_the_failing_requirement_too(cache):
    spec = environment_spec(["code-gym-no-such-distribution==1.0", PYPI_PACKAGE])
    with pytest.raises(EnvironmentBuildError) as caught:
        build_environment(spec, installer="pip")
    assert caught.value.requirement == "code-gym-no-such-distribution==1.0" and caught.value.error


@pytest.mark.parametrize("kind", ["bwrap", "unshare"])
def test_local_sandboxes_bind_the_environment_read_only(built, kind, tmp_path):
    require(kind)
    _, report = built
    prefix = Path(report.manifest["environment"]["prefix"])
    runtime = report.tasks[0].environment and build_environment(report.tasks[0].environment).runtime()
    assert os.access(prefix, os.W_OK)  # the host may write it: only the sandbox's bind is read-only
    sandbox = make_sandbox(kind, tmp_path, runtime=runtime)
    run = sandbox.exec(f"python -c 'import sys, toolz; print(sys.prefix)'; echo $PYTEST_PLUGINS; "
                       f"echo x > {prefix}/lib/planted.pth; echo rc=$?")
    assert str(prefix) in run.output and "pytest_timeout" in run.output, run.output
    assert "rc=1" in run.output and not (prefix / "lib" / "planted.pth").exists()


@pytest.mark.parametrize("python", ["/usr/bin/python3.11", "code-gym's"])
def test_docker_runs_an_environment_bound_into_the_container(cache, python):
    """The default image is Debian bookworm's python3.11, the same build as this machine's
    /usr/bin/python3.11; code-gym's own interpreter (pyenv here) is bound with the environment and
    runs in the image too, since both are bookworm (the same C library)."""
    require("docker")
    python = default_python() if python == "code-gym's" else python
    if not Path(python).exists():
        pytest.skip(f"no {python} here to build an environment from")
    environment = build_environment(environment_spec([PYPI_PACKAGE], python))
    workspace = cache / "docker-ws"
    workspace.mkdir(exist_ok=True)
    sandbox = make_sandbox("docker-fresh", workspace, runtime=environment.runtime())
    try:
        run = sandbox.exec(f"python -c 'import sys, ssl, toolz; print(sys.prefix)'; touch {environment.prefix}/x; "
                           "python -m pytest --version")
    finally:
        sandbox.close()
    assert str(environment.prefix) in run.output, run.output
    assert "Read-only file system" in run.output and "pytest 9" in run.output
    plain = subprocess.run(["docker", "run", "--rm", "--network", "none", "code-gym:bookworm", "python3", "-c",
                            "import toolz"], capture_output=True, text=True)
    assert plain.returncode != 0  # the image alone lacks it


def test_swebench_instance_gets_the_environment_of_its_setup_commit(tmp_path, cache):
    """The repository at base_commit declares nothing; its environment_setup_commit adds a
    requirements file (as SWE-bench builds environments from that commit), and the record adds a
    requirement of its own. The task runs its tests with both installed."""
    import json

    from code_gym.tasks.loaders.swebench import load_swebench
    from conftest import git

    require("bwrap")
    repo = _write(tmp_path / "acme__words", {
        "words/__init__.py": "",
        "words/ops.py": "from more_itertools import first\nfrom toolz import unique\n\n\ndef distinct(xs):\n"
                        "    return list(xs)\n\n\ndef head(xs):\n    return first(xs)\n",
        "tests/test_ops.py": "from words.ops import head\n\n\ndef test_head():\n    assert head([3, 4]) == 3\n",
    })
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm"]
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git(*commit, "base", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo).strip()
    (repo / "words/ops.py").write_text((repo / "words/ops.py").read_text().replace("return list(xs)",
                                                                                  "return list(unique(xs))"))
    (repo / "tests/test_ops.py").write_text((repo / "tests/test_ops.py").read_text().replace(
        "import head", "import distinct, head") + "\n\ndef test_distinct():\n    assert distinct([1, 1, 2]) == [1, 2]\n")
    git("add", "-A", cwd=repo)
    patch, test_patch = git("diff", "--cached", "--", "words", cwd=repo), git("diff", "--cached", "--", "tests", cwd=repo)
    git("reset", "-q", "--hard", cwd=repo)
    (repo / "requirements.txt").write_text(f"{PYPI_PACKAGE}\n")
    git("add", "-A", cwd=repo)
    git(*commit, "environment", cwd=repo)
    setup = git("rev-parse", "HEAD", cwd=repo).strip()
    record = {"instance_id": "acme__words-1", "repo": "acme/words", "base_commit": base, "patch": patch,
              "test_patch": test_patch, "problem_statement": "distinct() keeps duplicates.",
              "FAIL_TO_PASS": ["tests/test_ops.py::test_distinct"], "PASS_TO_PASS": ["tests/test_ops.py::test_head"],
              "environment_setup_commit": setup, "version": "0.1", "pip_packages": "more-itertools"}
    (tmp_path / "data.jsonl").write_text(json.dumps(record) + "\n")
    [task] = load_swebench(tmp_path / "data.jsonl", cache_dir=tmp_path / "tasks")
    assert task.environment is not None and set(task.environment.requirements) == {PYPI_PACKAGE, "more-itertools"}
    assert not (task.repo / "requirements.txt").exists()  # the repo is still the base commit
    verdict = validate_task(task, runs=1)
    assert verdict.ok, verdict.problems


def test_the_cli_lists_requirements_and_finds_the_built_environment(built, capsys, tmp_path):
    from code_gym.apps.cli import main

    project, report = built
    assert main(["env", "build", str(project)]) == 0
    out = capsys.readouterr().out
    assert "pyproject.toml [project.optional-dependencies]" in out and "found in the cache" in out
    assert report.manifest["environment"]["key"] in out and "pytest_timeout" in out
    broken = _write(tmp_path / "broken", {"requirements.txt": "code-gym-no-such-distribution\n"})
    assert main(["env", "build", str(broken)]) == 1
    assert "'code-gym-no-such-distribution' cannot be installed" in capsys.readouterr().err


def test_poetry_pdm_hatch_and_setuptools_dynamic_tables(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": '''\
            [tool.poetry]
            name = "poem"
            [tool.poetry.dependencies]
            python = "^3.9"
            toolz = "^0.12"
            attrs = {version = "~23.1", extras = ["tests"]}
            local = {path = "../local"}
            extra-only = {version = "*", optional = true}
            [tool.poetry.group.test.dependencies]
            pytest-mock = "*"
            [tool.pdm.dev-dependencies]
            test = ["sortedcontainers>=2"]
            [tool.hatch.envs.default]
            dependencies = ["wcwidth"]
            [tool.setuptools.dynamic]
            dependencies = {file = ["reqs/run.txt"]}
            ''',
        "reqs/run.txt": "tabulate==0.9.0\n",
    })
    found = project_requirements(tmp_path).requirements
    assert set(found) == {"toolz>=0.12", "attrs[tests]>=23.1", "pytest-mock", "sortedcontainers>=2", "wcwidth",
                          "tabulate==0.9.0"}


def test_built_tasks_validate_in_docker_with_their_environment(built):
    """The same task graded in a container: the environment (and the interpreter it was made from)
    bound read-only into it, the warm runner started with its python."""
    require("docker")
    _, report = built
    verdict = validate_task(report.tasks[0], runs=1, isolation="docker")
    assert verdict.ok, verdict.problems


def test_an_sdist_only_requirement_is_refused_unless_built_in_the_sandbox(cache):
    """termcolor 1.1.0 exists only as an sdist: wheels only, it rejects the environment by name;
    with sdists it is built, by its setup.py, inside bubblewrap (network on, only the environment
    and a cache of its own writable), and the build record says so."""
    require("bwrap")
    spec = environment_spec(["termcolor==1.1.0"])
    with pytest.raises(EnvironmentBuildError, match="no usable wheels|No matching distribution") as caught:
        build_environment(spec)
    assert caught.value.requirement == "termcolor==1.1.0" and "sdists=True" in str(caught.value)
    environment = build_environment(environment_spec(["termcolor==1.1.0"], sdists=True))
    assert "termcolor==1.1.0" in environment.installed and not environment.cached
    assert '"sdists": true' in (environment.prefix / "code-gym-environment.json").read_text()
    assert environment.spec.as_manifest()["sdists"] is True


def test_an_sdists_setup_py_cannot_reach_the_host(cache, tmp_path):
    """Attack: an sdist whose setup.py writes a file on the host. Run by the installer on the host
    (what building sdists outside the sandbox would do) it writes the file; built by
    build_environment(sdists=True) it cannot (the sandbox's file system has no such folder)."""
    import io
    import tarfile

    require("bwrap")
    target = tmp_path / "host-folder"
    target.mkdir()
    setup = (f"import pathlib\ntry:\n    pathlib.Path({str(target / 'pwned')!r}).write_text('setup.py ran here')\n"
             "except OSError:\n    pass\nfrom setuptools import setup\nsetup(name='evil', version='1.0', py_modules=['evil'])\n")
    local = cache / "environments" / ".sdist-cache" / "local"  # bound into the sandbox, as the sdist cache is
    local.mkdir(parents=True, exist_ok=True)
    sdist = local / "evil-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        for name, text in {"evil-1.0/setup.py": setup, "evil-1.0/evil.py": "X = 1\n",
                           "evil-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    requirement = f"evil @ {sdist.as_uri()}"
    environment = build_environment(environment_spec([requirement], sdists=True))
    assert "evil==1.0" in environment.installed
    assert not (target / "pwned").exists()  # built in the sandbox: the host folder is untouched
    naive = tmp_path / "naive-venv"
    subprocess.run([default_python(), "-m", "venv", "--without-pip", str(naive)], check=True)
    from uv import find_uv_bin

    subprocess.run([find_uv_bin(), "pip", "install", "--python", str(naive / "bin/python"), "--quiet", requirement],
                   check=True, capture_output=True)
    assert (target / "pwned").read_text() == "setup.py ran here"  # the same build on the host


def test_the_graders_pytest_replaces_a_projects_pin(tmp_path, cache):
    """wcwidth's and click's shape: a pinned test lock made with pytest 7, with the pluggy it came
    with (pluggy 1.2: no pytest 8 installs beside it). The grader's results plugin and warm runner
    run on the environment's pytest, so its pytest (>=8) is installed instead, the lock's pins of
    pytest's own dependencies are relaxed, and what was replaced is listed with the reason."""
    files = {"setup.py": "from setuptools import setup\nsetup(name='pinned')\n",
             "requirements-tests.txt": f"pytest==7.4.0\ncoverage==5.5\npluggy==1.2.0  # via pytest\n"
                                       f"iniconfig==2.0.0\n{PYPI_PACKAGE}==0.12.1\n",
             "pinned.py": "X = 1\n", "tests/test_pinned.py": "def test_x():\n    assert True\n"}
    project = _write(tmp_path / "pinned", files)
    found, environment = project_environment(project)
    replaced = [s for s in found.skipped if "replaced by the grader's" in s]
    assert len(replaced) == 2 and any("pytest==7.4.0" in s and "pytest>=8,<10" in s for s in replaced)
    assert any("pluggy==1.2.0 (relaxed to pluggy" in s for s in found.skipped)
    assert not any(r.startswith(("pytest", "coverage")) for r in found.requirements)
    assert {"pluggy", "iniconfig", f"{PYPI_PACKAGE}==0.12.1"} <= set(found.requirements)  # other pins stay
    installed = dict(i.split("==") for i in environment.installed)
    assert int(installed["pytest"].split(".")[0]) >= 8 and installed[PYPI_PACKAGE] == "0.12.1"
    # a requirement set that names an old pytest itself (a SWE-bench instance's) gets the grader's too:
    # uv's overrides replace every requirement on pytest, a dependency's metadata included
    pinned = build_environment(environment_spec(["pytest==7.4.2", PYPI_PACKAGE]))
    assert int(dict(i.split("==") for i in pinned.installed)["pytest"].split(".")[0]) >= 8


def test_a_tasks_environment_cannot_make_the_host_run_what_it_names(tmp_path, monkeypatch):
    """A task folder's [environment] table is task data: the red team named a script as its
    `python` (the host ran it as `python -m venv`) and wrote a requirement as an installer option
    (`--editable=DIR`: uv ran the project's in-tree build backend on the host)."""
    from code_gym.languages.python.environments import build
    from code_gym.languages.python.environments import EnvSpec

    marker = tmp_path / "ran-on-the-host"
    script = tmp_path / "python3.11"
    script.write_text(f"#!/bin/sh\necho script > {marker}\nexec {default_python()} \"$@\"\n")
    script.chmod(0o755)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "bk"\nbackend-path = ["."]\n'
                                            '[project]\nname = "evil"\nversion = "1"\n')
    (project / "bk.py").write_text(f"open({str(marker)!r}, 'w').write('backend')\n"
                                   "from setuptools.build_meta import *\n")
    version = build.python_version(default_python())
    for spec, message in ((EnvSpec((), str(script), version, False), "not an interpreter this machine trusts"),
                          (EnvSpec((f"--editable={project}",), default_python(), version, False),
                           "is not valid PEP 508: an installer option")):
        with pytest.raises(EnvironmentBuildError, match=message):
            build_environment(spec, root=tmp_path / "envs")
        assert not marker.exists()
    # the defence off: the interpreter named by the task runs on the host
    monkeypatch.setattr(build, "check_spec", lambda spec: None)
    try:
        build_environment(EnvSpec((), str(script), version, False), root=tmp_path / "envs")
    except EnvironmentBuildError:  # whether the rest of the build works offline does not matter here
        pass
    assert marker.read_text() == "script\n"
    marker.unlink()
    try:  # and the requirement written as an option runs the project's build backend on the host
        build_environment(EnvSpec((f"--editable={project}",), default_python(), version, False), root=tmp_path / "e2")
    except Exception:  # noqa: BLE001 - the build fails after the backend ran (its error report chokes on the option)
        pass
    assert marker.read_text() == "backend"
