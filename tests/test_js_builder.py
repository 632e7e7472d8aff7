"""The JavaScript builder (code_gym.languages.javascript.builder): reading a package's test script,
test files, sources and test dependencies; the gates' decisions on a hand-made package whose
answers are known (node's own test runner: no dependency to install); a real npm package built end
to end (minimist@1.2.8 with tape, fetched with npm pack), re-validated, and the batch run."""
from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest

from code_gym import languages
from code_gym.grading.builder import Candidate
from code_gym.languages.javascript.builder import BuildError, BuildOptions, build_many, build_tasks, expand_sources
from code_gym.languages.javascript.builder import pipeline
from code_gym.languages.javascript.builder.mutations import functions, mutation_sites
from code_gym.languages.javascript.builder.project import (EnvOptions, ReadError, open_project, runner_and_tests,
                                                           runner_range, trim_dev_dependencies)
from code_gym.languages.javascript.builder.project import test_command as command_for
from code_gym.tasks.task import load_task, load_task_dir

NO_NODE = shutil.which("node") is None
needs_node = pytest.mark.skipif(NO_NODE, reason="node is not installed (apt-get install nodejs npm)")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.js"))


def _runner(tmp_path: Path, scripts: dict, files: dict[str, str]):
    root = _write(tmp_path / "pkg", files)
    return runner_and_tests(root, {"name": "pkg", "scripts": scripts}, _files(root))


TAPE_TEST = "var test = require('tape');\ntest('x', function (t) { t.end(); });\n"


def test_the_runner_comes_through_npm_run_chains_and_wrappers(tmp_path):
    runner, tests, _ = _runner(tmp_path, {"test": "npm run lint && npm run tests-only", "lint": "eslint .",
                                          "tests-only": "nyc --reporter=text-summary tape 'test/**/*.js'"},
                               {"test/a.js": TAPE_TEST, "test/sub/b.js": TAPE_TEST,
                                "test/fixtures/data.js": "module.exports = 1;\n", "index.js": ""})
    assert runner == "tape"
    assert tests == ["test/a.js", "test/sub/b.js"]  # a fixtures folder holds no test files


def test_tape_run_by_a_tap_harness_or_by_node_is_tape(tmp_path):
    files = {"test/a.js": TAPE_TEST, "test/helper.js": "module.exports = 2;\n", "index.js": ""}
    assert _runner(tmp_path / "1", {"test": "tap test/*.js"}, files)[:2] == ("tape", ["test/a.js"])
    assert _runner(tmp_path / "2", {"test": "node test/a.js"}, files)[:2] == ("tape", ["test/a.js"])


def test_a_runner_code_gym_does_not_run_is_refused_by_name(tmp_path):
    with pytest.raises(ReadError, match="ava"):
        _runner(tmp_path / "1", {"test": "xo && ava"}, {"test/a.js": "", "index.js": ""})
    with pytest.raises(ReadError, match="node-tap"):
        _runner(tmp_path / "2", {"test": "tap test/*.js"},
                {"test/a.js": "var tap = require('tap');\ntap.ok(true);\n", "index.js": ""})
    with pytest.raises(ReadError, match="no scripts.test"):
        _runner(tmp_path / "3", {"build": "tsc"}, {"index.js": ""})


def test_mocha_jest_and_node_files_follow_their_defaults_and_arguments(tmp_path):
    files = {"test/a.js": "", "test/deep/b.js": "", "lib/x.test.js": "", "lib/__tests__/y.js": "", "index.js": ""}
    runner, tests, args = _runner(tmp_path / "1", {"test": "mocha --ui tdd --recursive"}, files)
    assert (runner, tests, args) == ("mocha", ["test/a.js", "test/deep/b.js"], ("--ui", "tdd", "--recursive"))
    assert _runner(tmp_path / "2", {"test": "mocha"}, files)[1] == ["test/a.js"]  # mocha's ./test, not recursive
    assert _runner(tmp_path / "3", {"test": "jest"}, files)[:2] == ("jest", ["lib/__tests__/y.js", "lib/x.test.js"])
    assert _runner(tmp_path / "4", {"test": "node --test"}, files)[1] == ["lib/x.test.js", "test/a.js",
                                                                          "test/deep/b.js"]


