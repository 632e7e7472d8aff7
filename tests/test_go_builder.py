"""The Go builder (code_gym.languages.go.builder): finding an import path's tree, its test files,
sources and the Debian packages of its environment; statements from go test's output; the gates'
decisions on a hand-made package whose answers are known (no dependency); a Debian package built
end to end and re-validated; the batch run."""
from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest
from sandbox_backends import IN_CI

from code_gym import languages
from code_gym.grading.builder import Candidate
from code_gym.languages.go.builder import BuildError, BuildOptions, build_many, build_tasks, expand_sources
from code_gym.languages.go.builder import pipeline
from code_gym.languages.go.builder.batch import source_key
from code_gym.languages.go.builder.mutations import functions, mutation_sites
from code_gym.languages.go.builder.project import file_imports, import_path_root, is_debian_name, open_project
from code_gym.languages.go.builder.statement import Symptom, describe, write_statement
from code_gym.tasks.task import load_task, load_task_dir


def _go_ready() -> str | None:
    """Why the end-to-end tests cannot run here, or None."""
    if shutil.which("go") is None:
        return "go is not installed (apt-get install golang-go)"
    try:
        languages.get("go")
    except Exception as exc:  # noqa: BLE001 - the adapter's import is what is missing
        return f"the Go adapter does not load: {exc}"
    from code_gym.sandbox.local import available_isolation
    if available_isolation()[0] == "none":
        return "no local sandbox (bubblewrap or user namespaces) runs here"
    return None


GO_MISSING = _go_ready()
needs_go = pytest.mark.skipif(GO_MISSING is not None and not IN_CI, reason=str(GO_MISSING))  # CI: run (and fail)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def test_the_import_path_is_the_folder_chain_down_to_the_first_file(tmp_path):
    src = _write(tmp_path / "src", {"example.com/calc/go.mod": "module example.com/calc\n",
                                    "example.com/calc/calc.go": "package calc\n",
                                    "example.com/calc/sub/x.go": "package sub\n"})
    assert import_path_root(src) == "example.com/calc"
    assert import_path_root(src, "example.com/calc") == "example.com/calc"
    _write(src, {"example.com/other/y.go": "package other\n"})
    with pytest.raises(BuildError, match="several import paths"):
        import_path_root(src)
    with pytest.raises(BuildError, match="other import paths beside example.com/calc"):
        import_path_root(src, "example.com/calc")


def test_imports_are_read_from_both_forms_of_import():
    text = 'package p\n\nimport "fmt"\nimport yaml "gopkg.in/yaml.v3"\n\nimport (\n\t"strings"\n\t_ "embed"\n' \
           '\tassert "github.com/stretchr/testify/assert"\n)\n\nfunc f() { _ = "not/an/import" }\n'
    assert file_imports(text) == {"fmt", "gopkg.in/yaml.v3", "strings", "embed", "github.com/stretchr/testify/assert"}


def test_sources_name_debian_packages_and_folders(tmp_path):
    assert is_debian_name("golang-github-google-go-cmp-dev") and not is_debian_name("golang-go")
    assert source_key("golang-github-google-go-cmp-dev") == "github-google-go-cmp"
    one = _write(tmp_path / "trees" / "calc", {"example.com/calc/calc.go": "package calc\n"})
    _write(tmp_path / "trees" / "text", {"example.com/text/t.go": "package text\n"})
    listing = tmp_path / "list.txt"
    listing.write_text(f"# packages\ngolang-github-google-go-cmp-dev\n{one}  # a folder\n")
    assert expand_sources([str(listing)]) == ["golang-github-google-go-cmp-dev", str(one)]
    assert expand_sources([str(tmp_path / "trees")]) == [str(one), str(tmp_path / "trees" / "text")]
    with pytest.raises(BuildError, match="not a file, a folder or a Debian package"):
        expand_sources(["golang-nothing"])


