"""SWE-bench-family JSONL (SWE-bench, SWE-bench Verified/Lite, SWE-Gym, SWE-smith exports, ...) as tasks.

One record per line with `instance_id, repo, base_commit, patch, test_patch, problem_statement,
FAIL_TO_PASS, PASS_TO_PASS` (the last two as lists or JSON-encoded lists of pytest node ids), and
optionally a container image (`image_name`, `docker_image` or `image`), `environment_setup_commit`
(the commit whose metadata defines the environment, as in SWE-bench; default `base_commit`),
`version`, and extra requirements (`requirements` or `pip_packages`: a list or a space-separated
string).

The repository comes from a local clone of `repo`, taken at `base_commit` with `git archive` (no
history, so the agent cannot `git log` its way to the fix). The files `test_patch` adds or changes
become the hidden tests: at grading they replace the versions the agent saw, as the SWE-bench
harness applies test_patch before running the tests.

Each instance gets an environment built from the repository's own metadata (code_gym.languages.python.environments):
the grader and the agent's commands run with it, inside the sandbox."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from code_gym import languages
from code_gym.util.hostfs import cache_root, make_dirs_beneath, open_beneath, owned_prefix, write_beneath
from code_gym.tasks.loaders.folder import task_id, write_task
from code_gym.tasks.task import MANIFEST, Task, TaskError, Timeouts, load_task

REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement",
            "FAIL_TO_PASS", "PASS_TO_PASS")
IMAGE_FIELDS = ("image_name", "docker_image", "image")
# a collection error in one test file (a test importing a name the fix adds) must not hide the
# results of every other file, so the default test command keeps collecting past it
LANGUAGE = "python"  # SWE-bench and its family are Python repositories graded by pytest
TEST_COMMAND = "python -m pytest --continue-on-collection-errors"
# GitHub's "owner/name": letters, digits, '-', '_', '.', exactly one '/' (and no '..', checked apart)
REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
FORMAT_VERSION = "1"  # bump when the folder layout below changes: cached folders are rebuilt


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str  # "owner/name"
    base_commit: str
    patch: str
    test_patch: str
    problem_statement: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    image: str | None = None
    environment_setup_commit: str | None = None
    version: str | None = None
    requirements: tuple[str, ...] = ()


def _extra_requirements(record: dict, where: str) -> tuple[str, ...]:
    value = record.get("requirements", record.get("pip_packages", []))
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f"{where}: field 'requirements' / 'pip_packages' must be a list of requirement strings")
    return tuple(value)


def _node_ids(value, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise TaskError(f"{where}: field '{key}' must be a list of test ids or a JSON-encoded list") from None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TaskError(f"{where}: field '{key}' must be a list of pytest node ids")
    return tuple(value)


def parse_instance(record: dict, where: str) -> Instance:
    """One JSONL record; `where` ("data.jsonl:3") prefixes every error."""
    for key in REQUIRED:
        if key not in record:
            raise TaskError(f"{where}: missing field '{key}'")
    for key in REQUIRED[:6]:
        if not isinstance(record[key], str):
            raise TaskError(f"{where}: field '{key}' must be a string")
    if not REPO_NAME.fullmatch(record["repo"]) or ".." in record["repo"]:
        raise TaskError(f"{where}: field 'repo' must be a GitHub 'owner/name' (letters, digits, '-', '_', "
                        f"'.', no '..'), not {record['repo']!r}")
    fail_to_pass = _node_ids(record["FAIL_TO_PASS"], where, "FAIL_TO_PASS")
    if not fail_to_pass:
        raise TaskError(f"{where}: field 'FAIL_TO_PASS' is empty: the task would ask for nothing")
    image = next((record[k] for k in IMAGE_FIELDS if isinstance(record.get(k), str) and record[k]), None)
    setup_commit = record.get("environment_setup_commit")
    version = record.get("version")
    return Instance(record["instance_id"], record["repo"], record["base_commit"], record["patch"],
                    record["test_patch"], record["problem_statement"], fail_to_pass,
                    _node_ids(record["PASS_TO_PASS"], where, "PASS_TO_PASS"), image,
                    setup_commit if isinstance(setup_commit, str) and setup_commit else None,
                    str(version) if version is not None else None, _extra_requirements(record, where))


def read_instances(path: Path) -> list[Instance]:
    instances = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{path}:{n}: not a JSON object: {exc}") from None
        if not isinstance(record, dict):
            raise TaskError(f"{path}:{n}: not a JSON object")
        instances.append(parse_instance(record, f"{path}:{n}"))
    if not instances:
        raise TaskError(f"{path}: no records")
    return instances


def find_clone(repo: str, repos_dir: Path) -> Path:
    """The local clone of "owner/name" under `repos_dir`: `owner__name` (SWE-bench's naming),
    `owner/name` or `name`."""
    owner, _, name = repo.partition("/")
    candidates = [repos_dir / f"{owner}__{name}", repos_dir / owner / name, repos_dir / (name or owner)]
    for candidate in candidates:
        if (candidate / ".git").exists():
            return candidate
    raise TaskError(f"no local clone of {repo!r} under {repos_dir}: clone it there as "
                    f"{candidates[0].name} (git clone https://github.com/{repo} {candidates[0]}), "
                    "or point CODE_GYM_REPOS at the folder that holds your clones")


def export_commit(clone: Path, commit: str, target: Path) -> None:
    """The tree of `commit` in `clone`, without history, into `target`."""
    proc = subprocess.Popen(["git", "-C", str(clone), "archive", "--format=tar", commit],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            archive.extractall(target, filter="data")
    except tarfile.ReadError:
        pass  # git reports the reason on stderr below
    finally:
        proc.stdout.close()
        error = proc.stderr.read().decode(errors="replace").strip()
        proc.wait()
    if proc.returncode != 0:
        raise TaskError(f"{clone}: cannot export commit {commit}: {error} "
                        f"(fetch it first: git -C {clone} fetch origin {commit})")


def _patched_files(patch: str, where: str) -> PatchSet:
    try:
        return PatchSet(patch)
    except UnidiffParseError as exc:
        raise TaskError(f"{where}: not a unified diff: {exc}") from None


def _unsafe(path: str) -> bool:
    """Whether `path` is no plain relative path inside a repository: empty, absolute, or with an
    empty, '.' or '..' component."""
    return not path or path.startswith("/") or any(part in ("", ".", "..") for part in path.split("/"))


def check_paths(patch: str, where: str) -> PatchSet:
    """The files of `patch`, refused (TaskError naming the path) if any old or new path of it is
    not a plain relative path: the loader reads and writes files by these paths."""
    files = _patched_files(patch, where)
    for f in files:
        for name in (f.source_file, f.target_file):
            if name in (None, "/dev/null"):
                continue
            rel = name[2:] if name.startswith(("a/", "b/")) else name  # as PatchedFile.path strips
            if _unsafe(rel):
                raise TaskError(f"{where}: path {name!r} is not a plain relative path inside the "
                                "repository (absolute, empty, or with a '.' or '..' component)")
        if _unsafe(f.path):
            raise TaskError(f"{where}: path {f.path!r} is not a plain relative path inside the repository")
    return files


def _kind(root: Path, rel: str) -> str:
    """"file" if `rel` (a plain relative path) is a regular file under `root` reached through real
    folders only, "missing" if a component is missing, else "other" (a component is a symbolic
    link, or the end is no regular file). Each component is looked at with lstat: no link followed."""
    here = root
    for part in rel.split("/"):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return "missing"
        except OSError:
            return "other"
        if stat.S_ISLNK(st.st_mode):
            return "other"
    return "file" if stat.S_ISREG(st.st_mode) else "other"


def _read_no_links(root: Path, rel: str, where: str) -> bytes:
    """The regular file `rel` under `root`, read without following any link (openat2 beneath
    `root`, O_NOFOLLOW on the file itself): a link is refused, never followed."""
    if _kind(root, rel) != "file":
        raise TaskError(f"{where}: {rel!r} is a symbolic link or lies behind one (or is no regular "
                        "file): a patched file must be a regular file")
    try:
        fd = open_beneath(root, rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise TaskError(f"{where}: cannot read {rel!r}: {exc}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TaskError(f"{where}: {rel!r} is no regular file")
        os.set_blocking(fd, True)
        return fh.read()


def patched_contents(repo: Path, patch: str, where: str) -> dict[str, bytes]:
    """New content of every file `patch` adds or modifies (deletions are left out), found by
    applying it with `git apply` to a scratch copy of just those files.

    Every path of the patch must be a plain relative path (checked before anything is copied); a
    file is copied only if it is a regular file of `repo` reached through no symbolic link (git
    itself refuses to patch beyond a link; a link modified in place would stay a link), read and
    written beneath `repo` and the scratch folder, never following a link. A patched file that
    ends up a link (a test_patch adding a mode-120000 "test") is refused: a hidden test that is
    a link has no use but reading the host's files."""
    files = [f for f in check_paths(patch, where) if not f.is_removed_file]
    if not files:
        raise TaskError(f"{where}: changes no file (the hidden tests come from it)")
    scratch = Path(tempfile.mkdtemp(prefix=owned_prefix("testpatch")))
    try:
        copied = set()
        for f in files:
            if f.is_added_file or f.path in copied:
                continue
            kind = _kind(repo, f.path)
            if kind == "missing":
                continue  # `git apply` says so below
            if kind != "file":
                raise TaskError(f"{where}: {f.path!r} is a symbolic link or lies behind one (or is no "
                                "regular file) at base_commit: the patch may change regular files only")
            data = _read_no_links(repo, f.path, where)
            try:
                make_dirs_beneath(scratch, posix_parent(f.path))
                write_beneath(scratch, f.path, data, exclusive=True)
            except OSError as exc:
                raise TaskError(f"{where}: cannot copy {f.path!r}: {exc}") from None
            copied.add(f.path)
        patch_file = scratch.parent / f"{scratch.name}.patch"
        patch_file.write_text(patch)
        result = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch_file)], cwd=scratch,
                                capture_output=True, text=True)
        patch_file.unlink()
        if result.returncode != 0:
            raise TaskError(f"{where}: does not apply at base_commit: {result.stderr.strip()}")
        return {f.path: _read_no_links(scratch, f.path, where) for f in files}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _protected(test_files: list[str], patch: str, where: str) -> list[str]:
    """The folders holding the hidden tests (the agent's edits there are not graded), except a
    folder the reference itself edits."""
    edited = [f.path for f in _patched_files(patch, where)]
    folders = {posix_parent(t) for t in test_files} - {""}
    return sorted(d for d in folders if not any(p.startswith(d) for p in edited)) or sorted(test_files)