def test_the_test_command_keeps_the_options_that_change_what_runs():
    assert command_for("mocha", ("--ui", "tdd", "-R", "spec", "--timeout", "5000", "test/")) == "mocha --ui tdd --timeout 5000"
    assert command_for("tape", ("-r", "./test/setup.js", "--no-only", "test/*.js")) == "tape -r ./test/setup.js"
    assert command_for("jest", ("--coverage", "--config", "jest.config.js")) == "jest --config jest.config.js"
    assert command_for("node --test", ("--test-reporter", "spec", "test/")) == "node --test"


def test_an_old_runner_gets_a_version_the_drivers_run():
    assert runner_range("mocha", "^5.2.0") == "^10.8.2"
    assert runner_range("mocha", "^8.1.0") == "^8.1.0"
    assert runner_range("tape", "~4.9.0") == "^4.17.0"
    assert runner_range("tape", "^4.9.0") == "^4.9.0"  # npm picks the newest 4.x
    assert runner_range("tape", "^5.6.3") == "^5.6.3"


def test_only_the_dev_dependencies_the_tests_use_are_kept(tmp_path):
    root = _write(tmp_path / "pkg", {"test/a.js": "var test = require('tape');\nvar fx = require('es-value-fixtures/x');\n",
                                     "index.js": "module.exports = require('./lib');\n", "lib/index.js": ""})
    package = {"name": "pkg", "devDependencies": {"tape": "^5.0.0", "es-value-fixtures": "^1.0.0", "eslint": "^8",
                                                  "nyc": "^10", "should": "^13"}}
    kept, dropped = trim_dev_dependencies(package, root, ["test/a.js"], ["index.js"], "tape", ("-r", "should"))
    assert kept["devDependencies"] == {"tape": "^5.0.0", "es-value-fixtures": "^1.0.0", "should": "^13"}
    assert dropped == ["eslint", "nyc"]


CALC = {
    "package.json": json.dumps({"name": "calc", "version": "1.0.0", "main": "lib/calc.js",
                                "scripts": {"test": "node --test test/"}}),
    "lib/calc.js": """\
        'use strict';

        /** The sum of two numbers. */
        function add(a, b) {
          return a + b;
        }

        /** The larger of two numbers. */
        function max(a, b) {
          if (a > b) {
            return a;
          }
          return b;
        }

        /** The smaller of two numbers. */
        function min(a, b) {
          if (a < b) {
            return a;
          }
          return b;
        }

        /** No test calls it. */
        function unused(x) {
          if (x > 1) {
            return x * 2;
          }
          return x;
        }

        module.exports = { add, max, min, unused };
        """,
    "lib/orphan.js": "module.exports = function orphan(x) { return x > 1; };\n",
    "test/max.test.js": """\
        'use strict';
        const test = require('node:test');
        const assert = require('node:assert');
        const { max, min } = require('..');

        test('max picks the larger', () => {
          assert.strictEqual(max(1, 9), 9);
          assert.strictEqual(max(9, 1), 9);
        });

        test('min picks the smaller', () => {
          assert.strictEqual(min(1, 9), 1);
          assert.strictEqual(min(9, 1), 1);
        });
        """,
    # passes in a fresh copy, fails when run again in the same folder (it leaves a file behind)
    "test/add.test.js": """\
        'use strict';
        const fs = require('node:fs');
        const path = require('node:path');
        const test = require('node:test');
        const assert = require('node:assert');
        const { add } = require('../lib/calc.js');

        test('adds once per folder', () => {
          const mark = path.join(process.cwd(), '.added');
          const first = !fs.existsSync(mark);
          fs.writeFileSync(mark, '');
          assert.ok(first);
          assert.strictEqual(add(2, 3), 5);
        });
        """,
}


