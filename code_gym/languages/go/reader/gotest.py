"""The grader's Go reader: runs `go test -json` inside the sandbox and writes one record per
top-level test on the results channel (`code_gym.grading.records`). Laid read-only in the run's
reporter folder and started as `python3 -I gotest.py SPEC` (stdlib only), SPEC a JSON object:

    {"command": ["go", "test", "-count=1"], "packages": ["", "cmp/cmpopts"] | null, "warm": ""}

`command` is the task's test_command split into words; `packages` the package folders to test,
relative to the repository root ("" the root itself; null: every package, `./...`). The variables
the language's runtime sets say where the task lives: CODE_GYM_GO_PACKAGE (the repository's import
path), CODE_GYM_GO_DEPENDENCIES (the GOPATH of its Debian dependencies, "" for none) and
CODE_GYM_GO_CACHE (the task's build cache, bound read-only; "" for none).

Go builds in GOPATH mode, as Debian builds it: /tmp/code-gym-gopath/src/<import path> is made a
link to the repository and `go test` runs from there (PWD says so), with GOPATH
"/tmp/code-gym-gopath:<dependencies>". The build cache is copied to a fresh folder under /tmp for
the run (GOCACHE), so only what the patch changed compiles again. `warm` (a writable folder) runs
the cache's own warm-up instead: `go test <options> -run '^$' -exec /bin/true ./...` with that
folder as GOCACHE (everything compiles and is vetted, no test binary runs), and no records.

Records ("DIR/FILE_test.go::NAME", DIR the package folder, FILE the test file that declares NAME),
written once go has exited:
- one report per top-level Test, Example and Fuzz function of the package's test files that ran
  ("passed", "failed" or "skipped"); a subtest folds into its top-level test (a failed subtest
  fails it, and the message names the subtest). go 1.19's test2json reads the test binary's text,
  so a test that prints test output of its own (a test of a test framework) or code that prints
  forged result lines is read as more events: names no test file declares are left out, a test
  reported both passed and failed is failed, and in a package that passed (its binary exited 0,
  which go says last) every test that ran passed;
- in a package whose test binary failed: a test that started and never ended (a panic, an exit)
  and every test of its files that never started are failed, and when no test of the package
  failed, so are its passes (the binary failed outside them, or output hid a test's result). The
  passes that are left (a canary's aside) run again on their own (`-run '^(A|B)$'`) and stand only
  when that binary exits 0: a test's output cannot forge an exit status (go's own result line,
  printed last, says it), and it can forge a "--- PASS" line. When go failed but no package did,
  every pass is failed;
- one "collect" record per _test.go file of a package that does not build (compile, vet or
  import errors), with the compiler's message; the full message goes to stdout.
The run exits 0 when everything passed, 1 when something failed or did not build, 3 when go could
not start or failed before testing any package; the end record carries the same status. What the
agent reads on stdout is go's own report: build errors, failing tests' output, one line a package.

`python3 -I gotest.py --go ARGS` is the task's `go` instead (`wrap`: the wrapper first on every
command's PATH runs it, environments.GO_WRAPPER): the same link, variables and cache copy for the
agent's own `go test ./...`, `go build`, `go vet`, run from the link's folder that mirrors the
caller's.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.isfile(os.path.join(HERE, "channel.py")):  # in the sandbox: laid beside this file
    sys.path.insert(0, HERE)
    from channel import Channel  # noqa: E402
else:  # imported from the package (its tests)
    from code_gym.grading.channel import Channel  # noqa: E402

MESSAGE = 500
LINK_ROOT = "/tmp/code-gym-gopath"
_FUNC = re.compile(r"^func\s+((?:Test|Example|Fuzz)\w*)\s*\(", re.M)
_PACKAGE_FAILED = re.compile(r"^FAIL\s+(\S+) \[(build failed|setup failed)\]\s*$")
_FRAMING = re.compile(r"^\s*=== (RUN|PAUSE|CONT|NAME)\s")
_CLAUSE = re.compile(r"^\s*package\s+([A-Za-z_]\w*)", re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LOAD_ERROR = re.compile(r"^\S+\.go:\d+:\d+: |cannot find package|import cycle not allowed|found packages|"
                         r"no Go files|build constraints exclude", re.M)
CANARY = "_code_gym_canary_"  # a planted canary (canary.py): go ignores it, the reader writes its real file


# -- the package folders and their tests

def test_functions(folder: str) -> dict[str, str]:
    """Top-level test function name -> the _test.go file (its name) that declares it, in `folder`."""
    found: dict[str, str] = {}
    for name in test_files(folder):
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        for match in _FUNC.finditer(text):
            if _is_test_name(match.group(1)):
                found.setdefault(match.group(1), name)
    return found


def _is_test_name(name: str) -> bool:
    """go test's rule: Test, Example or Fuzz, then nothing or a character that is not lower case."""
    for prefix in ("Test", "Example", "Fuzz"):
        if name.startswith(prefix):
            rest = name[len(prefix):]
            return not rest or not rest[0].islower() or prefix == "Example"
    return False


