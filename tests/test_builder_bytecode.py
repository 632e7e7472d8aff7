"""The builder's bytecode made once per project (code_gym.languages.python.builder.bytecode): a changed module is
never run from the original's pyc, a run's folder cannot hand the host a file through a pyc link,
and task folders hold no bytecode."""
import importlib.util
import os
import py_compile
import sys

from code_gym.languages.python.builder import BuildOptions, build_tasks
from code_gym.languages.python.builder.bytecode import CACHE, compile_sources, harvest
from code_gym.sandbox import Limits, make_sandbox
from test_builder import write_project


def _same_size_change(path):
    """Change the module without changing its size or mtime (a flipped comparison written within
    the same second as the original)."""
    before = path.stat()
    path.write_text(path.read_text().replace("x < 10", "x > 10"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def test_a_changed_module_runs_as_changed_not_from_the_originals_pyc(tmp_path):
    sandbox = make_sandbox("auto", tmp_path, Limits(timeout=30))
    module = tmp_path / "small.py"
    module.write_text("def f(x):\n    return x < 10\n")
    # the defence off: a timestamp pyc (what an import writes) of the original is taken for the change
    py_compile.compile(str(module), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    _same_size_change(module)
    run = sandbox.exec("python -c 'import small; print(small.f(3))'")
    assert run.output.strip() == "True"  # stale: the original's code ran
    # the builder's hash-checked pyc: the changed source's hash differs, so it is compiled afresh
    module.write_text("def f(x):\n    return x < 10\n")
    assert compile_sources(tmp_path, ["small.py"]) == 1
    _same_size_change(module)
    run = sandbox.exec("python -c 'import small; print(small.f(3))'")
    assert run.output.strip() == "False", run.output


def test_harvest_takes_only_matching_pytest_pycs_never_through_a_link(tmp_path):
    project, run = tmp_path / "project", tmp_path / "run"
    for root in (project, run):
        (root / "tests").mkdir(parents=True)
        (root / "tests" / "test_a.py").write_text("def test_a():\n    assert 1\n")
    os.utime(run / "tests" / "test_a.py", ns=(0, (project / "tests" / "test_a.py").stat().st_mtime_ns))
    tag = f"{sys.implementation.cache_tag}-pytest-9.0.0.pyc"
    cache = run / "tests" / CACHE
    cache.mkdir()
    info = (project / "tests" / "test_a.py").stat()
    header = b"\0" * 4 + b"\0" * 4 + int(info.st_mtime).to_bytes(4, "little") + info.st_size.to_bytes(4, "little")
    (cache / f"test_a.{tag}").write_bytes(header + b"code")
    secret = tmp_path / "host-secret"
    secret.write_text("not for the sandbox")
    os.symlink(secret, cache / f"test_b.{tag}")  # a run's link to a host file, named like a pyc
    (run / "tests" / "test_b.py").write_text("x")
    (project / "tests" / "test_b.py").write_text("x")
    (cache / f"test_c.{tag}").write_bytes(header + b"code")  # no such test file in the project
    stale = b"\0" * 8 + (int(info.st_mtime) + 5).to_bytes(4, "little") + info.st_size.to_bytes(4, "little")
    (run / "tests" / "test_d.py").write_text("y")
    (project / "tests" / "test_d.py").write_text("y")
    (cache / f"test_d.{tag}").write_bytes(stale + b"code")  # pytest would not take it either
    # pytest 9.2's form: flags 3 and the source's hash
    (run / "tests" / "test_e.py").write_text("def test_e():\n    assert 2\n")
    (project / "tests" / "test_e.py").write_text("def test_e():\n    assert 2\n")
    hashed = b"\0" * 4 + b"\3\0\0\0" + importlib.util.source_hash((project / "tests" / "test_e.py").read_bytes())[:8]
    (cache / f"test_e.{tag}").write_bytes(hashed + b"code")
    (run / "tests" / "test_f.py").write_text("def test_f():\n    assert 3\n")
    (project / "tests" / "test_f.py").write_text("def test_f():\n    assert 4\n")  # not the run's source
    (cache / f"test_f.{tag}").write_bytes(b"\0" * 4 + b"\3\0\0\0" + importlib.util.source_hash(
        (run / "tests" / "test_f.py").read_bytes())[:8] + b"code")
    assert harvest(run, project) == 2
    assert sorted(p.name for p in (project / "tests" / CACHE).iterdir()) == [f"test_a.{tag}", f"test_e.{tag}"]


def test_task_folders_hold_no_bytecode_and_runs_get_it(tmp_path):
    project = write_project(tmp_path / "shop")
    report = build_tasks(project, tmp_path / "out", BuildOptions(mutations_per_function=1, progress=False,
                                                                 max_candidates=3, multi_ratio=0, workers=1))
    assert report.tasks
    # the shop's 7 modules compiled once, its 3 test modules rewritten once (in the baseline)
    assert report.manifest["bytecode"] == {"modules": len(list(project.rglob("*.py"))), "test_modules": 3}
    assert not [p for t in report.tasks for p in t.root.rglob(CACHE)]
    assert not list(project.rglob(CACHE))  # nor the source: the builder works on its own copy