@pytest.fixture(scope="module")
def calc(tmp_path_factory):
    if NO_NODE:
        pytest.skip("node is not installed (apt-get install nodejs npm)")
    root = _write(tmp_path_factory.mktemp("calc") / "calc", CALC)
    out = tmp_path_factory.mktemp("calc-out")
    return root, build_tasks(root, out, BuildOptions(progress=False))


@needs_node
def test_the_gates_decide_as_expected_on_a_hand_made_package(calc):
    root, report = calc
    by_id = {t.id: t for t in report.tasks}
    manifest = report.manifest
    # `unused` runs in no test and `orphan.js` is reached by none: no candidate of either
    assert manifest["functions"]["found"] == 4 and manifest["functions"]["covered"] == 3
    assert not any("unused" in c or "orphan" in c for c in list(by_id) + [r.candidate for r in report.rejections])
    # `>` to `>=` in max (and `<` to `<=` in min) changes no tested result: an equivalent mutant
    fails = {r.candidate for r in report.rejected("fails")}
    assert {"calc-max-off-by-one", "calc-min-off-by-one"} <= fails
    # add's test fails when rerun in the same folder: the task that needs it is flaky
    assert [r.candidate for r in report.rejected("flaky")] == ["calc-add-remove-body"]
    flip = by_id["calc-max-flip-comparison"]
    assert flip.language == "javascript" and flip.test_command == "node --test"
    assert flip.fail_to_pass == ("test/max.test.js::max picks the larger",)
    assert flip.hidden_tests == ("test/max.test.js",) and flip.visible_tests == ("test/add.test.js",)
    assert set(flip.pass_to_pass) == {"test/max.test.js::min picks the smaller", "test/add.test.js::adds once per folder"}
    assert flip.protected_paths == ("test/",) and not (flip.repo / "test/max.test.js").exists()
    changed_max = (flip.repo / "lib/calc.js").read_text().split("function max")[1].split("function min")[0]
    assert "if (a < b)" in changed_max
    # max's and min's four tasks make combinations: each region is needed, so every one is accepted
    multi = [t for t in report.tasks if "-plus-" in t.id]
    assert multi and manifest["multi_region"] == len(multi)
    assert all(len(t.fail_to_pass) == 2 for t in multi)
    assert manifest["multi_region"] / manifest["accepted"] >= 0.3


@needs_node
def test_a_region_no_test_needs_is_rejected(calc, tmp_path):
    """max's flipped comparison combined with min's equivalent off-by-one: leaving min's region
    out still fails no test, so the combination is refused by the regions gate."""
    root, _ = calc
    project = open_project(root, tmp_path / "work", EnvOptions())
    options = BuildOptions(progress=False)
    slots = threading.BoundedSemaphore(2)
    baseline = pipeline._baseline(project, options, slots)
    runs = pipeline._Runs(project, baseline, options, slots)
    source = (project.root / "lib/calc.js").read_text()
    by_name = {fn.qualname: fn for fn in functions("lib/calc.js", source)}
    flip = next(c for c in mutation_sites(by_name["max"], source) if c.operator == "flip-comparison")
    equivalent = next(c for c in mutation_sites(by_name["min"], source) if c.operator == "off-by-one")
    outcome = pipeline._evaluate(runs, Candidate("calc-combo", (flip, equivalent), baseline.passed), tmp_path / "staging")
    assert outcome.result.gate == "regions" and "min (off-by-one)" in outcome.result.reason
    overlapping = next(c for c in mutation_sites(by_name["max"], source) if c.operator == "off-by-one")
    clash = pipeline._evaluate(runs, Candidate("calc-clash", (flip, overlapping), baseline.passed), tmp_path / "staging")
    assert clash.result.gate == "regions" and "cannot be combined" in clash.result.reason


