"""JavaScript test runs with per-test records (code_gym/languages/javascript/runners.py, reporters/,
canary.py). For node --test, mocha, jest and tape, the command `runners.test_run` builds runs a
fixture project (tests/fixtures/js_runners/) with bash on the host, the results channel given as an
extra descriptor as a sandbox gives it: the stream gives each test's outcome under the SPEC's ids
(nested titles, repeated names, skips, hooks, a file that throws at load), no problems, and an end
status equal to the exit code; the channel is out of the tests' reach; the runner's own report
agrees on passes; canaries come out as they must. The runners come from npm (install scripts off)
into a cache folder; without node, npm or the registry those tests skip. A jest task (no bundled task
runs jest) is graded end to end in the bubblewrap and Docker sandboxes, and the node fixture runs on
the default image's node (18) too."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from code_gym.grading import canary as canary_tests
from code_gym.grading import records
from code_gym.grading.grade import grade
from code_gym.grading.reference import reference_changes
from code_gym.languages.javascript import canary, runners
from code_gym.sandbox.images import DEFAULT_IMAGE
from code_gym.tasks.task import load_task
from sandbox_backends import require

FIXTURES = Path(__file__).parent / "fixtures" / "js_runners"
TOOLS = Path.home() / ".cache" / "code-gym-test" / "js-runners"
PACKAGES = {"mocha": "12", "jest": "30", "tape": "5"}
COMMANDS = {"node": "node --test", "mocha": "mocha", "jest": "jest", "tape": "tape"}
NONCE = "5eed" * 8

BASIC = "test/basic.test.js"
EXPECTED = {
    "node": {
        f"{BASIC}::adds numbers": "passed",
        f"{BASIC}::compares strings": "failed",
        f"{BASIC}::is skipped": "skipped",
        f"{BASIC}::is todo": "skipped",
        f"{BASIC}::repeats": "failed",  # one title passed and failed: a forged frame looks the same
        f"{BASIC}::repeats [2]": "failed",
        f"{BASIC}::outer > passes inside": "passed",
        f"{BASIC}::outer > inner > fails deep inside": "failed",
        f"{BASIC}::with a failing hook > never runs": "failed",
        f"{BASIC}::has subtests > first part": "passed",
        f"{BASIC}::has subtests > second part": "failed",
        "test/broken.test.js": "error",
        "test/channel.test.js::the records variable is gone": "passed",
        "test/channel.test.js::a child of the test gets no channel": "passed",
        "test/channel.test.js::the test process holds no channel": "passed",
        "test/module.test.mjs::loads as an ES module": "passed",
    },
    "mocha": {
        f"{BASIC}::runs at the top level": "passed",
        f"{BASIC}::numbers > adds": "passed",
        f"{BASIC}::numbers > compares": "failed",
        f"{BASIC}::numbers > is skipped": "skipped",
        f"{BASIC}::numbers > is pending without a body": "skipped",
        f"{BASIC}::numbers > repeats": "passed",
        f"{BASIC}::numbers > repeats [2]": "failed",
        f"{BASIC}::numbers > inner > passes deep inside": "passed",
        f"{BASIC}::with a failing before hook > never runs": "failed",
        f"{BASIC}::with a failing before hook > nested > never runs either": "failed",
        f"{BASIC}::with a failing beforeEach > first": "passed",
        f"{BASIC}::with a failing beforeEach > second": "failed",
        f"{BASIC}::with a failing beforeEach > third": "failed",
        f"{BASIC}::skips itself > at run time": "skipped",
        "test/after.test.js::with a failing after hook > passes before the hook": "passed",
        "test/after.test.js": "error",
        "test/broken.test.js": "error",
        "test/channel.test.js::channel > the records variable is gone": "passed",
        "test/channel.test.js::channel > a child of the test gets no channel": "passed",
        "test/module.test.mjs::module > loads as an ES module": "passed",
    },
    "jest": {
        f"{BASIC}::runs at the top level": "passed",
        f"{BASIC}::numbers > adds": "passed",
        f"{BASIC}::numbers > compares": "failed",
        f"{BASIC}::numbers > is skipped": "skipped",
        f"{BASIC}::numbers > is todo": "skipped",
        f"{BASIC}::numbers > repeats": "passed",
        f"{BASIC}::numbers > repeats [2]": "failed",
        f"{BASIC}::numbers > inner > passes deep inside": "passed",
        f"{BASIC}::with a failing beforeAll > never runs": "failed",
        "test/after.test.js::with a failing afterAll > passes before the hook": "passed",
        "test/after.test.js": "error",
        "test/broken.test.js": "error",
        "test/channel.test.js::channel > the records variable is gone": "passed",
        "test/channel.test.js::channel > a child of the test gets no channel": "passed",
    },
    "tape": {
        f"{BASIC}::adds numbers": "passed",
        f"{BASIC}::compares strings": "failed",
        f"{BASIC}::is skipped": "skipped",
        f"{BASIC}::is todo": "skipped",
        f"{BASIC}::repeats": "passed",
        f"{BASIC}::repeats [2]": "failed",
        f"{BASIC}::outer": "passed",
        f"{BASIC}::outer > passes inside": "passed",
        f"{BASIC}::outer > fails inside": "failed",
        f"{BASIC}::throws in its body": "failed",
        f"{BASIC}::asserts more than it plans": "failed",
        f"{BASIC}::throws from a callback": "failed",
        f"{BASIC}::runs after the throw": "passed",
        "test/broken.test.js": "error",
        "test/channel.test.js::the records variable is gone": "passed",
        "test/channel.test.js::a child of the test gets no channel": "passed",
    },
}
# what each runner prints of its own when it runs without the grader's reporters
OWN_OUTPUT = {"node": "✖ compares strings", "mocha": "failing", "jest": "Tests:", "tape": "# fail"}


@pytest.fixture(scope="module")
def tools() -> Path:
    """node_modules holding mocha, jest and tape (installed once into the cache, install scripts off)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (scripts/setup.sh installs them)")
    modules = TOOLS / "node_modules"
    if not all((modules / name / "package.json").is_file() for name in PACKAGES):
        TOOLS.mkdir(parents=True, exist_ok=True)
        specs = [f"{name}@{major}" for name, major in PACKAGES.items()]
        done = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", str(TOOLS),
                               *specs], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"npm could not install {' '.join(specs)}: {done.stderr[-500:]}")
    return modules


