"""Go test runs: the test command and its checks, the reader's records from go test -json events
(subtests, forged and foreign result lines, dying test binaries, packages that do not build), and
the reader inside a bubblewrap sandbox on real packages under the sandbox's limits (RLIMIT_AS 4 GB):
passes, failures, skips, panics, exits, compile and vet errors, canaries, and a test binary that
writes into every pipe it can open.

go builds and runs the tests only inside the sandbox; without Debian's go or bubblewrap the
sandboxed tests skip, and in CI (CI=true) they fail instead."""
from __future__ import annotations

import io
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from code_gym import languages
from code_gym.grading import records as stream_records
from code_gym.languages.go import canary, runner
from code_gym.languages.go.reader import gotest
from code_gym.sandbox import Limits, LocalSandbox, Runtime
from code_gym.sandbox.records import new_nonce
from sandbox_backends import IN_CI, require

GO = languages.get("go")


def needs_go() -> None:
    if shutil.which("go") is None:
        why = "Debian's go is not installed (apt-get install golang-go)"
        if IN_CI:
            pytest.fail(f"CI must run the Go tests: {why}")
        pytest.skip(why)
    require("bwrap")


# -- the command

def test_the_command_runs_the_reader_with_the_selected_packages():
    plan = GO.test_run("go test -count=1", ("pkg/a_test.go::TestX", "b_test.go", "pkg/c_test.go"), "/results")
    assert plan.report is None
    assert 'exec python3 -I "$CODE_GYM_REPORTERS/gotest.py"' in plan.command
    spec = json.loads(plan.command.split("gotest.py\" '", 1)[1].split("'", 1)[0])
    assert spec == {"command": ["go", "test", "-count=1"], "packages": ["pkg", ""]}
    every = GO.test_run("go test", (), "/results").command
    assert '"packages": null' in every and "./..." in every


def test_canaries_turn_failfast_off():
    plan = GO.test_run("go test -failfast -count=1", ("a_test.go",), "/r", canaries=True)
    assert "failfast" not in plan.command
    assert "failfast" in GO.test_run("go test -failfast", ("a_test.go",), "/r").command


@pytest.mark.parametrize("command, why", [
    ("pytest", "not a `go test` call"), ("go build", "not a `go test` call"),
    ("go test ./...", "not an option"), ("go test -json", "-json"), ("go test -exec /bin/true", "-exec"),
    ("go test -c", "-c"), ("go test 'unclosed", "does not parse"),
])
def test_a_test_command_that_is_not_go_tests_options_is_refused(command, why):
    with pytest.raises(ValueError, match=why):
        runner.command_words(command)


def test_options_with_values_are_kept():
    assert runner.command_words("go test -run TestX -tags integration -count=1 -v") == [
        "go", "test", "-run", "TestX", "-tags", "integration", "-count=1", "-v"]


def test_the_reporter_lays_the_reader_and_names_the_channel():
    files, env = runner.GoReporter().setup("/run/r", 7, "n0nce", {"A": "1"})
    assert sorted(files) == ["channel.py", "gotest.py"] and "def main" in files["gotest.py"]
    assert "class Channel" in files["channel.py"]  # the reader imports it from beside itself
    assert env == {"A": "1", "CODE_GYM_REPORTERS": "/run/r", "CODE_GYM_RECORDS": "7 n0nce"}


# -- the records, from events (no go needed)

PKG = "example.com/m"


def events(*items: tuple[str, ...]) -> str:
    """go test -json lines of package PKG: (action, test name or "" for the package, output)."""
    lines = []
    for action, test, *output in items:
        event = {"Action": action, "Package": PKG}
        if test:
            event["Test"] = test
        if output:
            event["Output"] = output[0]
        lines.append(json.dumps(event) + "\n")
    return "".join(lines)