def posix_parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    return parent + "/" if parent else ""


def instance_environment(instance: Instance, clone: Path, exported: Path, python: str | None,
                         installer: str, sdists: bool = False) -> dict:
    """The task.toml [environment] table of `instance` (empty when its repository declares nothing):
    requirements from the repository at `environment_setup_commit` (else the exported base commit)
    plus the instance's own."""
    where = f"instance {instance.instance_id}"
    environments = languages.get(LANGUAGE).environments
    setup = instance.environment_setup_commit
    folder = exported if setup in (None, instance.base_commit) else Path(tempfile.mkdtemp(prefix=owned_prefix("envsetup")))
    try:
        if folder != exported:
            export_commit(clone, setup, folder)
        _, environment = environments.project_environment(folder, python, installer, instance.requirements, sdists)
    except environments.EnvironmentBuildError as exc:
        raise environments.EnvironmentBuildError(f"{where}: {exc}", exc.requirement, exc.error) from None
    finally:
        if folder != exported:
            shutil.rmtree(folder, ignore_errors=True)
    return {"environment": environment.spec.as_manifest()} if environment is not None else {}


def materialize(instance: Instance, clone: Path, dest: Path, test_command: str = TEST_COMMAND,
                timeouts: Timeouts = Timeouts(command=60.0, tests=600.0), environments: bool = True,
                python: str | None = None, installer: str = "uv", sdists: bool = False) -> Task:
    """Write the task folder of `instance` at `dest` (its name is the task id), with the
    environment its repository declares unless `environments` is False."""
    where = f"instance {instance.instance_id}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    exported = Path(tempfile.mkdtemp(prefix=".export-", dir=dest.parent))  # same file system: moved, not copied

    def move_into(repo: Path) -> None:
        repo.rmdir()
        os.replace(exported, repo)

    try:
        check_paths(instance.patch, f"{where}: patch")
        export_commit(clone, instance.base_commit, exported)
        hidden = patched_contents(exported, instance.test_patch, f"{where}: test_patch")
        tests = {t.split("::")[0] for t in instance.pass_to_pass + instance.fail_to_pass}
        visible = sorted(t for t in tests - set(hidden) if not _unsafe(t) and _kind(exported, t) == "file")
        manifest = {
            "id": dest.name,
            "kind": "bugfix",
            "statement": instance.problem_statement.strip() or f"Resolve {instance.instance_id}.",
            "visible_tests": visible,
            "hidden_tests": sorted(hidden),
            "protected_paths": _protected(sorted(hidden), instance.patch, f"{where}: patch"),
            "test_command": test_command,
            "fail_to_pass": list(instance.fail_to_pass),
            "pass_to_pass": list(instance.pass_to_pass),
            "timeouts": {"command": timeouts.command, "tests": timeouts.tests},
            "source": {"dataset": "swebench", "instance_id": instance.instance_id, "repo": instance.repo,
                       "base_commit": instance.base_commit,
                       **({"version": instance.version} if instance.version else {}),
                       **({"environment_setup_commit": instance.environment_setup_commit}
                          if instance.environment_setup_commit else {})},
            **(instance_environment(instance, clone, exported, python, installer, sdists) if environments else {}),
        }
        if instance.image:
            manifest["image"] = instance.image
        return write_task(dest, manifest, move_into, hidden, instance.patch)
    finally:
        shutil.rmtree(exported, ignore_errors=True)


