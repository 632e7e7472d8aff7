"""JavaScript environments and the files a JavaScript grader owns: node_modules built from the
project's package.json by npm (scripts off), cached by what was installed, refused with the
package named; package.json's test fields, runner configuration and node_modules kept."""
import json
import shutil
import subprocess

import pytest

from code_gym.languages.javascript import environments, files
from code_gym.tasks.task import TaskError

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed (scripts/setup.sh installs it)")


def _project(tmp_path, manifest: dict, lock: str | None = None):
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    if lock is not None:
        (tmp_path / "package-lock.json").write_text(lock)
    return tmp_path


def test_spec_reads_every_dependency_field_and_keys_the_lockfile(tmp_path):
    repo = _project(tmp_path, {"name": "p", "dependencies": {"b": "^1.0.0"}, "devDependencies": {"a": "~2.1.0"},
                               "scripts": {"test": "tape test/*.js"}})
    spec = environments.project_spec(repo)
    assert spec.dependencies == (("a", "~2.1.0"), ("b", "^1.0.0"))
    assert spec.lockfile == ""
    locked = environments.project_spec(_project(tmp_path, json.loads((repo / "package.json").read_text()), "{}"))
    assert locked.lockfile and locked.key != spec.key


def test_no_dependencies_needs_no_environment(tmp_path):
    assert environments.project_spec(_project(tmp_path, {"name": "p", "version": "1.0.0"})) is None
    assert environments.project_spec(tmp_path / "nowhere") is None


@pytest.mark.parametrize("wanted", ["file:../evil", "git+https://example.com/x.git", "github:user/repo",
                                    "https://example.com/x.tgz", "link:/etc"])
def test_a_dependency_from_outside_the_registry_is_refused_by_name(tmp_path, wanted):
    repo = _project(tmp_path, {"devDependencies": {"tape": "^5.7.0", "sneaky": wanted}})
    with pytest.raises(environments.EnvironmentBuildError, match="sneaky") as caught:
        environments.project_spec(repo)
    assert caught.value.package == "sneaky"


def test_malformed_package_json_is_a_task_error(tmp_path):
    (tmp_path / "package.json").write_text("{not json")
    with pytest.raises(TaskError, match="package.json.*not valid JSON"):
        environments.project_spec(tmp_path)


def test_environment_is_installed_once_without_scripts_and_reused(tmp_path):
    root = tmp_path / "envs"
    spec = environments.NpmSpec((("minimist", "1.2.8"),))
    first = environments.build_environment(spec, root=root)
    assert first.cached is False and "minimist@1.2.8" in first.installed
    assert (first.node_modules / "minimist" / "package.json").is_file()
    again = environments.build_environment(spec, root=root)
    assert again.cached is True and again.folder == first.folder
    out = subprocess.run(["node", "-e", "console.log(require('minimist')(['--a', '1']).a)"], capture_output=True,
                         text=True, env={"NODE_PATH": str(first.node_modules), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "1"


def test_install_scripts_do_not_run(tmp_path):
    """esbuild's postinstall replaces its bin/esbuild JavaScript stub by the native binary of its
    platform package: with scripts off the stub stays (and the platform package is installed)."""
    root = tmp_path / "envs"
    env = environments.build_environment(environments.NpmSpec((("esbuild", "0.19.12"),)), root=root)
    package = json.loads((env.node_modules / "esbuild" / "package.json").read_text())
    assert "postinstall" in package["scripts"]
    assert (env.node_modules / "@esbuild" / "linux-x64" / "bin" / "esbuild").read_bytes()[:4] == b"\x7fELF"
    assert (env.node_modules / "esbuild" / "bin" / "esbuild").read_bytes()[:2] == b"#!"


def test_a_package_npm_cannot_install_is_named(tmp_path):
    spec = environments.NpmSpec((("minimist", "^99.0.0"),))
    with pytest.raises(environments.EnvironmentBuildError, match=r"minimist could not be installed") as caught:
        environments.build_environment(spec, root=tmp_path / "envs")
    assert caught.value.package == "minimist"
    assert not (tmp_path / "envs" / spec.key).exists()  # nothing half-built is left to be found as cached


@pytest.mark.parametrize("path, old, new, rule", [
    ("package.json", b'{"scripts": {"test": "tape t.js"}}', b'{"scripts": {"test": "true"}}', "test-config"),
    ("package.json", b'{"devDependencies": {"tape": "5"}}', b'{"devDependencies": {}}', "test-config"),
    ("package.json", b'{"type": "commonjs"}', b'{"type": "module"}', "test-config"),
    ("package.json", b'{"version": "1.0.0"}', b'{"version": "1.0.1"}', None),
    ("package.json", b'{"version": "1.0.0"}', b'{not json', "test-config"),
    ("node_modules/tape/index.js", None, b"module.exports = () => {}", "dependencies"),
    ("lib/node_modules/x.js", None, b"", "dependencies"),
    (".mocharc.yml", None, b"require: ./cheat.js", "test-config"),
    ("jest.config.js", b"module.exports = {}", b"module.exports = {testMatch: []}", "test-config"),
    (".npmrc", None, b"node-options=--require ./cheat.js", "test-config"),
    ("package-lock.json", b"{}", b'{"a": 1}', "dependencies"),
    ("lib/index.js", b"1", b"2", None),
])
def test_grader_owned_files(path, old, new, rule):
    assert files.grader_owned(path, old, new) == rule


@pytest.mark.parametrize("isolation", ["bwrap", "docker"])
def test_cjs_and_esm_tests_resolve_the_environments_packages_in_the_sandbox(tmp_path, isolation):
    """require() finds node_modules through NODE_PATH; an ES module's import does not read it, and
    finds the package through the environment's resolve hook."""
    from code_gym.languages import get
    from code_gym.sandbox import Limits, make_sandbox
    from code_gym.tasks.task import Task
    from sandbox_backends import require

    require(isolation)
    (tmp_path / "repo").mkdir()
    repo = _project(tmp_path / "repo", {"name": "p", "devDependencies": {"minimist": "1.2.8"}})
    (repo / "a.mjs").write_text("import minimist from 'minimist';\nconsole.log('esm', minimist(['--x', '2']).x);\n")
    (repo / "b.cjs").write_text("console.log('cjs', require('minimist')(['--y', '3']).y);\n")
    task = Task("t", "s", repo, tmp_path / "hidden", (), (), (), "", language="javascript", test_command="node --test")
    sandbox = make_sandbox(isolation, repo, Limits(timeout=60), runtime=get("javascript").runtime(task))
    try:
        out = sandbox.exec("node a.mjs && node b.cjs")
    finally:
        sandbox.close()
    assert out.exit_code == 0 and "esm 2" in out.output and "cjs 3" in out.output, out.output