def test_go_test_output_becomes_one_sentence():
    def said(message: str) -> str:
        return describe(Symptom("calc_test.go::TestX", message))

    assert said("=== RUN   TestX\n    calc_test.go:12: Parse(\"1,2\") = 12, want 3\n--- FAIL: TestX (0.00s)\n") == \
        'the result is `12` instead of `3` (the test says: Parse("1,2"))'
    assert said("    calc_test.go:5: expected 4, got 3") == "the result is `3` instead of `4`"
    assert said("panic: runtime error: index out of range [3] with length 3 [recovered]\n") == \
        "it panics: `runtime error: index out of range [3] with length 3`"
    assert said("    x_test.go:20: \n        \tError Trace:\tx_test.go:20\n        \tError:      \tNot equal: \n"
                "        \t            \texpected: 4\n        \t            \tactual  : 3\n") == \
        "the result is `3` instead of `4`"
    assert said("    x_test.go:9: mismatch (-want +got):\n          []int{\n        - \t1,\n        + \t2,\n") == \
        "the result differs from the expected value: `2` where `1` is expected"
    assert said("    x_test.go:9: wrong answer for empty input") == "it fails with `wrong answer for empty input`"


def test_a_statement_shows_the_go_signature_and_doc_when_the_symptoms_name_the_function():
    text = "package calc\n\n// Max is the larger of a and b.\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n" \
           "\t}\n\treturn b\n}\n"
    fn = functions("calc.go", text)[0]
    change = next(c for c in mutation_sites(fn, text) if c.operator == "flip-comparison")
    symptoms = {"calc_test.go::TestMax": Symptom("calc_test.go::TestMax", "    calc_test.go:8: Max(1, 9) = 1, want 9")}
    statement = write_statement(change, ["calc_test.go::TestMax"], symptoms, seed="x")
    assert "`TestMax`" in statement and "calc.go" in statement
    assert "```go\n// Max is the larger of a and b.\nfunc Max(a, b int) int {\n\t// ...\n}\n```" in statement
    assert "if a > b" not in statement


def test_a_test_that_never_ran_after_a_panic_is_no_symptom_and_hides_no_file():
    from code_gym.languages.go.builder.statement import parse_failures

    messages = {"a_test.go::TestA": "the test did not finish: the test binary panicked or exited during it: panic: boom",
                "b_test.go::TestB": "the test did not run: the test binary ended before it"}
    tests = sorted(messages)
    assert list(parse_failures(messages, tests)) == ["a_test.go::TestA"]
    assert pipeline._hidden(tests, messages) == ["a_test.go"]
    assert pipeline._hidden(["b_test.go::TestB"], messages) == ["b_test.go"]  # none failed of its own: its file


def test_a_go_cover_profile_gives_the_lines_that_ran():
    profile = "mode: set\nexample.com/calc/calc.go:3.10,5.2 2 1\nexample.com/calc/sub/y.go:7.1,7.9 1 0\n" \
              "example.com/calc/calc.go:9.1,10.2 1 3\nother.org/dep/z.go:1.1,2.2 1 1\n"
    assert pipeline.read_coverage(profile, "example.com/calc") == {"calc.go": {3, 4, 5, 9, 10}}