def test_files(folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder or ".") if n.endswith("_test.go") and not n.startswith((".", "_"))
                      and os.path.isfile(os.path.join(folder, n)))
    except OSError:
        return []


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def has_go_files(folder: str) -> bool:
    try:
        return any(n.endswith(".go") and not n.startswith((".", "_")) for n in os.listdir(folder or "."))
    except OSError:
        return False


# -- canaries

class Canary:
    """A planted canary file and the real one the reader wrote beside it for this run."""

    def __init__(self, planted: str, written: str) -> None:
        self.planted = planted
        self.written = written
        self.key = _stat_key(written)

    def intact(self) -> bool:
        return _stat_key(self.written) == self.key


def _stat_key(path: str) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def package_clause(folder: str) -> str | None:
    """The package of `folder`'s test files (else of its Go files), by the first file's clause."""
    names = [n for n in test_files(folder) if not n.startswith("code_gym_canary_")]
    try:
        names += sorted(n for n in os.listdir(folder or ".") if n.endswith(".go") and not n.endswith("_test.go")
                        and not n.startswith((".", "_")))
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                match = _CLAUSE.search(_COMMENTS.sub("", handle.read()))
        except OSError:
            continue
        if match:
            return match.group(1)
    return None


def package_folders(packages: list[str] | None) -> list[str]:
    """`packages`, or (None) every folder `./...` takes: not testdata, vendor, nor one whose name
    starts with "." or "_"."""
    if packages is not None:
        return packages
    folders = []
    for folder, dirs, _ in os.walk("."):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")) and d not in ("testdata", "vendor"))
        relative = os.path.relpath(folder, ".")
        folders.append("" if relative == "." else relative.replace(os.sep, "/"))
    return folders


def test_folders(packages: list[str] | None) -> list[str]:
    return [f for f in package_folders(packages) if test_files(f)]


def planted_canaries(packages: list[str] | None) -> list[str]:
    """The planted canary files in the package folders (None: anywhere in the repository)."""
    found = []
    for folder in package_folders(packages):
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        found += [_joined(folder, n) for n in names if n.startswith(CANARY) and n.endswith("_test.go")]
    return found


def lay_canaries(packages: list[str] | None) -> list[Canary]:
    """Write each planted canary's real file, with its folder's package clause."""
    laid = []
    for planted in planted_canaries(packages):
        folder, name = os.path.split(planted)
        package = package_clause(folder)
        written = os.path.join(folder, name[1:])
        if package is None or os.path.lexists(written):
            continue
        with open(planted, encoding="utf-8") as handle:
            source = handle.read()
        with open(written, "x", encoding="utf-8") as handle:
            handle.write(re.sub(r"^package _\b", f"package {package}", source, count=1))
        laid.append(Canary(planted, written))
    return laid


# -- reading go test -json

class Test:
    """One top-level test: the outcomes its events gave (its own and its subtests'), its output."""

    def __init__(self) -> None:
        self.ended: set[str] = set()  # "pass", "fail", "skip" of the test itself
        self.failed_subtests: list[str] = []
        self.output: list[str] = []

    @property
    def failed(self) -> bool:
        return "fail" in self.ended or bool(self.failed_subtests)


