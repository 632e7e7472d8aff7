"""The builder end to end on a small project written here: tasks that pass every gate, a flaky test
rejected for flakiness, a leaking statement rejected, and a built task solved through the env."""
import json
import tarfile
import textwrap

import pytest

from code_gym.languages.python.builder import BuildError, BuildOptions, build_tasks
from code_gym.apps.cli import main
from code_gym.env.environment import CodeRepoEnv
from code_gym.actions.replay import hermes, patch_to_calls
from code_gym.tasks.task import load_task_dir
from code_gym.grading.gates import validate_task

SHOP = {
    "shop/__init__.py": "",
    "shop/pricing.py": '''\
        """Prices and discounts for the shop's checkout."""


        def apply_discount(price, percent):
            """Price after taking `percent` percent off; percent is clamped to [0, 100]."""
            if percent > 100:
                percent = 100
            if percent < 0:
                percent = 0
            return round(price * (100 - percent) / 100, 2)


        def total(prices, percent=0):
            """Sum of the prices after the discount."""
            return sum(apply_discount(p, percent) for p in prices)
        ''',
    "shop/inventory.py": '''\
        """Stock keeping."""


        class Inventory:
            """Counts of items in stock."""

            def __init__(self):
                self.counts = {}

            def add(self, item, count=1):
                """Add `count` of `item` to the stock."""
                self.counts[item] = self.counts.get(item, 0) + count

            def remove(self, item, count=1):
                """Take `count` of `item` out; raises ValueError when fewer are in stock."""
                have = self.counts.get(item, 0)
                if count > have:
                    raise ValueError(f"only {have} {item} in stock")
                self.counts[item] = have - count
        ''',
    "shop/text.py": '''\
        """Formatting for receipts."""


        def receipt_line(name, price, width=20):
            """`name` and `price` (two decimals) on one line, padded with dots to `width` characters."""
            amount = f"{price:.2f}"
            dots = "." * max(width - len(name) - len(amount), 1)
            return name + dots + amount


        def slug(title):
            """Lower-case words joined by dashes: returns "-".join(title.lower().split())."""
            return "-".join(title.lower().split())
        ''',
    "tests/test_pricing.py": '''\
        from shop.pricing import apply_discount, total


        def test_discount():
            assert apply_discount(200, 25) == 150


        def test_discount_is_clamped():
            assert apply_discount(50, 150) == 0
            assert apply_discount(50, -5) == 50


        def test_total():
            assert total([10, 20], 50) == 15
        ''',
    "tests/test_inventory.py": '''\
        import pytest

        from shop.inventory import Inventory


        def test_add_and_remove():
            inv = Inventory()
            inv.add("tea", 3)
            inv.remove("tea", 2)
            assert inv.counts == {"tea": 1}


        def test_remove_more_than_stock():
            inv = Inventory()
            inv.add("tea")
            with pytest.raises(ValueError):
                inv.remove("tea", 2)
        ''',
    # Deliberately flaky: a non-idempotent test that passes once per fresh checkout.
    "tests/test_text.py": '''\
        from pathlib import Path

        from shop.text import receipt_line, slug


        def test_receipt_line():
            marker = Path("receipt.log")
            first_run = not marker.exists()
            marker.write_text("printed")
            assert first_run
            assert receipt_line("tea", 1.5, 12) == "tea.....1.50"


        def test_slug():
            assert slug("Green  Tea") == "green-tea"
        ''',
}