CALC = {
    "example.com/calc/calc.go": """\
        // Package calc does small sums.
        package calc

        // Add is the sum of a and b.
        func Add(a, b int) int {
        	s := a
        	s += b
        	return s
        }

        // Max is the larger of a and b.
        func Max(a, b int) int {
        	if a > b {
        		return a
        	}
        	return b
        }

        // Min is the smaller of a and b.
        func Min(a, b int) int {
        	if a < b {
        		return a
        	}
        	return b
        }

        // Unused is run by no test.
        func Unused(x int) int {
        	if x > 1 {
        		return x * 2
        	}
        	return x
        }
        """,
    "example.com/calc/maxmin_test.go": """\
        package calc

        import "testing"

        func TestMax(t *testing.T) {
        	if got := Max(1, 9); got != 9 {
        		t.Errorf("Max(1, 9) = %d, want 9", got)
        	}
        	if got := Max(9, 1); got != 9 {
        		t.Errorf("Max(9, 1) = %d, want 9", got)
        	}
        }

        func TestMin(t *testing.T) {
        	if got := Min(1, 9); got != 1 {
        		t.Errorf("Min(1, 9) = %d, want 1", got)
        	}
        	if got := Min(9, 1); got != 1 {
        		t.Errorf("Min(9, 1) = %d, want 1", got)
        	}
        }
        """,
    # passes in a fresh copy, fails when run again in the same folder (it leaves a file behind); in a
    # package of its own, since the reader runs the passes of a failed test binary again
    "example.com/calc/once/once_test.go": """\
        package once

        import (
        	"os"
        	"testing"

        	. "example.com/calc"
        )

        func TestAddOncePerFolder(t *testing.T) {
        	_, err := os.Stat(".added")
        	first := os.IsNotExist(err)
        	os.WriteFile(".added", nil, 0o644)
        	if !first {
        		t.Fatal("run twice in one folder")
        	}
        	if Add(2, 3) != 5 {
        		t.Error("Add(2, 3) != 5")
        	}
        }
        """,
}


@pytest.fixture(scope="module")
def calc(tmp_path_factory):
    if GO_MISSING:
        (pytest.fail if IN_CI else pytest.skip)(GO_MISSING)
    root = _write(tmp_path_factory.mktemp("calc") / "calc", CALC)
    out = tmp_path_factory.mktemp("calc-out")
    return root, build_tasks(root, out, BuildOptions(progress=False))


@needs_go
def test_the_gates_decide_as_expected_on_a_hand_made_package(calc):
    root, report = calc
    by_id = {t.id: t for t in report.tasks}
    manifest = report.manifest
    assert manifest["import_path"] == "example.com/calc" and manifest["environment"]["packages"] == []
    assert manifest["environment"]["build_cache"]  # made by the adapter in the sandbox, or found in the cache
    # Unused runs in no test: no candidate of it
    assert manifest["functions"]["found"] == 4 and manifest["functions"]["covered"] == 3
    assert not any("unused" in c for c in list(by_id) + [r.candidate for r in report.rejections])
    # `>` to `>=` in Max (and `<` to `<=` in Min) changes no tested result: an equivalent mutant
    fails = {r.candidate for r in report.rejected("fails")}
    assert {"calc-max-off-by-one", "calc-min-off-by-one"} <= fails, report.summary()
    # Add's test fails when rerun in the same folder: the task that needs it is flaky
    assert "calc-add-remove-body" in {r.candidate for r in report.rejected("flaky")}, report.summary()
    flip = by_id["calc-max-flip-comparison"]
    assert flip.language == "go" and flip.test_command == "go test -count=1 -vet=off"
    assert flip.fail_to_pass == ("maxmin_test.go::TestMax",)
    assert flip.hidden_tests == ("maxmin_test.go",) and flip.visible_tests == ("once/once_test.go",)
    assert set(flip.pass_to_pass) == {"maxmin_test.go::TestMin", "once/once_test.go::TestAddOncePerFolder"}
    assert not (flip.repo / "maxmin_test.go").exists()
    changed_max = (flip.repo / "calc.go").read_text().split("func Max")[1].split("func Min")[0]
    assert "if a < b" in changed_max
    assert flip.environment.import_path == "example.com/calc"
    multi = [t for t in report.tasks if "-plus-" in t.id]
    assert multi and manifest["multi_region"] == len(multi)