class Package:
    """The events of one package's test run."""

    def __init__(self, import_path: str, folder: str) -> None:
        self.import_path = import_path
        self.folder = folder
        self.tests: dict[str, Test] = {}
        self.output: list[str] = []  # package-level output (not inside a test)
        self.result = ""  # "pass", "fail", "skip" (no test files), "build failed", "setup failed"

    def event(self, event: dict) -> None:
        action, name = event.get("Action"), event.get("Test")
        if not name:
            if action == "output":
                self.output.append(event.get("Output", ""))
            elif action in ("pass", "fail", "skip"):
                self.result = action
            return
        top, _, sub = name.partition("/")
        test = self.tests.setdefault(top, Test())
        if action == "output":
            test.output.append(event.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            if sub:
                if action == "fail":
                    test.failed_subtests.append(name)
            else:
                test.ended.add(action)


def _message(lines: list[str]) -> str:
    text = "".join(line for line in lines if not _FRAMING.match(line)).strip()
    return text[:MESSAGE]


def test_record(test_id: str, test: Test, result: str, package_output: list[str]) -> dict | None:
    """The record of one top-level test of a package whose run ended with `result` ("pass",
    "fail", or "" when go stopped before the package's end); None when there is nothing to say."""
    if result == "pass":
        if not test.ended:
            return None
        skipped = "skip" in test.ended and "pass" not in test.ended
        return {"id": test_id, "outcome": "skipped" if skipped else "passed"}
    if test.failed:
        why = _message(test.output)
        if test.failed_subtests:
            why = f"subtest {test.failed_subtests[0]} failed: {why}"
        return {"id": test_id, "outcome": "failed", "message": why[:MESSAGE] or "failed"}
    if not test.ended:
        return {"id": test_id, "outcome": "failed", "message": (
            "the test did not finish: the test binary panicked or exited during it: "
            + _message(test.output + package_output))[:MESSAGE]}
    return {"id": test_id, "outcome": "passed" if "pass" in test.ended else "skipped"}


DID_NOT_RUN = "the test did not run: the test binary ended before it"


def package_records(package: Package, compile_errors: str,
                    canaries: list[Canary] = ()) -> tuple[list[dict], list[dict], list[Canary]]:
    """(report records, collect records, canaries to run on their own) of one finished package.

    A canary's records go under its planted file, none when its real file changed during the run
    (the grader then finds its canaries missing). A canary whose package did not build, or whose
    test binary died before the canary's tests ended, is run again on its own (`canary_alone`): a
    patch that breaks the package fails its tests, and the run stays gradable."""
    folder = package.folder
    mine = [c for c in canaries if os.path.dirname(c.written) == folder]
    renamed = {os.path.basename(c.written): os.path.basename(c.planted) for c in mine}
    declared = {name: _joined(folder, renamed.get(file, file)) for name, file in test_functions(folder).items()}
    planted = {c.planted: c for c in mine}
    if package.result in ("build failed", "setup failed"):
        message = (compile_errors or f"the package does not build ({package.result})")[:MESSAGE]
        collects = [{"id": _joined(folder, renamed.get(name, name)), "outcome": "failed", "message": message}
                    for name in test_files(folder) if _joined(folder, renamed.get(name, name)) not in planted]
        return [], collects, [c for c in mine if c.intact()]
    result = "" if package.result == "fail" else package.result
    records = []
    for name, test in package.tests.items():
        if name in declared:
            record = test_record(f"{declared[name]}::{name}", test, result or "fail", package.output)
            if record is not None:
                records.append(record)
    if result != "pass":
        records += [{"id": f"{file}::{name}", "outcome": "failed", "message": DID_NOT_RUN}
                    for name, file in declared.items() if name not in package.tests and not name.startswith("Example")]
        if not any(r["outcome"] == "failed" for r in records):
            records = _failed_passes(records, "the test binary failed outside its tests (an exit or panic after them, "
                                              "or output that hid a test's result): " + _message(package.output))
    own, alone = [], []
    for record in records:
        if record["id"].split("::", 1)[0] not in planted:
            own.append(record)
    for canary in mine:
        theirs = [r for r in records if r["id"].split("::", 1)[0] == canary.planted]
        if not canary.intact():
            continue
        if any(r.get("message", "").startswith(("the test did not run", "the test did not finish")) for r in theirs):
            alone.append(canary)
        else:
            own += theirs
    return own, [], alone


def _failed_passes(records: list[dict], why: str) -> list[dict]:
    return [{"id": r["id"], "outcome": "failed", "message": why[:MESSAGE]} if r["outcome"] == "passed" else r
            for r in records]


def canary_alone(canary: Canary, command: list[str], env: dict[str, str]) -> list[dict]:
    """Run a canary's real file as a package of its own (a fresh folder under the GOPATH link root)
    and return its records, filed under its planted path."""
    folder = tempfile.mkdtemp(prefix="code_gym_canary_", dir=os.path.join(LINK_ROOT, "src"))
    try:
        with open(canary.planted, encoding="utf-8") as handle:
            source = re.sub(r"^package _\b", "package canary", handle.read(), count=1)
        with open(os.path.join(folder, os.path.basename(canary.written)), "w", encoding="utf-8") as handle:
            handle.write(source)
        done = subprocess.run([command[0], command[1], "-json", *command[2:], "."], cwd=folder,
                              env=env | {"PWD": folder}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    package = Package("", "")
    for line in done.stdout.splitlines(keepends=True):
        event = _event(line)
        if event is not None:
            package.event(event)
    records = [test_record(f"{canary.planted}::{name}", test, package.result, package.output)
               for name, test in package.tests.items()]
    return [r for r in records if r is not None]


def compile_blocks(stderr: str) -> list[tuple[str, str]]:
    """(header, text) of each `# pkg` block go printed on stderr (compile, vet and import errors)."""
    blocks: list[tuple[str, str]] = []
    for line in stderr.splitlines(keepends=True):
        if line.startswith("# "):
            blocks.append((line[2:].strip(), line))
        elif blocks:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + line)
    return blocks


def errors_of(import_path: str, blocks: list[tuple[str, str]], stderr: str) -> str:
    """The compiler's message for a package that did not build: its own blocks (the package, its
    test variant, its external test package), else every block (a dependency broke)."""
    own = [text for header, text in blocks
           if header.split()[0] in (import_path, import_path + "_test") or f"[{import_path}.test]" in header]
    return "".join(own or [text for _, text in blocks]) or stderr


# -- the run

def folder_of(import_path: str, root: str) -> str | None:
    if import_path == root:
        return ""
    if import_path.startswith(root + "/"):
        return import_path[len(root) + 1:]
    return None


def go_environment(cache: str, dependencies: str) -> dict[str, str]:
    return os.environ | {"GO111MODULE": "off", "GOPATH": gopath(dependencies), "GOFLAGS": "", "GOPROXY": "off",
                         "GOENV": "off", "GOCACHE": cache}


def gopath(dependencies: str) -> str:
    return LINK_ROOT + (f":{dependencies}" if dependencies else "")


def link(root: str, import_path: str) -> str | None:
    """Make LINK_ROOT/src/<import path> a link to the repository folder `root` (kept when it is one
    already, replaced when it links elsewhere); the link's path, or None when something that is not a
    link is there."""
    target = os.path.join(LINK_ROOT, "src", import_path)
    if os.path.islink(target):
        if os.path.realpath(target) == os.path.realpath(root):
            return target
        os.unlink(target)
    elif os.path.lexists(target):
        return None
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        os.symlink(root, target)
    except FileExistsError:  # a go started beside this one made it
        return target if os.path.realpath(target) == os.path.realpath(root) else None
    return target


def link_repository(import_path: str) -> str:
    """Make LINK_ROOT/src/<import path> a link to the working folder (the repository); return it.
    What an earlier command left under LINK_ROOT is removed first: nothing may shadow a dependency."""
    if os.path.islink(LINK_ROOT) or os.path.isfile(LINK_ROOT):
        os.unlink(LINK_ROOT)
    elif os.path.isdir(LINK_ROOT):
        shutil.rmtree(LINK_ROOT)
    return link(os.getcwd(), import_path)


def seed(folder: str, cache: str) -> str:
    """Copy the task's build cache `cache` into the empty folder `folder`; what went wrong ("" when
    nothing did). /tmp is the sandbox's own small file system: a cache that would take more than half
    its free space is not copied, and one that does not fit is dropped (go then compiles everything)."""
    if not cache or not os.path.isdir(cache):
        return ""
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(cache) for n in names)
    room = os.statvfs(folder)
    if size > room.f_bavail * room.f_frsize // 2:
        return f"code-gym: the build cache ({size >> 20} MiB) does not fit in /tmp: everything compiles"
    try:
        shutil.copytree(cache, folder, dirs_exist_ok=True, symlinks=True)
    except OSError as error:
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        return f"code-gym: the build cache could not be copied ({error}): everything compiles"
    return ""