@pytest.fixture
def projects(tmp_path) -> Path:
    """A copy of the fixture projects: one folder per runner, the channel helper beside them."""
    shutil.copytree(FIXTURES, tmp_path / "projects")
    (tmp_path / "results").mkdir()
    return tmp_path / "projects"


def _read_all(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 65536):
        into.extend(chunk)


def _lay_reporters(folder: Path, fd: int) -> dict[str, str]:
    """Lay the reporter's files read-only as a sandbox's reporter folder holds them; its variables."""
    folder.mkdir(exist_ok=True)
    files, env = runners.JsReporter().setup(str(folder), fd, NONCE, {})
    for name, text in files.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o444)
    return env


def _run(command: str, cwd: Path, modules: Path, records_on: bool = True) -> tuple[int, bytes, str]:
    """(exit code, records stream, output) of `command` run by bash in `cwd` with the channel's write
    end as an extra descriptor; CHANNEL_FD and CHANNEL_PIPE tell the fixtures' channel probes what
    to look for."""
    env = dict(os.environ, NODE_PATH=str(modules), PATH=f"{modules}/.bin:{os.environ['PATH']}", CI="true")
    for name in (runners.ENV, runners.FOLDER_ENV):
        env.pop(name, None)
    read_end, write_end = os.pipe()
    stream = bytearray()
    try:
        if records_on:
            env |= _lay_reporters(cwd.parent.parent / "reporters", write_end)
            env |= {"CHANNEL_FD": str(write_end), "CHANNEL_PIPE": f"pipe:[{os.fstat(write_end).st_ino}]"}
        process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, pass_fds=(write_end,),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        os.close(write_end)
        reader = threading.Thread(target=_read_all, args=(read_end, stream))
        reader.start()
        output = process.communicate(timeout=600)[0].decode(errors="replace")
        reader.join()
    finally:
        os.close(read_end)
    return process.returncode, bytes(stream), output