@needs_node
def test_every_built_task_passes_revalidate(calc):
    _, report = calc
    revalidate = languages.get("javascript").builder.revalidate
    result = revalidate(report.tasks, runs=2)
    assert result.fraction == 1.0, result.summary()


def test_a_package_without_tests_or_sources_is_refused_with_the_reason(tmp_path):
    bare = _write(tmp_path / "bare", {"package.json": json.dumps({"name": "bare", "scripts": {"test": "tape test/*.js"}}),
                                      "index.js": "module.exports = 1;\n"})
    with pytest.raises(BuildError, match="no test files ship"):
        open_project(bare, tmp_path / "w1", EnvOptions(enabled=False))
    with pytest.raises(BuildError, match="not a package folder, a .tgz or an npm spec"):
        open_project(tmp_path / "missing", tmp_path / "w2")


def _registry_reachable() -> bool:
    if shutil.which("npm") is None:
        return False
    try:
        return subprocess.run(["npm", "view", "minimist@1.2.8", "version"], capture_output=True,
                              timeout=60).returncode == 0
    except subprocess.TimeoutExpired:
        return False


needs_registry = pytest.mark.skipif(NO_NODE or not _registry_reachable(),
                                    reason="node/npm missing or the npm registry is not reachable")


@needs_registry
def test_an_environment_that_cannot_be_built_is_refused_naming_the_package(tmp_path):
    root = _write(tmp_path / "pkg", {
        "package.json": json.dumps({"name": "pkg", "scripts": {"test": "tape test/*.js"},
                                    "devDependencies": {"tape": "999.0.0"}}),
        "index.js": "module.exports = 1;\n", "test/a.js": "var test = require('tape');\nrequire('..');\n"})
    with pytest.raises(BuildError, match=r"environment cannot be built.*tape"):
        open_project(root, tmp_path / "work")


@needs_registry
def test_minimist_from_the_registry_becomes_validated_tasks(tmp_path):
    report = build_tasks("minimist@1.2.8", tmp_path / "out", BuildOptions(progress=False, max_candidates=6))
    assert report.tasks, report.summary()
    assert report.manifest["test_command"] == "tape"
    environment = report.manifest["environment"]
    assert "eslint" in environment["dropped_dev_dependencies"] and any(p.startswith("tape@") for p in environment["installed"])
    task = load_task(report.tasks[0].root)
    assert task.language == "javascript" and task.fail_to_pass and task.pass_to_pass
    assert all(t.split("::")[0] in task.hidden_tests for t in task.fail_to_pass)
    multi = [t for t in report.tasks if "-plus-" in t.id] or report.tasks
    result = languages.get("javascript").builder.revalidate(multi[:1], runs=1)
    assert result.fraction == 1.0, result.summary()


@needs_node
def test_many_packages_in_one_resumable_run(calc, tmp_path):
    root, _ = calc
    bare = _write(tmp_path / "bare", {"package.json": json.dumps({"name": "bare", "scripts": {"test": "ava"}}),
                                      "index.js": ""})
    sources = expand_sources([str(root), str(bare)])
    report = build_many(sources, tmp_path / "out", BuildOptions(progress=False))
    rows = {p.source: p for p in report.projects.values()}
    assert rows[str(root)].status == "built" and rows[str(root)].multi_region > 0
    assert rows[str(bare)].status == "error" and "ava" in rows[str(bare)].reason
    assert len(load_task_dir(tmp_path / "out")) == report.tasks == len(rows[str(root)].tasks)
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert manifest["accepted"] == report.tasks and manifest["gates"]["fails"] >= 2
    again = build_many(sources, tmp_path / "out", BuildOptions(progress=False))  # finished: nothing rebuilt
    assert again.tasks == report.tasks
    assert {k: vars(p) for k, p in again.projects.items()} == {k: vars(p) for k, p in report.projects.items()}