def run_cache(cache: str) -> str:
    """A fresh writable copy of the task's build cache for a graded run (an empty folder without one)."""
    folder = tempfile.mkdtemp(prefix="gocache-")  # the sandbox's private /tmp: no reaper needed
    why = seed(folder, cache)
    if why:
        print(why)
    return folder


def _patterns(packages: list[str] | None) -> list[str]:
    if packages is None:
        return ["./..."]
    return ["./" + p if p else "." for p in packages]


def warm(command: list[str], import_path: str, dependencies: str, cache: str) -> int:
    here = link_repository(import_path)
    env = go_environment(cache, dependencies) | {"PWD": here}
    argv = [*command, "-run", "^$", "-exec", "/bin/true", "./..."]
    try:
        done = subprocess.run(argv, cwd=here, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as error:
        print(f"code-gym: go could not start: {error}")
        return 3
    print(done.stdout)
    return done.returncode


# -- the `go` of a task's commands

WORKDIR = "/repo"  # where the sandboxes (bubblewrap, Docker) show the repository
SHARED_CACHE = "/tmp/code-gym-gocache"  # the GOCACHE of a command's go calls (each command has a fresh /tmp)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _real_go(tools: str) -> str:
    """The first go on PATH outside the wrapper's folder `tools` (Debian's /usr/bin/go in a sandbox)."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(folder or ".", "go")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and \
                os.path.realpath(os.path.dirname(candidate)) != tools:
            return candidate
    return "/usr/bin/go"


def _logical_cwd() -> str:
    here = os.getcwd()
    pwd = os.environ.get("PWD", "")
    try:
        if os.path.isabs(pwd) and os.path.samefile(pwd, here):
            return os.path.normpath(pwd)
    except OSError:
        pass
    return here


def repository_root(here: str) -> str | None:
    """The repository holding the folder `here` (a physical path): the sandbox's /repo, else the
    nearest folder up with a .git (the workspace's base commit); None outside both."""
    if _under(here, WORKDIR):
        return WORKDIR
    folder = here
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def shared_cache(cache: str) -> str:
    """SHARED_CACHE, seeded from the task's build cache by the command's first go call."""
    if os.path.isdir(SHARED_CACHE):
        return SHARED_CACHE
    scratch = tempfile.mkdtemp(prefix="gocache-", dir=os.path.dirname(SHARED_CACHE))
    why = seed(scratch, cache)
    if why:
        print(why, file=sys.stderr)
    try:
        os.rename(scratch, SHARED_CACHE)
    except OSError:  # a go started beside this one seeded it first
        shutil.rmtree(scratch, ignore_errors=True)
    return SHARED_CACHE


def wrap(tools: str, args: list[str]) -> int:
    """`go ARGS` as a Go developer types it in the task's repository (the wrapper first on the
    runtime's PATH runs `python3 -I gotest.py --go ARGS`): GOPATH mode with the repository linked
    at LINK_ROOT/src/<import path> (made when missing), nothing fetched, a GOCACHE of the command
    seeded from the task's build cache, and go run from the link's folder that mirrors the caller's
    folder in the repository, so `./...` and relative paths mean what they say and the repository's
    own import path resolves. A caller outside the repository (or already under LINK_ROOT, as the
    reader's runs are) keeps its folder. A variable the caller set (GOCACHE, GOPATH, GO111MODULE...)
    is kept. Not a Go task (no CODE_GYM_GO_PACKAGE): go as it is."""
    go = _real_go(os.path.realpath(tools))
    env = dict(os.environ)
    import_path = env.get("CODE_GYM_GO_PACKAGE", "")
    if import_path:
        defaults = {"GO111MODULE": "off", "GOPATH": gopath(env.get("CODE_GYM_GO_DEPENDENCIES", "")), "GOFLAGS": "",
                    "GOPROXY": "off", "GOENV": "off"}
        env = defaults | env
        if not env.get("GOCACHE"):
            env["GOCACHE"] = shared_cache(env.get("CODE_GYM_GO_CACHE", ""))
        here = os.getcwd()
        root = None if _under(_logical_cwd(), LINK_ROOT) else repository_root(here)
        linked = link(root, import_path) if root is not None else None
        if linked is not None:
            inside = os.path.relpath(here, root)
            folder = linked if inside == "." else os.path.join(linked, inside)
            os.chdir(folder)
            env["PWD"] = folder
    try:
        os.execve(go, ["go", *args], env)
    except OSError as error:
        print(f"code-gym: go could not start ({go}): {error}", file=sys.stderr)
        return 127


def _drain(stream, into: list[str]) -> None:
    for line in stream:
        into.append(line)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    command = list(spec["command"])
    import_path = os.environ.get("CODE_GYM_GO_PACKAGE", "")
    dependencies = os.environ.get("CODE_GYM_GO_DEPENDENCIES", "")
    if spec.get("warm"):
        return warm(command, import_path, dependencies, spec["warm"])
    channel = Channel()
    if not import_path:
        print("code-gym: CODE_GYM_GO_PACKAGE is not set: the task names no import path", file=sys.stderr)
        channel.write("end", exitstatus=3)
        return 3
    packages = spec.get("packages")
    if packages is not None:
        missing = [p for p in packages if not has_go_files(p)]
        for folder in missing:
            print(f"code-gym: {folder or '.'} holds no Go files: not tested")
        packages = [p for p in packages if p not in missing]
    here = link_repository(import_path)
    cache = run_cache(os.environ.get("CODE_GYM_GO_CACHE", ""))
    env = go_environment(cache, dependencies) | {"PWD": here}
    canaries = lay_canaries(packages)
    run = Run(import_path, canaries, command, env)
    try:
        try:
            proc = subprocess.Popen([command[0], command[1], "-json", *command[2:], *_patterns(packages)], cwd=here,
                                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, errors="replace", close_fds=True)
        except OSError as error:
            print(f"code-gym: go could not start: {error}", file=sys.stderr)
            channel.write("end", exitstatus=3)
            return 3
        errors: list[str] = []
        drain = threading.Thread(target=_drain, args=(proc.stderr, errors), daemon=True)
        drain.start()
        run.read(proc.stdout)
        code = proc.wait()
        drain.join()
        records, collects = run.records("".join(errors), code, test_folders(packages))
        for record in collects:
            channel.write("collect", **record)
        for record in records:
            channel.write("report", when="call", **record)
        status = 1 if collects or code != 0 or any(r["outcome"] == "failed" for r in records) else 0
        if not run.ended and code != 0:
            print(f"code-gym: go test exited {code} before testing any package", file=sys.stderr)
            status = 3
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        for canary in canaries:
            if os.path.lexists(canary.written):
                os.unlink(canary.written)
    channel.write("end", exitstatus=status)
    return status


class Run:
    """One `go test -json` run: its events and build-failure lines read as they come, each
    package's output printed when it ends, its records made once go has exited (packages that did
    not build have their compiler messages on stderr) and written then."""

    def __init__(self, root: str, canaries: list[Canary], command: list[str], env: dict[str, str]) -> None:
        self.root = root
        self.canaries = canaries
        self.command = command
        self.env = env
        self.running: dict[str, Package] = {}
        self.ended: list[Package] = []
        self.sources = source_keys()  # made before go starts: a second run needs the same sources

    def read(self, stdout) -> None:
        for line in stdout:
            event = _event(line)
            if event is None:
                failed = _PACKAGE_FAILED.match(line)
                folder = folder_of(failed.group(1), self.root) if failed else None
                if folder is None:
                    print(line, end="")
                    continue
                package = self.running.pop(failed.group(1), None) or Package(failed.group(1), folder)
                package.result = failed.group(2)
                self.ended.append(package)
                continue
            path = event.get("Package", "")
            folder = folder_of(path, self.root)
            if folder is None:
                continue
            package = self.running.setdefault(path, Package(path, folder))
            package.event(event)
            if not event.get("Test") and event.get("Action") in ("pass", "fail", "skip"):
                self.ended.append(self.running.pop(path))
                show(package)

    def records(self, stderr: str, code: int, folders: list[str]) -> tuple[list[dict], list[dict]]:
        """(report records, collect records) once go exited with `code` (`stderr`: all it wrote
        there). go stops before testing anything when a package does not load (an import that is
        nowhere, an import cycle, two package names in a folder): then every package of `folders`
        did not build, with go's message."""
        self.ended += self.running.values()  # go stopped before their end
        self.running = {}
        if not self.ended and code != 0 and _LOAD_ERROR.search(stderr):
            self.ended = [Package(f"{self.root}/{f}" if f else self.root, f) for f in folders]
            for package in self.ended:
                package.result = "setup failed"
        if stderr:
            print(stderr, end="" if stderr.endswith("\n") else "\n")
        blocks = compile_blocks(stderr)
        records: list[dict] = []
        collects: list[dict] = []
        for package in self.ended:
            unbuilt = package.result in ("build failed", "setup failed")
            if unbuilt:
                print(f"FAIL\t{package.import_path} [{package.result}]")
            errors = errors_of(package.import_path, blocks, stderr) if unbuilt else ""
            mine, theirs, alone = package_records(package, errors, self.canaries)
            if package.result in ("fail", ""):
                mine = self.confirmed(package, mine)
            for canary in alone:
                mine += canary_alone(canary, self.command, self.env)
            records += mine
            collects += theirs
        if code != 0 and all(p.result in ("pass", "skip") for p in self.ended):
            records = _failed_passes(records, f"go test exited {code} although every package reported passing "
                                              "(a test's output forged its package's result)")
        return records, collects


    def confirmed(self, package: Package, records: list[dict]) -> list[dict]:
        """`records` of a package whose test binary failed, with its passes run again on their own
        (`-run '^(A|B)$'`): they stand when that binary exits 0, the one result a test's output
        cannot forge (an exit(0) during a test panics); else they fail. A binary that fails for a
        test that fails (or a canary that must) is common; a pass printed by the code under test,
        or one whose result line was hidden, is not told apart from a real one any other way."""
        planted = {c.planted for c in self.canaries}
        passed = [r["id"].split("::", 1)[1] for r in records
                  if r["outcome"] == "passed" and r["id"].split("::", 1)[0] not in planted]
        if not passed:
            return records
        if source_keys() != self.sources:
            return [r if r["id"].split("::", 1)[0] in planted else _failed_passes([r], (
                "passed in a test binary that failed, and cannot run again: the run changed Go source files"))[0]
                for r in records]
        pattern = "^(" + "|".join(re.escape(name) for name in passed) + ")$"
        target = "./" + package.folder if package.folder else "."
        done = subprocess.run([self.command[0], self.command[1], "-json", *self.command[2:], "-run", pattern, target],
                              cwd=self.env["PWD"], env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace")
        again = Package(package.import_path, package.folder)
        for line in done.stdout.splitlines(keepends=True):
            event = _event(line)
            if event is not None and event.get("Package") == package.import_path:
                again.event(event)
        if done.returncode == 0 and again.result == "pass" and set(passed) <= set(again.tests):
            return records
        print(f"code-gym: {package.import_path}: the tests that passed in a failing test binary failed when run "
              "again on their own:")
        show(again)
        return [r if r["id"].split("::", 1)[0] in planted else _failed_passes([r], (
            "passed in a test binary that failed, and failed when run again with only the tests that passed "
            "(forged output, or a test that passes only after others)"))[0] for r in records]


def source_keys() -> dict[str, tuple | None]:
    """The stat key of every Go file under the working folder (the repository)."""
    keys = {}
    for folder, dirs, names in os.walk("."):
        dirs.sort()
        for name in names:
            if name.endswith(".go"):
                path = os.path.join(folder, name)
                keys[path] = _stat_key(path)
    return keys


def show(package: Package) -> None:
    """What go test prints for a package: failing tests' output (none when it passed), then the
    package's own lines."""
    if package.result != "pass":
        for test in package.tests.values():
            if test.failed or not test.ended:
                print("".join(line for line in test.output if not _FRAMING.match(line)), end="")
    print("".join(package.output), end="")


def _event(line: str) -> dict | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


if __name__ == "__main__":
    if sys.argv[1:2] == ["--go"]:  # the `go` wrapper (environments.GO_WRAPPER)
        sys.exit(wrap(os.path.dirname(sys.argv[0]), sys.argv[2:]))
    sys.exit(main(sys.argv))