def load_swebench(path: str | Path, repos_dir: str | Path | None = None, cache_dir: str | Path | None = None,
                  test_command: str = TEST_COMMAND,
                  timeouts: Timeouts = Timeouts(command=60.0, tests=600.0), environments: bool = True,
                  python: str | None = None, installer: str = "uv", sdists: bool = False) -> list[Task]:
    """Tasks from a SWE-bench-family JSONL file.

    Args:
        path: the JSONL file.
        repos_dir: the folder of local clones (see `find_clone`); default $CODE_GYM_REPOS, else the
            JSONL's folder.
        cache_dir: where task folders are written (default: the code-gym cache); a folder already
            written for the same file and options is reused.
        test_command: the command the grader runs the tests with (the repo's dependencies must be
            importable by it).
        timeouts: per agent command and per test run.
        environments: build each instance's environment from its repository's metadata (False:
            tests run with code-gym's own interpreter); `python` and `installer` as for
            code_gym.languages.python.environments.build_environment; `sdists`: build requirements that have no
            wheel, in a sandbox with the network (old pins often have none for a new Python).
    """
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such JSONL file")
    repos = Path(repos_dir or os.environ.get("CODE_GYM_REPOS") or path.parent)
    key = f"{FORMAT_VERSION}\n{test_command}\n{timeouts}\n{environments}\n{python}\n{sdists}\n".encode() + path.read_bytes()
    folder = Path(cache_dir or cache_root() / "swebench") / hashlib.sha256(key).hexdigest()[:12]
    instances = read_instances(path)
    ids = [task_id(i.instance_id) for i in instances]
    if len(set(ids)) != len(ids):
        raise TaskError(f"{path}: two instance ids map to the same task id: {sorted({i for i in ids if ids.count(i) > 1})}")
    tasks = []
    for instance in instances:
        dest = folder / task_id(instance.instance_id)
        if (dest / MANIFEST).is_file():
            tasks.append(load_task(dest))
        else:
            tasks.append(materialize(instance, find_clone(instance.repo, repos), dest, test_command, timeouts,
                                     environments, python, installer, sdists))
    return tasks