def read_run(folder: Path, monkeypatch, stream: str, stderr: str = "", code: int = 1, canaries=()):
    """The reader's records of a go test -json stream, in `folder` (the repository)."""
    monkeypatch.chdir(folder)
    monkeypatch.setattr(gotest.Run, "confirmed", lambda self, package, records: records)  # it runs go
    run = gotest.Run(PKG, list(canaries), ["go", "test"], {})
    run.read(io.StringIO(stream))
    reports, collects = run.records(stderr, code, gotest.test_folders(None))
    return {r["id"]: r["outcome"] for r in reports}, {r["id"]: r.get("message", "") for r in reports}, collects


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "a_test.go").write_text("package m\n\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) {}\n"
                                        "func TestC(t *testing.T) {}\nfunc ExampleA() {}\nfunc Testlower(t *testing.T) {}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "s_test.go").write_text("package sub\n\nfunc TestS(t *testing.T) {}\n")
    return tmp_path


def test_subtests_fold_into_their_test_and_a_failed_one_fails_it(repo, monkeypatch):
    stream = events(("run", "TestA"), ("run", "TestA/one"), ("output", "TestA/one", "    a_test.go:9: broke\n"),
                    ("fail", "TestA/one"), ("fail", "TestA"), ("run", "TestB"), ("pass", "TestB"),
                    ("run", "TestC"), ("skip", "TestC"), ("run", "ExampleA"), ("pass", "ExampleA"),
                    ("output", "", "FAIL\n"), ("fail", ""))
    outcomes, messages, collects = read_run(repo, monkeypatch, stream)
    assert outcomes == {"a_test.go::TestA": "failed", "a_test.go::TestB": "passed", "a_test.go::TestC": "skipped",
                        "a_test.go::ExampleA": "passed"}
    assert messages["a_test.go::TestA"].startswith("subtest TestA/one failed: ") and "broke" in messages["a_test.go::TestA"]
    assert collects == []


def test_names_no_test_file_declares_are_left_out_and_a_passed_package_passes_what_ran(repo, monkeypatch):
    """A test of a test framework prints '--- FAIL: X' lines of its own; go said ok."""
    stream = events(("run", "TestA"), ("fail", "TestA"), ("pass", "TestA"), ("fail", "TestInner"),
                    ("run", "TestB"), ("pass", "TestB"), ("output", "", "ok  \texample.com/m\t0.1s\n"), ("pass", ""))
    outcomes, _, _ = read_run(repo, monkeypatch, stream, code=0)
    assert outcomes == {"a_test.go::TestA": "passed", "a_test.go::TestB": "passed"}


def test_a_test_reported_passed_and_failed_in_a_failed_package_is_failed(repo, monkeypatch):
    stream = events(("run", "TestA"), ("pass", "TestA"), ("fail", "TestA"), ("run", "TestB"), ("pass", "TestB"),
                    ("run", "TestC"), ("pass", "TestC"), ("fail", ""))
    outcomes, _, _ = read_run(repo, monkeypatch, stream)
    assert outcomes == {"a_test.go::TestA": "failed", "a_test.go::TestB": "passed", "a_test.go::TestC": "passed"}


def test_a_binary_that_dies_fails_the_test_it_died_in_and_those_that_never_ran(repo, monkeypatch):
    stream = events(("run", "TestA"), ("pass", "TestA"), ("run", "TestB"),
                    ("output", "TestB", "panic: boom\n"), ("output", "", "FAIL\texample.com/m\t0.01s\n"), ("fail", ""))
    outcomes, messages, _ = read_run(repo, monkeypatch, stream)
    assert outcomes == {"a_test.go::TestA": "passed", "a_test.go::TestB": "failed", "a_test.go::TestC": "failed"}
    assert "did not finish" in messages["a_test.go::TestB"] and "panic: boom" in messages["a_test.go::TestB"]
    assert messages["a_test.go::TestC"] == gotest.DID_NOT_RUN


def test_a_failed_package_with_no_failed_test_fails_its_passes(repo, monkeypatch):
    """Forged '--- PASS' lines for every test, then an exit(1) after them: nothing failed but the binary."""
    stream = events(*[item for name in ("TestA", "TestB", "TestC") for item in (("run", name), ("pass", name))],
                    ("output", "", "exit status 1\n"), ("fail", ""))
    outcomes, messages, _ = read_run(repo, monkeypatch, stream)
    assert set(outcomes.values()) == {"failed"}
    assert "failed outside its tests" in messages["a_test.go::TestA"]


def test_go_failing_while_every_package_passed_fails_the_passes(repo, monkeypatch):
    stream = events(("run", "TestA"), ("pass", "TestA"), ("pass", ""))
    outcomes, messages, _ = read_run(repo, monkeypatch, stream, code=1)
    assert outcomes == {"a_test.go::TestA": "failed"} and "forged" in messages["a_test.go::TestA"]


def test_a_package_that_does_not_build_fails_each_of_its_test_files_with_the_compilers_message(repo, monkeypatch):
    stderr = ("# example.com/m/sub\nsub/s.go:3:9: undefined: x\n"
              "# example.com/m\n./a.go:5:12: fmt.Printf format %d has arg \"x\" of wrong type string\n")
    stream = "FAIL\texample.com/m [build failed]\nFAIL\texample.com/m/sub [setup failed]\n"
    outcomes, _, collects = read_run(repo, monkeypatch, stream, stderr, code=2)
    assert outcomes == {}
    by_id = {c["id"]: c["message"] for c in collects}
    assert set(by_id) == {"a_test.go", "sub/s_test.go"}
    assert by_id["sub/s_test.go"].startswith("# example.com/m/sub\nsub/s.go:3:9: undefined: x")
    assert "wrong type string" in by_id["a_test.go"] and "undefined: x" not in by_id["a_test.go"]


def test_a_package_broken_by_its_dependency_carries_the_dependencys_errors(repo, monkeypatch):
    stderr = "# example.com/m\n./a.go:1:1: expected 'package', found x\n"
    stream = "FAIL\texample.com/m/sub [build failed]\n"
    _, _, collects = read_run(repo, monkeypatch, stream, stderr, code=2)
    assert collects == [{"id": "sub/s_test.go", "outcome": "failed", "message": stderr}]


def test_test_names_follow_go_tests_rule():
    assert gotest._is_test_name("Test") and gotest._is_test_name("TestX") and gotest._is_test_name("Test_x")
    assert not gotest._is_test_name("Testlower") and gotest._is_test_name("Example_lower")
    assert gotest._is_test_name("FuzzParse") and not gotest._is_test_name("Benchmark")


# -- the reader in a sandbox, on real packages

MODULE = "example.com/mini"


def reader_run(repo: Path, selected: tuple[str, ...] = (), command: str = runner.DEFAULT_COMMAND,
               limits: Limits = Limits(timeout=300)):
    """(records, the run) of the reader over `repo` in bubblewrap, as a graded run makes it (no
    dependencies, no build cache)."""
    runtime = Runtime(env=(("GO111MODULE", "off"), ("CGO_ENABLED", "0"), ("CODE_GYM_GO_PACKAGE", MODULE),
                           ("CODE_GYM_GO_DEPENDENCIES", "")), reporter=runner.GoReporter())
    sandbox = LocalSandbox(repo, "bwrap", limits, runtime=runtime)
    nonce = new_nonce()
    run = sandbox.exec(GO.test_run(command, selected, "/results", canaries=True).command, records=nonce)
    return stream_records.read(run.records, nonce), run


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder


MINI = {
    "mini.go": """\
        package mini

        // Add returns a + b.
        func Add(a, b int) int { return a + b }
        """,
    "mini_test.go": """\
        package mini

        import (
        	"fmt"
        	"testing"
        )

        func TestAdd(t *testing.T) {
        	if Add(1, 2) != 3 {
        		t.Fatal("1 + 2")
        	}
        }

        func TestSubs(t *testing.T) {
        	t.Run("one", func(t *testing.T) {})
        	t.Run("two", func(t *testing.T) { t.Error("two broke") })
        }

        func TestSkip(t *testing.T) { t.Skip("not here") }

        func ExampleAdd() {
        	fmt.Println(Add(1, 1))
        	// Output: 2
        }
        """,
    "more_test.go": """\
        package mini_test

        import (
        	"testing"

        	"example.com/mini"
        )

        func TestExternal(t *testing.T) {
        	if mini.Add(2, 2) != 4 {
        		t.Fatal("2 + 2")
        	}
        }
        """,
    "sub/sub.go": """\
        package sub

        // Mul returns a * b.
        func Mul(a, b int) int { return a * b }
        """,
    "sub/sub_test.go": """\
        package sub

        import "testing"

        func TestMul(t *testing.T) {
        	if Mul(2, 3) != 6 {
        		t.Fatal("2 * 3")
        	}
        }

        func TestPanics(t *testing.T) { panic("boom") }

        func TestAfter(t *testing.T) {}
        """,
}


def test_the_reader_records_every_kind_of_outcome_under_the_sandboxs_limits(tmp_path):
    needs_go()
    assert Limits().memory_bytes == 4 << 30  # go builds and tests under the sandbox's RLIMIT_AS
    stream, run = reader_run(write(tmp_path, MINI))
    assert not stream.problems and stream.end == run.exit_code == 1, run.output[-3000:]
    assert stream.outcomes == {
        "mini_test.go::TestAdd": "passed", "mini_test.go::TestSubs": "failed", "mini_test.go::TestSkip": "skipped",
        "mini_test.go::ExampleAdd": "passed", "more_test.go::TestExternal": "passed",
        "sub/sub_test.go::TestMul": "passed", "sub/sub_test.go::TestPanics": "failed",
        "sub/sub_test.go::TestAfter": "failed"}
    assert stream.messages["mini_test.go::TestSubs"].startswith("subtest TestSubs/two failed")
    assert "panic: boom" in stream.messages["sub/sub_test.go::TestPanics"]
    assert stream.messages["sub/sub_test.go::TestAfter"] == gotest.DID_NOT_RUN
    assert "two broke" in run.output and "--- FAIL: TestSubs" in run.output and "=== RUN" not in run.output


def test_only_the_selected_packages_run(tmp_path):
    needs_go()
    stream, run = reader_run(write(tmp_path, MINI), ("sub/sub_test.go",))
    assert set(stream.outcomes) == {"sub/sub_test.go::TestMul", "sub/sub_test.go::TestPanics",
                                    "sub/sub_test.go::TestAfter"}, run.output[-3000:]


def test_an_all_passing_run_exits_0(tmp_path):
    needs_go()
    files = {k: v for k, v in MINI.items() if k.startswith("sub/")}
    files["sub/sub_test.go"] = files["sub/sub_test.go"].replace("panic(\"boom\")", "")
    stream, run = reader_run(write(tmp_path, files))
    assert stream.end == run.exit_code == 0, run.output[-3000:]
    assert set(stream.outcomes.values()) == {"passed"} and len(stream.outcomes) == 3


def test_compile_and_vet_errors_fail_the_packages_test_files_with_the_compilers_message(tmp_path):
    needs_go()
    broken = dict(MINI, **{"sub/sub.go": "package sub\n\nfunc Mul(a, b int) int { return a * c }\n",
                           "vet.go": "package mini\n\nimport \"fmt\"\n\nfunc P() { fmt.Printf(\"%d\\n\", \"x\") }\n"})
    stream, run = reader_run(write(tmp_path, broken))
    assert not stream.problems and stream.end == run.exit_code == 1, run.output[-3000:]
    assert stream.outcomes == {"mini_test.go": "error", "more_test.go": "error", "sub/sub_test.go": "error"}
    assert "undefined: c" in stream.messages["sub/sub_test.go"]
    assert "wrong type string" in stream.messages["mini_test.go"]
    assert "sub/sub.go:3:37: undefined: c" in run.output and "[build failed]" in run.output


def test_an_import_that_does_not_exist_is_a_build_failure(tmp_path):
    needs_go()
    files = dict(MINI, **{"sub/sub.go": "package sub\n\nimport _ \"example.com/nowhere\"\n\n"
                                        "func Mul(a, b int) int { return a * b }\n"})
    stream, run = reader_run(write(tmp_path, files), ("sub/sub_test.go",))
    assert stream.outcomes == {"sub/sub_test.go": "error"}, run.output[-3000:]
    assert 'cannot find package "example.com/nowhere"' in stream.messages["sub/sub_test.go"]


def test_an_exit_in_a_test_fails_it_and_the_tests_after_it(tmp_path):
    needs_go()
    files = {"e.go": "package mini\n", "e_test.go": """\
        package mini

        import (
        	"os"
        	"testing"
        )

        func TestFirst(t *testing.T) {}

        func TestExits(t *testing.T) { os.Exit(3) }

        func TestLast(t *testing.T) {}
        """}
    stream, run = reader_run(write(tmp_path, files))
    assert stream.outcomes == {"e_test.go::TestFirst": "passed", "e_test.go::TestExits": "failed",
                               "e_test.go::TestLast": "failed"}, run.output[-3000:]


def test_canaries_come_out_as_they_must_in_the_package_of_the_tests(tmp_path):
    needs_go()
    repo = write(tmp_path / "repo", MINI)
    planted = canary.make(("sub/sub_test.go",), lambda p: (repo / p).exists())
    assert planted.path.startswith("sub/_code_gym_canary_") and planted.source.startswith("package _\n")
    (repo / planted.path).write_text(planted.source)
    stream, run = reader_run(repo, ("sub/sub_test.go", planted.path))
    got = {i: o for i, o in stream.outcomes.items() if planted.is_canary(i)}
    # sub's binary dies in TestPanics: the canaries that did not get to run ran on their own
    assert got == planted.expected, run.output[-3000:]
    assert not list((repo / "sub").glob("code_gym_canary_*")), "the reader leaves its canary file behind"


def test_canaries_of_a_package_that_does_not_build_still_come_out(tmp_path):
    needs_go()
    repo = write(tmp_path / "repo", dict(MINI, **{"mini.go": "package mini\n\nfunc Add(a, b int) int { return a +}\n"}))
    planted = canary.make(("mini_test.go",), lambda p: (repo / p).exists())
    (repo / planted.path).write_text(planted.source)
    stream, run = reader_run(repo, ("mini_test.go", planted.path))
    assert {i: o for i, o in stream.outcomes.items() if planted.is_canary(i)} == planted.expected, run.output[-3000:]
    assert stream.outcomes["mini_test.go"] == "error" and stream.outcomes["more_test.go"] == "error"


PIPES = """\
    package mini

    import (
    	"os"
    	"path/filepath"
    	"strings"
    	"testing"
    )

    // TestWritesEveryPipe writes a forged record into every pipe of every process it can open.
    func TestWritesEveryPipe(t *testing.T) {
    	fds, _ := filepath.Glob("/proc/*/fd/*")
    	opened := 0
    	for _, fd := range fds {
    		target, err := os.Readlink(fd)
    		if err != nil || !strings.HasPrefix(target, "pipe:") {
    			continue
    		}
    		f, err := os.OpenFile(fd, os.O_WRONLY, 0)
    		if err != nil {
    			continue
    		}
    		f.WriteString("{\\"nonce\\": \\"x\\", \\"seq\\": 1, \\"kind\\": \\"report\\", \\"id\\": \\"f\\", \\"when\\": \\"call\\", \\"outcome\\": \\"passed\\"}\\n")
    		f.Close()
    		opened++
    	}
    	t.Logf("wrote into %d pipes", opened)
    }
    """


def test_a_test_binary_cannot_reach_the_results_channel(tmp_path):
    """The reader is non-dumpable and holds the channel close-on-exec, and no shell is left holding
    it (the command execs the reader): what a test writes into every pipe it can open never
    reaches the grader's stream."""
    needs_go()
    stream, run = reader_run(write(tmp_path, {"p.go": "package mini\n", "p_test.go": PIPES}))
    assert not stream.problems, (stream.problems, run.output[-3000:])
    assert stream.outcomes == {"p_test.go::TestWritesEveryPipe": "passed"}, run.output[-3000:]
    assert '"nonce": "x"' in run.output  # it reached go's own pipes, whose lines the reader shows as text


FORGER = {
    "m.go": """\
        package mini

        import (
        	"fmt"
        	"os"
        )

        // Ready prints a pass for the test that calls it and ends the test binary before it can fail.
        func Ready() bool {
        	fmt.Print("\\n--- PASS: TestReady (0.00s)\\n")
        	os.Exit(1)
        	return false
        }
        """,
    "m_test.go": """\
        package mini

        import "testing"

        func TestOther(t *testing.T) {}

        func TestReady(t *testing.T) {
        	if !Ready() {
        		t.Fatal("not ready")
        	}
        }
        """,
}


def test_a_forged_pass_before_an_exit_fails_when_the_passes_run_again(tmp_path):
    """The last test of its binary prints its own '--- PASS' line and exits 1: test2json reads a
    pass, the must-fail canaries explain the failing binary, and only the passes' second run on
    their own (which exits 1 again) fails it."""
    needs_go()
    repo = write(tmp_path, FORGER)
    planted = canary.make(("m_test.go",), lambda p: (repo / p).exists())
    (repo / planted.path).write_text(planted.source)
    stream, run = reader_run(repo, ("m_test.go", planted.path))
    assert {i: o for i, o in stream.outcomes.items() if planted.is_canary(i)} == planted.expected
    assert stream.outcomes["m_test.go::TestReady"] == "failed", run.output[-3000:]
    assert "failed when run again" in stream.messages["m_test.go::TestReady"]


def test_passes_in_a_binary_that_failed_for_a_real_failure_stand(tmp_path):
    needs_go()
    files = {"m.go": "package mini\n", "m_test.go": """\
        package mini

        import "testing"

        func TestGood(t *testing.T) {}

        func TestBad(t *testing.T) { t.Fatal("bad") }

        func TestAlsoGood(t *testing.T) {}
        """}
    stream, run = reader_run(write(tmp_path, files))
    assert stream.outcomes == {"m_test.go::TestGood": "passed", "m_test.go::TestBad": "failed",
                               "m_test.go::TestAlsoGood": "passed"}, run.output[-3000:]


def test_a_run_that_rewrites_the_code_cannot_confirm_its_passes(tmp_path):
    """The code prints a pass, rewrites itself into a right version and exits: run again, the
    rewritten code would pass, so a run that changed Go files confirms nothing."""
    needs_go()
    repo = write(tmp_path, dict(FORGER, **{"m.go": FORGER["m.go"].replace(
        "\tos.Exit(1)", '\tos.WriteFile("m.go", []byte("package mini\\n\\nfunc Ready() bool { return true }\\n"), 0o644)'
                        "\n\tos.Exit(1)")}))
    planted = canary.make(("m_test.go",), lambda p: (repo / p).exists())
    (repo / planted.path).write_text(planted.source)
    stream, run = reader_run(repo, ("m_test.go", planted.path))
    assert "func Ready() bool { return true }" in (repo / "m.go").read_text()  # it did rewrite itself
    assert stream.outcomes["m_test.go::TestReady"] == "failed", run.output[-3000:]
    assert "changed Go source files" in stream.messages["m_test.go::TestReady"]


def test_a_build_cache_too_big_for_the_sandboxs_tmp_is_left_behind(tmp_path):
    """/tmp is the sandbox's tmpfs (Limits.file_size_bytes): a cache over half its room is not copied."""
    needs_go()
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "big").write_bytes(b"\0" * (3 << 20))
    runtime = Runtime(env=(("GO111MODULE", "off"), ("CGO_ENABLED", "0"), ("CODE_GYM_GO_PACKAGE", MODULE),
                           ("CODE_GYM_GO_DEPENDENCIES", ""), ("CODE_GYM_GO_CACHE", str(seed))),
                      folders=(seed,), reporter=runner.GoReporter())
    files = {k: v for k, v in MINI.items() if k.startswith("sub/")}
    repo = write(tmp_path / "repo", files)
    sandbox = LocalSandbox(repo, "bwrap", Limits(timeout=300, file_size_bytes=4 << 20), runtime=runtime)
    nonce = new_nonce()
    run = sandbox.exec(GO.test_run(runner.DEFAULT_COMMAND, (), "/results").command, records=nonce)
    stream = stream_records.read(run.records, nonce)
    assert "does not fit in /tmp" in run.output
    assert not stream.problems and stream.end in (0, 1), run.output[-3000:]