def _files(runner: str, projects: Path) -> tuple[str, ...]:
    return tuple(sorted(str(p.relative_to(projects / runner)) for p in (projects / runner / "test").iterdir()))


@pytest.mark.parametrize("runner", runners.RUNNERS)
def test_records_give_each_test_its_outcome_and_the_report_agrees(tools, projects, runner):
    results = projects.parent / "results"
    files = _files(runner, projects)
    selected = (f"{BASIC}::whatever test", *files, BASIC)  # an id runs its whole file, once
    plan = runners.test_run(COMMANDS[runner], selected, str(results))
    code, raw, output = _run(plan.command, projects / runner, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and stream.started, output
    assert stream.outcomes == EXPECTED[runner], output
    assert code == stream.end == 1
    report = runners.report_outcomes(results, tuple(stream.outcomes))
    if runner in ("mocha", "tape"):
        assert report is None
    else:
        passed = {t for t, o in stream.outcomes.items() if o == "passed"}
        assert {t for t, o in report.items() if o == "passed"} == passed
        assert records.check(stream, report, code) == []


@pytest.mark.parametrize("runner", runners.RUNNERS)
def test_a_run_whose_tests_all_pass_ends_0_and_its_tests_cannot_reach_the_channel(tools, projects, runner):
    plan = runners.test_run(COMMANDS[runner], ("test/channel.test.js",), str(projects.parent / "results"))
    code, raw, output = _run(plan.command, projects / runner, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and code == stream.end == 0, output
    probes = {t: o for t, o in EXPECTED[runner].items() if t.startswith("test/channel.test.js")}
    assert stream.outcomes == probes, output


@pytest.mark.parametrize("runner", runners.RUNNERS)
def test_without_the_reporters_the_runner_runs_alone_with_its_own_output_and_report(tools, projects, runner):
    results = projects.parent / "results"
    plan = runners.test_run(COMMANDS[runner], (BASIC,), str(results))
    code, raw, output = _run(plan.command, projects / runner, tools, records_on=False)
    assert code == 1 and raw == b"" and OWN_OUTPUT[runner] in output, output
    expected = {t: o for t, o in EXPECTED[runner].items() if t.startswith(BASIC)}
    report = runners.report_outcomes(results, tuple(expected))
    if runner in ("mocha", "tape"):
        assert report is None
    else:
        assert {t for t, o in report.items() if o == "passed"} == {t for t, o in expected.items() if o == "passed"}


@pytest.mark.parametrize("runner,tests", [(r, "test/basic.test.js") for r in runners.RUNNERS]
                         + [(r, "test/module.test.mjs") for r in ("node", "mocha", "tape")])
def test_canaries_come_out_as_they_must(tools, projects, runner, tests):
    root = projects / runner
    if runner == "tape":  # an ES module finds tape only in a node_modules above it
        (root / "node_modules").symlink_to(tools)
    planted = canary.make((tests,), lambda p: (root / p).exists(), runner)
    assert planted.path.startswith("test/") and not (root / planted.path).exists()
    (root / planted.path).write_text(planted.source)
    plan = runners.test_run(COMMANDS[runner], (planted.path, "test/channel.test.js"), str(projects.parent / "results"),
                            canaries=True)
    code, raw, output = _run(plan.command, root, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and code == stream.end == 1, output
    assert {t: stream.outcomes.get(t) for t in planted.expected} == planted.expected, output
    assert canary_tests.check(planted, stream.outcomes, code) == []


@pytest.mark.parametrize("command,runner", [
    ("node --test", "node"), ("node --test --test-concurrency=1", "node"), ("npx mocha --timeout 5000", "mocha"),
    ("./node_modules/.bin/jest --runInBand", "jest"), ("tape -r ./test/setup.js", "tape"), ("npx tape", "tape")])
def test_runner_of_reads_each_supported_form(command, runner):
    assert runners.runner_of(command) == runner


@pytest.mark.parametrize("command", ["npm test", "node test/run.js", "python -m pytest", "", "ava", "mocha 'unclosed"])
def test_runner_of_refuses_other_commands_and_names_the_forms(command):
    with pytest.raises(ValueError, match="node --test|parse"):
        runners.runner_of(command)


def test_test_run_runs_whole_files_once_and_turns_bail_off_for_canaries():
    plan = runners.test_run("jest --bail", ("a.test.js::x > y", "b.test.js", "a.test.js::z"), "/results")
    assert plan.report == "/results/jest.json" and plan.command.endswith("--runTestsByPath a.test.js b.test.js")
    assert "--bail=0" not in plan.command
    assert "--bail=0" in runners.test_run("jest --bail", ("a.test.js",), "/results", canaries=True).command
    mocha = runners.test_run("mocha --bail", ("t/a.js",), "/results", canaries=True)
    assert mocha.report is None and '"keepGoing": true' in mocha.command and '"args": ["--bail"]' in mocha.command
    node = runners.test_run("node --test", ("t/a.js::q",), "/r")
    assert node.report == "/r/junit.xml" and node.command.endswith(" t/a.js")


def test_the_reporter_lays_its_files_and_names_folder_and_channel():
    env = {"PATH": "/bin", "NODE_PATH": "/env/node_modules"}
    files, out = runners.JsReporter().setup("/run/rec", 7, "n0nce", env)
    assert set(files) == {"channel.cjs", "node.mjs", "mocha.cjs", "jest.cjs", "tape.cjs"}
    assert out == env | {"CODE_GYM_REPORTERS": "/run/rec", "CODE_GYM_RECORDS": "7 n0nce"}
    assert env == {"PATH": "/bin", "NODE_PATH": "/env/node_modules"}


@pytest.mark.parametrize("first,runner,pattern", [
    ("test/parse.test.js", "node", r"test/[a-z]+-[a-z]{8}\.test\.cjs"),
    ("test/parse.test.js", "jest", r"test/[a-z]+-[a-z]{8}\.test\.js"),
    ("spec/parse-spec.mjs", "mocha", r"spec/[a-z]+-[a-z]{8}-spec\.mjs"),
    ("tests/test-parse.js", "tape", r"tests/test-[a-z]+-[a-z]{8}\.cjs"),
    ("__tests__/parse.ts", "jest", r"__tests__/[a-z]+-[a-z]{8}\.ts"),
])
def test_canary_files_are_named_like_the_tasks_tests(first, runner, pattern):
    taken = []
    path = canary.canary_path((first,), lambda p: taken.append(p) or len(taken) < 3, runner)
    assert len(taken) == 3 and path == taken[-1]
    assert re.fullmatch(pattern, path)


def test_node_junit_is_matched_to_ids_by_file_order_and_repeats(tmp_path):
    (tmp_path / "junit.xml").write_text(
        '<testsuites><testcase name="same"/><testcase name="same"><failure/></testcase>'
        '<testsuite name="group"><testcase name="inner"/></testsuite><testcase name="empty describe"/>'
        '<testcase name="/repo/b.test.js"><failure/></testcase>'
        '<testcase name="same"/><testcase name="skip"><skipped/></testcase></testsuites>')
    # b.test.js failed at load: its tests, known beforehand, must not take c.test.js's testcases
    lookup = ("a.test.js::same", "a.test.js::same [2]", "a.test.js::group > inner", "b.test.js::same",
              "b.test.js", "c.test.js::same", "c.test.js::skip")
    assert runners.report_outcomes(tmp_path, lookup) == {  # "same" passed and failed in a.test.js: failed
        "a.test.js::same": "failed", "a.test.js::same [2]": "failed", "a.test.js::group > inner": "passed",
        "c.test.js::same": "passed", "c.test.js::skip": "skipped"}


ES_MODULE_TESTS = {
    "node": "import test from 'node:test';\nawait Promise.resolve();\ntest('loads', () => {});\n",
    "mocha": "import assert from 'node:assert';\nawait Promise.resolve();\n"
             "describe('module', () => { it('loads', () => assert.ok(true)); });\n",
    "tape": "import test from 'tape';\nawait Promise.resolve();\ntest('loads', (t) => { t.ok(true); t.end(); });\n",
}


@pytest.mark.parametrize("runner", sorted(ES_MODULE_TESTS))
def test_a_package_of_es_modules_loads_its_tests_and_canaries(tools, tmp_path, runner):
    root = tmp_path / "projects" / "esm"
    (root / "test").mkdir(parents=True)
    (root / "package.json").write_text('{"name": "esm", "type": "module"}')
    (root / "node_modules").symlink_to(tools)  # ES modules resolve packages through node_modules only
    (root / "test" / "a.test.js").write_text(ES_MODULE_TESTS[runner])
    planted = canary.make(("test/a.test.js",), lambda p: (root / p).exists(), runner)
    (root / planted.path).write_text(planted.source)
    plan = runners.test_run(COMMANDS[runner], ("test/a.test.js", planted.path), str(tmp_path), canaries=True)
    code, raw, output = _run(plan.command, root, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and code == stream.end == 1, output
    name = "module > loads" if runner == "mocha" else "loads"
    assert stream.outcomes == {f"test/a.test.js::{name}": "passed", **planted.expected}, output


def test_jest_workers_hold_no_channel(tools, projects):
    """jest runs files in worker processes when it has more than one file and no timings; the test
    process of a worker then holds no descriptor of the channel at all (in band it holds the
    reporter's close-on-exec copy, as a mocha or tape test process does)."""
    root = projects / "jest"
    (root / "test" / "own.test.js").write_text(
        "const channel = require('../../channel.js');\n"
        "test('holds no channel', () => { expect(channel.inProcess()).not.toContain(channel.pipe); });\n")
    plan = runners.test_run("jest --maxWorkers=2", ("test/channel.test.js", "test/own.test.js"),
                            str(projects.parent / "results"))
    code, raw, output = _run(plan.command, root, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and code == stream.end == 0, output
    assert stream.outcomes["test/own.test.js::holds no channel"] == "passed"


FORCED_PASS = {  # a test file that makes every assertion of the run pass, in the runners that load files in one process
    "mocha": "const assert = require('assert');\nassert.strictEqual = () => {};\nassert.ok = () => {};\n"
             "it('cheats', () => {});\n",
    "tape": "const test = require('tape');\nconst real = test.Test.prototype._assert;\n"
            "test.Test.prototype._assert = function (ok, opts) { return real.call(this, true, opts); };\n"
            "test('cheats', (t) => t.end());\n",
}


@pytest.mark.parametrize("runner", sorted(FORCED_PASS))
def test_canaries_catch_assertions_forced_to_pass(tools, projects, runner):
    root = projects / runner
    (root / "test" / "cheat.test.js").write_text(FORCED_PASS[runner])
    planted = canary.make((BASIC,), lambda p: (root / p).exists(), runner)
    (root / planted.path).write_text(planted.source)
    plan = runners.test_run(COMMANDS[runner], ("test/cheat.test.js", planted.path), str(projects.parent / "results"),
                            canaries=True)
    code, raw, output = _run(plan.command, root, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and code == stream.end, output
    findings = canary_tests.check(planted, stream.outcomes, code)
    assert any("must come out failed came out passed" in f.message for f in findings), (findings, output)


def test_mocha_reads_the_projects_configuration_but_runs_serially_with_the_records_reporter(tools, projects):
    """.mocharc's ui (tdd) is read, its parallel mode and a reporter that is not installed are not;
    the canary's describe/it, taken from require('mocha'), are tdd's suite/test there."""
    root = projects / "mocha"
    (root / ".mocharc.json").write_text('{"reporter": "a-reporter-not-installed", "parallel": true, "ui": "tdd"}')
    (root / "test" / "tdd.test.js").write_text("suite('tdd', () => { test('runs', () => {}); });\n")
    planted = canary.make(("test/tdd.test.js",), lambda p: (root / p).exists(), "mocha")
    (root / planted.path).write_text(planted.source)
    plan = runners.test_run("mocha", ("test/tdd.test.js", planted.path), str(projects.parent / "results"),
                            canaries=True)
    code, raw, output = _run(plan.command, root, tools)
    stream = records.read(raw, NONCE)
    assert stream.problems == [] and code == stream.end == 1, output
    assert stream.outcomes == {"test/tdd.test.js::tdd > runs": "passed", **planted.expected}, output


@pytest.mark.parametrize("isolation", ["bwrap", "docker"])
def test_a_jest_task_is_graded_with_records_and_canaries_in_a_sandbox(isolation):
    """A jest task (tests/fixtures/js_runners/jest-task; no bundled task runs jest) graded end to
    end: its environment built from package.json, the reporter laid by the sandbox, canaries in."""
    require(isolation)
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (scripts/setup.sh installs it)")
    task = load_task(FIXTURES / "jest-task")
    untouched = grade(task, {}, isolation=isolation)
    assert untouched.canaries and not untouched.canary, untouched.output[-2000:]
    assert untouched.tests == {**{t: "failed" for t in task.fail_to_pass}, **{t: "passed" for t in task.pass_to_pass}}
    fixed = grade(task, reference_changes(task), isolation=isolation)
    assert not fixed.canary and not fixed.tampered, fixed.output[-2000:]
    assert fixed.tests == {t: "passed" for t in task.fail_to_pass + task.pass_to_pass}


def test_node_in_the_default_image_gives_the_same_records(projects):
    """The default image's node (Debian's, 18 on bookworm) runs the node fixture as node 20 does
    here: node 18 names an ES module test file by its file URL, its junit reporter is the report."""
    require("docker")
    if subprocess.run(["docker", "image", "inspect", DEFAULT_IMAGE], capture_output=True).returncode != 0:
        pytest.skip(f"{DEFAULT_IMAGE} is not built (code-gym image build)")
    work = projects.parent
    files, env = runners.JsReporter().setup("/w/reporters", 3, NONCE, {})
    (work / "reporters").mkdir()
    for name, text in files.items():
        (work / "reporters" / name).write_text(text)
    plan = runners.test_run("node --test", _files("node", projects), "/w/results")
    script = (f"cd /w/projects/node && exec 3> >(cat > /w/results/records); pid=$!; export CHANNEL_FD=3 "
              f"CHANNEL_PIPE=$(readlink /proc/$$/fd/3); ( {plan.command} ); rc=$?; exec 3>&-; wait $pid; exit $rc")
    subprocess.run(["chmod", "-R", "a+rwX", str(work)], check=True)
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}",
                           "-v", f"{work}:/w", *(a for k, v in env.items() for a in ("-e", f"{k}={v}")),
                           DEFAULT_IMAGE, "bash", "-c", script], capture_output=True, text=True, timeout=300)
    stream = records.read((work / "results" / "records").read_bytes(), NONCE)
    assert stream.problems == [] and done.returncode == stream.end == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert stream.outcomes == EXPECTED["node"], done.stdout[-2000:]
    assert records.check(stream, runners.report_outcomes(work / "results", tuple(stream.outcomes)), 1) == []