@needs_go
def test_a_change_that_does_not_compile_and_a_region_no_test_needs_are_rejected(calc, tmp_path):
    root, _ = calc
    project = open_project(root, tmp_path / "work", test_command="go test -count=1 -vet=off")
    options = BuildOptions(progress=False)
    slots = threading.BoundedSemaphore(2)
    runtime, _ = pipeline._runtime(project)
    baseline = pipeline._baseline(project, runtime, options, slots)
    runs = pipeline._Runs(project, runtime, baseline, options, slots)
    source = (project.root / "calc.go").read_text()
    by_name = {fn.qualname: fn for fn in functions("calc.go", source)}
    flip = next(c for c in mutation_sites(by_name["Max"], source) if c.operator == "flip-comparison")
    equivalent = next(c for c in mutation_sites(by_name["Min"], source) if c.operator == "off-by-one")
    outcome = pipeline._evaluate(runs, Candidate("calc-combo", (flip, equivalent), baseline.passed), tmp_path / "staging")
    assert outcome.result.gate == "regions" and "Min (off-by-one)" in outcome.result.reason
    broken = type(flip)(flip.function, "swap-arguments", source.replace("return b\n}\n\n// Min",
                                                                       "return b + \"x\"\n}\n\n// Min"), flip.line, ())
    refused = pipeline._evaluate(runs, Candidate("calc-broken", (broken,), baseline.passed), tmp_path / "staging")
    assert refused.result.gate == "fails" and "does not compile" in refused.result.reason


@needs_go
def test_every_built_task_passes_revalidate(calc):
    _, report = calc
    result = languages.get("go").builder.revalidate(report.tasks, runs=2)
    assert result.fraction == 1.0, result.summary()


def test_a_tree_without_tests_is_refused_with_the_reason(tmp_path):
    bare = _write(tmp_path / "bare", {"example.com/bare/b.go": "package bare\n"})
    with pytest.raises(BuildError, match="no _test.go files"):
        open_project(bare, tmp_path / "w1")
    with pytest.raises(BuildError, match="not a Debian package name"):
        open_project(tmp_path / "missing", tmp_path / "w2")


def _debian_reachable(name: str) -> bool:
    if shutil.which("apt-get") is None:
        return False
    try:
        return subprocess.run(["apt-cache", "show", name], capture_output=True, timeout=60).returncode == 0
    except subprocess.TimeoutExpired:
        return False


SMALL = "golang-github-google-shlex-dev"
needs_debian = pytest.mark.skipif((GO_MISSING is not None or not _debian_reachable(SMALL)) and not IN_CI,
                                  reason=f"{GO_MISSING or ''} / apt does not know {SMALL}")


@needs_debian
def test_a_debian_package_becomes_validated_tasks(tmp_path):
    report = build_tasks(SMALL, tmp_path / "out", BuildOptions(progress=False, max_candidates=6, multi_ratio=0.5))
    assert report.tasks, report.summary()
    assert report.manifest["import_path"] == "github.com/google/shlex"
    task = load_task(report.tasks[0].root)
    assert task.language == "go" and task.fail_to_pass and task.environment.import_path == "github.com/google/shlex"
    assert all(t.split("::")[0] in task.hidden_tests for t in task.fail_to_pass)
    result = languages.get("go").builder.revalidate(report.tasks[:1], runs=1)
    assert result.fraction == 1.0, result.summary()


@needs_go
def test_many_sources_in_one_resumable_run(calc, tmp_path):
    root, _ = calc
    bare = _write(tmp_path / "bare", {"example.com/bare/b.go": "package bare\n"})
    sources = expand_sources([str(root), str(bare)])
    report = build_many(sources, tmp_path / "out", BuildOptions(progress=False, multi_ratio=0.3))
    rows = {p.source: p for p in report.projects.values()}
    assert rows[str(root)].status == "built" and rows[str(root)].tasks
    assert rows[str(bare)].status == "error" and "no _test.go" in rows[str(bare)].reason
    assert len(load_task_dir(tmp_path / "out")) == report.tasks == len(rows[str(root)].tasks)
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert manifest["accepted"] == report.tasks and manifest["gates"]["fails"] >= 2
    again = build_many(sources, tmp_path / "out", BuildOptions(progress=False, multi_ratio=0.3))
    assert again.tasks == report.tasks
