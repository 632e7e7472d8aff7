"""Bad command-line input fails at once with an error line (exit code 2), never a traceback or a
long run that ends in one; the docs name what users import and what the env really does."""
import functools
import re
import time
from pathlib import Path

import pytest

import credit
from code_gym.apps import train
from code_gym.apps.cli import build_parser, main
from code_gym.languages.python import builder
from code_gym.env.environment import CodeRepoEnv
from code_gym.rewards import make_reward
from code_gym.sandbox import ISOLATION_KINDS

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("argv, flag", [
    (["demo", "-G", "1"], "-G/--group-size"),
    (["demo", "--variants", "-1"], "--variants"),
    (["train", "-G", "1"], "-G/--group-size"),
    (["train", "--lr", "-1"], "--lr"),
    (["train", "--regions-per-step", "-1"], "--regions-per-step"),
    (["train", "--updates", "-1"], "--updates"),
    (["rollout", "--base-url", "http://x/v1", "--model", "m", "--concurrency", "0"], "--concurrency"),
    (["rollout", "--base-url", "http://x/v1", "--model", "m", "--episodes", "0"], "--episodes"),
    (["tasks", "validate", "--runs", "0"], "--runs"),
    (["tasks", "validate", "--runs", "-2"], "--runs"),
    (["tasks", "revalidate", "out", "--runs", "0"], "--runs"),
    (["tasks", "build", "x", "--out", "o", "--workers", "0"], "--workers"),
])
def test_out_of_range_values_are_usage_errors(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {flag}: must be" in err and "Traceback" not in err


def test_help_states_the_bounds(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert ">= 2" in capsys.readouterr().out


@pytest.fixture
def no_training(monkeypatch):
    """A Trainer that records its config and fails the test if training would start."""
    configs = []

    class Refused:
        def __init__(self, tasks, config, **_):
            configs.append(config)
            raise AssertionError("training started")

    monkeypatch.setattr(train, "Trainer", Refused)
    return configs


@pytest.mark.parametrize("argv, estimator", [
    (["--option", "lamda=1"], "didpo"),
    (["--estimator", "didpo", "grpo", "--option", "baseline=contrast"], "grpo"),
    (["--option", "lambda_=abc"], "didpo"),
    (["--estimator", "didpo-split", "--option", "cover=tokens"], "didpo-split"),
])
def test_bad_estimator_option_fails_before_any_rollout(argv, estimator, tiny_task, no_training, capsys):
    started = time.monotonic()
    assert main(["train", "--tasks", str(tiny_task.root), *argv]) == 2
    assert time.monotonic() - started < 10
    assert not no_training  # no estimator trained, not even the first one
    err = capsys.readouterr().err
    assert err.startswith("code-gym: error:") and f"estimator {estimator!r}" in err


def test_unknown_option_names_what_the_estimator_accepts(tiny_task, no_training, capsys):
    assert main(["train", "--tasks", str(tiny_task.root), "--option", "lamda=1"]) == 2
    err = capsys.readouterr().err
    assert "'lamda'" in err and "lambda_" in err and "max_anchors" in err


def test_option_values_are_converted_and_reach_the_estimator(tiny_task, no_training, monkeypatch):
    from credit import registry

    seen, get = [], registry.get

    def recording_get(name):
        fn = get(name)

        @functools.wraps(fn)
        def recorded(trajectories, **options):
            seen.append(options)
            return fn(trajectories, **options)
        return recorded

    monkeypatch.setattr(registry, "get", recording_get)  # what credit.check_options calls
    wanted = {"max_anchors": None, "lambda_": 0.5, "contrast_std": True, "s0": 4, "levels": ["file", "hunk"],
              "baseline": "contrast"}
    argv = ["max_anchors=None", "lambda_=0.5", "contrast_std=True", "s0=4", 'levels=["file", "hunk"]',
            "baseline=contrast"]
    with pytest.raises(AssertionError, match="training started"):
        main(["train", "--tasks", str(tiny_task.root), *[a for o in argv for a in ("--option", o)]])
    assert no_training[0].options == wanted and seen == [wanted]
    assert {k: type(v) for k, v in seen[0].items()} == {k: type(v) for k, v in wanted.items()}


def test_a_preset_name_and_its_overrides_reach_the_trainer(tiny_task, no_training, capsys):
    with pytest.raises(AssertionError, match="training started"):
        main(["train", "--tasks", str(tiny_task.root), "--estimator", "didpo-split", "--option", "lambda_=0.5"])
    assert (no_training[0].estimator, no_training[0].options) == ("didpo-split", {"lambda_": 0.5})
    assert main(["train", "--tasks", str(tiny_task.root), "--estimator", "didpo-split", "--option",
                 "cover=tokens"]) == 2
    assert "cover must be one of ('lines', 'edit', 'call'), got 'tokens'" in capsys.readouterr().err
    for command in ("train", "demo"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--estimator", "didpo-best"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "argument --estimator: invalid choice: 'didpo-best'" in err and "didpo-split" in err


def test_library_estimator_checks_options_too():
    with pytest.raises(ValueError, match="'grpo' has no option 'baseline'"):
        train.estimator("grpo", baseline="contrast")


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_env_build_of_a_missing_folder_is_an_error(extra, tmp_path, capsys):
    missing = tmp_path / "nope"
    assert main(["env", "build", str(missing), *extra]) == 2
    out, err = capsys.readouterr()
    assert "does not exist" in err and "declares no requirements" not in out


def test_tasks_build_says_a_folder_without_project_files_was_read_as_projects(tmp_path, monkeypatch, capsys):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "tests" / "test_calc.py").write_text("from calc import add\n")

    class Report:
        tasks = 0

        def summary(self):
            return "proj/tests: no source modules outside the tests"

    built = []
    monkeypatch.setattr(builder, "build_many", lambda sources, *a, **k: built.append(sources) or Report())
    assert main(["tasks", "build", str(project), "--out", str(tmp_path / "out")]) == 1
    assert built == [[str(project / "tests")]]
    out = capsys.readouterr().out
    said = rf"{re.escape(str(project))} has no pyproject.toml, setup.py or setup.cfg.*folder of projects"
    assert re.search(said, out)


def test_an_empty_folder_of_projects_says_why_it_was_read_so(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["tasks", "build", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "has no pyproject.toml, setup.py or setup.cfg" in capsys.readouterr().err


def test_cli_and_env_accept_the_same_isolation_names(tiny_task):
    for kind in ISOLATION_KINDS:  # the sandbox is made at reset: construction only checks the name
        assert build_parser().parse_args(["--isolation", kind, "tasks", "list"]).isolation == kind
        CodeRepoEnv(task=tiny_task, isolation=kind).close()


def test_docs_state_the_real_default_reward():
    default = " + ".join(f"{weight:g} * {name}" for name, weight, _ in make_reward(None).components)
    assert default == "0.75 * f2p + 0.25 * probes"
    stated = {"env.md": (DOCS / "env.md").read_text(), "quickstart.md": (DOCS / "quickstart.md").read_text(),
              "CodeRepoEnv": CodeRepoEnv.__doc__}
    for where, text in stated.items():
        assert default in " ".join(text.split()), f"{where} does not state the default reward"
    reward_row = next(line for line in (DOCS / "env.md").read_text().splitlines() if line.startswith("| `reward`"))
    assert reward_row.split("|")[2].strip() != '`"f2p"`'


@pytest.mark.parametrize("doc, name, module", [
    ("tasks.md", "EnvOptions", "code_gym.languages.python.builder.project"),
    ("rewards.md", "ClientConfig", "code_gym.apps.client"),
])
def test_docs_name_the_module_of_a_class_they_show(doc, name, module):
    import importlib

    assert hasattr(importlib.import_module(module), name)
    paragraphs = [" ".join(p.split()) for p in (DOCS / doc).read_text().split("\n\n")]
    showing = [p for p in paragraphs if f"{name}(" in p]
    assert showing
    for paragraph in showing:  # each paragraph that shows it says where it comes from
        assert module in paragraph, paragraph[:200]


def test_tasks_build_of_one_requirement_spec_goes_to_the_batch_builder_that_fetches_it(tmp_path, monkeypatch):
    """`tasks build toolz==1.0.0` (one spec, no folder of that name) is fetched by the batch
    builder; the one-project path takes a folder or sdist on disk only (it said "not a project
    folder or an sdist")."""
    class Report:
        tasks = 1

        def summary(self):
            return "built"

    batches, singles = [], []
    monkeypatch.setattr(builder, "build_many", lambda sources, *a, **k: batches.append(sources) or Report())
    monkeypatch.setattr(builder, "build_tasks", lambda source, *a, **k: singles.append(source) or Report())
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "build", "toolz==1.0.0", "--out", str(tmp_path / "out")]) == 0
    assert batches == [["toolz==1.0.0"]] and singles == []
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'proj'\nversion = '1'\n")
    assert main(["tasks", "build", str(project), "--out", str(tmp_path / "out2")]) == 0
    assert singles == [str(project)]


def test_tasks_build_takes_the_language_of_debian_package_names(monkeypatch, tmp_path, capsys):
    """`code-gym tasks build golang-...-dev` goes to the Go builder and `librust-...-dev` to Rust's
    without --language; names of two languages in one build are refused before anything is built."""
    from code_gym import languages
    seen = []
    for name in ("go", "rust"):
        monkeypatch.setattr(languages.get(name).builder, "build_many",
                            lambda sources, *a, name=name, **k: seen.append((name, sources)) or _empty_batch())
    assert main(["tasks", "build", "golang-github-google-shlex-dev", "--out", str(tmp_path / "g")]) == 1
    assert main(["tasks", "build", "librust-semver-dev", "--out", str(tmp_path / "r")]) == 1
    assert seen == [("go", ["golang-github-google-shlex-dev"]), ("rust", ["librust-semver-dev"])]
    assert main(["tasks", "build", "librust-semver-dev", "golang-github-google-shlex-dev",
                 "--out", str(tmp_path / "x")]) == 2
    assert "one language at a time" in capsys.readouterr().err
    assert len(seen) == 2


def _empty_batch():
    class Batch:
        tasks = ()

        def summary(self):
            return "nothing built"
    return Batch()