def write_files(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def write_project(root):
    return write_files(root, SHOP)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    project = write_project(tmp_path_factory.mktemp("shop") / "shop")
    out = tmp_path_factory.mktemp("built")
    return project, build_tasks(project, out, BuildOptions(mutations_per_function=1, progress=False))


def test_tasks_and_manifest(built):
    _, report = built
    ids = {t.id for t in report.tasks}
    assert {"shop-pricing-apply-discount-remove-body", "shop-inventory-inventory-remove-flip-comparison"} <= ids
    assert {t.kind for t in report.tasks} == {"feature", "bugfix"}
    manifest = json.loads((report.out / "manifest.json").read_text())
    assert manifest["accepted"] == len(report.tasks) and manifest["baseline"]["tests"] == 7
    assert manifest["candidates"] == len(report.tasks) + len(report.rejections)
    assert {g: v["rejected"] for g, v in manifest["gates"].items()} == {
        "original": 0, "fails": len(report.rejected("fails")), "flaky": 1, "runtime": 0, "leak": 1, "regions": 0}
    assert sorted(t.id for t in load_task_dir(report.out)) == sorted(ids)  # manifest.json is not a task
    for task in report.tasks:
        assert task.fail_to_pass and set(task.fail_to_pass).isdisjoint(task.pass_to_pass)
        assert len(task.fail_to_pass) + len(task.pass_to_pass) == 7
        assert {t.split("::")[0] for t in task.fail_to_pass} == set(task.hidden_tests)
        assert not any((task.repo / h).exists() for h in task.hidden_tests)


def test_flaky_test_is_rejected_for_flakiness(built):
    _, report = built
    [flaky] = report.rejected("flaky")
    assert flaky.candidate == "shop-text-receipt-line-remove-body"
    assert "tests/test_text.py::test_receipt_line (1/3)" in flaky.reason


def test_statement_that_gives_the_code_away_is_rejected(built):
    _, report = built
    [leaked] = report.rejected("leak")
    assert leaked.candidate == "shop-text-slug-remove-body" and '"-".join(title.lower().split())' in leaked.reason


def test_built_tasks_pass_the_validation_gates(built):
    _, report = built
    for task_id in ("shop-pricing-apply-discount-remove-body", "shop-inventory-inventory-remove-flip-comparison"):
        task = next(t for t in report.tasks if t.id == task_id)
        verdict = validate_task(task, runs=1)
        assert verdict.ok, verdict.problems
        assert verdict.untouched_failing == len(task.fail_to_pass)


def test_round_trip_reference_replayed_through_the_env_scores_one(built):
    _, report = built
    task = next(t for t in report.tasks if t.kind == "bugfix")
    env = CodeRepoEnv(task=task)
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(hermes(patch_to_calls(task.reference_patch, task.repo)))
        assert not info["invalid_action"], info["tool_results"]
        _, reward, terminated, _, info = env.step(hermes([{"name": "submit", "arguments": {}}]))
        assert terminated and reward == 1.0 and info["resolved"]
        env.reset(seed=0)
        _, reward, _, _, _ = env.step(hermes([{"name": "submit", "arguments": {}}]))
        assert reward < 1.0
    finally:
        env.close()


def test_sdist_through_the_cli(tmp_path, capsys):
    project = write_project(tmp_path / "shop-1.0")
    sdist = tmp_path / "shop-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        tf.add(project, arcname="shop-1.0")
    code = main(["tasks", "build", str(sdist), "--out", str(tmp_path / "out"), "--max-candidates", "1",
                 "--workers", "1"])
    assert code == 0
    assert "1 tasks from 1 candidates" in capsys.readouterr().out  # one accepted: nothing to combine
    [task] = load_task_dir(tmp_path / "out")
    assert task.id.startswith("shop-1-0-")


def test_project_without_tests_is_refused(tmp_path):
    (tmp_path / "lib.py").write_text("def f():\n    return 1\n")
    with pytest.raises(BuildError, match="no test files"):
        build_tasks(tmp_path, tmp_path / "out")


def test_built_reference_solutions_pass_the_audit(built):
    from code_gym.grading.audit import audit
    from code_gym.grading.reference import reference_changes
    _, report = built
    assert report.tasks
    assert {t.id: audit(reference_changes(t), t) for t in report.tasks if audit(reference_changes(t), t)} == {}


def test_cli_environment_options_reach_the_builder(tmp_path, monkeypatch):
    # only the CLI's wiring is under test here: the builder itself is replaced by a recorder
    import code_gym.languages.python.builder as builder

    seen = []

    def record(source, out, options, **kwargs):
        seen.append(options.environment)
        raise SystemExit(0)

    monkeypatch.setattr(builder, "build_tasks", record)
    monkeypatch.setattr(builder, "build_many", record)
    project = write_project(tmp_path / "shop")
    for extra, want in (([], (False, "uv")), (["--sdists", "--installer", "pip"], (True, "pip"))):
        with pytest.raises(SystemExit):
            main(["tasks", "build", str(project), "--out", str(tmp_path / "out"), *extra])
        assert (seen[-1].sdists, seen[-1].installer) == want


# Tests that call every function and check nothing: no change of the code fails a test, so every
# candidate is rejected by the "fails" gate, whichever is checked first.
UNCHECKED = {
    "calc/__init__.py": "",
    "calc/ops.py": "".join(f'''
def op{i}(a, b):
    """Operation {i}."""
    if a > b:
        return a - b + {i}
    return b - a + {i}
''' for i in range(8)),
    "tests/test_ops.py": "from calc import ops\n\n\ndef test_calls():\n" +
                         "".join(f"    ops.op{i}(3, 1)\n    ops.op{i}(1, 3)\n" for i in range(8)),
}


def test_a_project_whose_candidates_all_fail_the_gates_is_given_up(tmp_path):
    from code_gym.languages.python.builder.batch import build_many

    project = tmp_path / "calc"
    for rel, text in UNCHECKED.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    options = BuildOptions(mutations_per_function=2, remove_bodies=False, progress=False, workers=2, give_up_after=4)
    report = build_many([str(project)], tmp_path / "out", options)
    (result,) = report.projects.values()
    assert result.status == "rejected" and not result.tasks
    # the fourth result stops it: the candidates then running (one per worker) are checked too
    assert 4 <= result.candidates <= 4 + options.workers and result.gates["fails"] == result.candidates
    assert f"none of the first {result.candidates} candidates passed the gates" in result.reason
    # with the rule off, every candidate is checked, and every one is rejected the same way
    full = build_tasks(project, tmp_path / "full", BuildOptions(mutations_per_function=2, remove_bodies=False, progress=False,
                                                                give_up_after=0))
    assert not full.tasks and full.manifest["candidates"] >= 12 and full.manifest["given_up"] == 0
    assert len(full.rejected("fails")) == full.manifest["candidates"]
    (manifest,) = (tmp_path / "out" / "projects").glob("*/manifest.json")
    assert json.loads(manifest.read_text())["given_up"] == full.manifest["candidates"] - result.candidates


INHERITED = {
    "words/__init__.py": "",
    "words/core.py": '''\
        """Word helpers."""


        def slug(title):
            """Lower-case words joined by dashes."""
            return "-".join(title.lower().split())


        def initials(name):
            """The first letter of each word, upper-cased."""
            return "".join(w[0].upper() for w in name.split())
        ''',
    "tests/__init__.py": "",
    "tests/test_core.py": '''\
        from words.core import initials, slug


        class TestWords:
            def test_slug(self):
                assert slug("Green  Tea") == "green-tea"

            def test_initials(self):
                assert initials("ada lovelace") == "AL"
        ''',
    # a class of another file inherits the tests: pytest's node ids name this file and this class,
    # while junit XML gives `file` = test_core.py, where the methods' code lives
    "tests/test_more.py": '''\
        from tests.test_core import TestWords


        class TestMoreWords(TestWords):
            def test_slug_of_one_word(self):
                assert slug_of("Tea") == "tea"


        def slug_of(word):
            from words.core import slug
            return slug(word)
        ''',
}


def test_tests_inherited_from_another_files_class_keep_their_node_ids(tmp_path):
    """The itsdangerous defect of the task-supply run: the build read node ids back from junit XML,
    which names an inherited test after the file its code is in (tests/test_core.py::test_slug), an
    id pytest does not have; the grader, reading pytest's own ids, then failed the reference."""
    from code_gym.languages.python.builder.revalidate import revalidate_task

    project = tmp_path / "words"
    write_files(project, INHERITED)
    report = build_tasks(project, tmp_path / "out", BuildOptions(mutations_per_function=1, remove_bodies=False,
                                                                 progress=False, multi_ratio=0))
    assert report.tasks
    task = load_task_dir(tmp_path / "out")[0]
    ids = set(task.fail_to_pass + task.pass_to_pass)
    assert "tests/test_more.py::TestMoreWords::test_slug" in ids
    assert "tests/test_core.py::TestWords::test_slug" in ids
    assert not any(i.startswith("tests/test_core.py::test_") for i in ids)
    assert revalidate_task(task, runs=1).gate is None


def test_a_whole_test_set_over_half_the_timeout_is_refused_by_the_grader_check(tmp_path, monkeypatch):
    """Each candidate's checks run only the tests that cover its change; the grader runs them all.
    A slow test elsewhere in the suite (4 s here, against a 6 s test timeout) passes every
    candidate check, and every task it makes then fails `tasks revalidate` (the mako task of the
    supply run). The build's grader check runs the whole set once per project and refuses them."""
    import code_gym.grading.builder as shared
    from code_gym.languages.python.builder.revalidate import revalidate_task

    project = tmp_path / "words"
    files = {k: v for k, v in INHERITED.items() if k != "tests/test_more.py"}
    files["tests/test_slow.py"] = "import time\n\n\ndef test_slow():\n    time.sleep(4)\n"
    write_files(project, files)
    options = BuildOptions(mutations_per_function=1, remove_bodies=False, progress=False, multi_ratio=0, timeout=6)
    report = build_tasks(project, tmp_path / "out", options)
    assert not report.tasks and report.rejected("runtime")
    assert all("whole test set took" in r.reason for r in report.rejected("runtime"))
    # the check off: the same build writes tasks, and the independent re-validation fails them
    monkeypatch.setattr(shared, "grader_check", lambda tasks, workers, isolation, slots=None: {})
    unchecked = build_tasks(project, tmp_path / "unchecked", options)
    assert unchecked.tasks
    assert revalidate_task(load_task_dir(tmp_path / "unchecked")[0], runs=1).gate == "runtime"


def test_tests_that_write_into_their_own_folder_are_refused_by_the_grader_check(tmp_path, monkeypatch):
    """mako's cache tests write .dbm files under test/templates/ while they run; the grader counts
    any change to protected test paths during the run as tampering and scores nothing, so every
    such task failed re-validation (`original`) after passing the build's own checks."""
    import code_gym.grading.builder as shared
    from code_gym.languages.python.builder.revalidate import revalidate_task

    project = tmp_path / "words"
    files = {k: v for k, v in INHERITED.items() if k != "tests/test_more.py"}
    files["tests/test_cache.py"] = textwrap.dedent('''\
        from pathlib import Path

        from words.core import slug


        def test_cached_slug():
            cache = Path(__file__).parent / "cache" / "slug.dat"
            cache.parent.mkdir(exist_ok=True)
            cache.write_text(slug("Green Tea"))
            assert cache.read_text() == "green-tea"
        ''')
    write_files(project, files)
    options = BuildOptions(mutations_per_function=1, remove_bodies=False, progress=False, multi_ratio=0)
    report = build_tasks(project, tmp_path / "out", options)
    assert not report.tasks and report.rejected("original")
    assert all("test files changed during the run" in r.reason for r in report.rejected("original"))
    monkeypatch.setattr(shared, "grader_check", lambda tasks, workers, isolation, slots=None: {})
    unchecked = build_tasks(project, tmp_path / "unchecked", options)
    assert unchecked.tasks
    # the untouched repo's run already changes the test folder: voided, so `fails` comes first
    assert revalidate_task(load_task_dir(tmp_path / "unchecked")[0], runs=1).gate in ("fails", "original")


def test_a_void_of_the_untouched_run_must_repeat_before_a_project_is_refused(tmp_path, monkeypatch):
    """The grader check refuses a whole project when the grader voids its untouched repo's run. A
    void that does not repeat (inflection's, once, on the loaded supply run; 10 of 10 grades of the
    same task alone were fine) is graded again first. The voids here are made by wrapping the real
    grader: the first untouched grade (or every one) comes back with a canary finding."""
    import dataclasses

    import code_gym.grading.builder as shared
    from code_gym.grading.audit import Finding

    project = tmp_path / "words"
    files = {k: v for k, v in INHERITED.items() if k != "tests/test_more.py"}
    write_files(project, files)
    real, untouched = shared.grade, []

    def flaky_void(always):
        def grade(task, changes, **kw):
            result = real(task, changes, **kw)
            if not changes:
                untouched.append(task.id)
                if always or len(untouched) == 1:
                    return dataclasses.replace(result, canary=[Finding("", 0, "canary", "a canary test is missing")])
            return result
        return grade

    options = BuildOptions(mutations_per_function=1, remove_bodies=False, progress=False, multi_ratio=0)
    monkeypatch.setattr(shared, "grade", flaky_void(always=False))
    once = build_tasks(project, tmp_path / "once", options)
    assert once.tasks and len(untouched) == 2
    untouched.clear()
    monkeypatch.setattr(shared, "grade", flaky_void(always=True))
    every = build_tasks(project, tmp_path / "every", options)
    assert not every.tasks and len(untouched) == 2
    assert all("voids the untouched repo's test run" in r.reason for r in every.rejected("original"))
