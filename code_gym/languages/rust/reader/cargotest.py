"""The grader's Rust reader: builds the crate's test targets with cargo and runs each test binary
inside the sandbox, streaming one record per test on the results channel
(`code_gym.grading.records`). Laid read-only in the run's reporter folder and started as
`python3 -I cargotest.py SPEC`, SPEC a JSON object:

    {"cargo": ["cargo", "test"], "options": [...], "libtest": [...], "files": [...],
     "names": {"tests/x.rs": ["name", ...]} | null, "results": "/results", "build_only": false}

1. The target directory: CARGO_TARGET_DIR starts as a copy of the task's target cache
   (CODE_GYM_RUST_CACHE, read-only), so only what the patch changed compiles again. Cargo judges
   freshness by modification times, so every repository file whose bytes are not the ones the
   cache was built from (its SOURCES account) and whose time is not later than the cache's units
   is dated after them first (a patch written before a cold cache was built is compiled, not the
   cache's original). The cargo wrapper on an agent's PATH does the same (`--prepare`).
2. `cargo metadata --no-deps` names the crate's targets; the selected files are target roots
   (none: every library, binary and integration-test target); the unit tests of the library and
   the binaries run in every run (they live in the sources: no task lists those as test files).
3. `cargo test --no-run --offline --message-format json` with those targets: compiler-artifact
   messages give each test executable, compiler-message errors the compile errors by target. A
   target that does not build gets one "collect" record (id: its root, message: the compiler's
   errors), the full text goes to stdout, and the others are built again without it (cargo stops
   at a first failing target). Errors under the library's root fail every target only when the
   library itself did not build; when it builds (cargo said so, or a round without the unit tests
   shows it) they were its unit tests' (the lib compiled with --test), which alone fail. An
   integration test that could not build only because the library did not, and that does not use
   the library, is compiled on its own with rustc (the canaries).
4. Each executable runs (cwd: the crate root, as cargo runs it) with `-Z unstable-options --format
   json --report-time` and RUSTC_BOOTSTRAP=1 in its environment only (libtest reads it when it
   runs; the compiler never sees it). Records `SRC::NAME`: passed, failed (with libtest's captured
   output), ignored -> skipped. Names come from the binary's `--list` first; a test reported twice,
   a name the binary does not list, a binary that exits before reporting a test, a status that
   disagrees with its reports: the tests concerned fail, and the binary's other passes run again,
   each alone, and stand only where that run ends cleanly. Records are held to the run's end.

The reader is not dumpable (prctl), so the test binaries (same uid) cannot open its descriptors
through /proc; the channel is reopened close-on-exec and its number dropped before anything
starts. It is the subreaper of what it starts: after each binary, whatever that binary left
running is killed before the next one starts, and every executable is checked against its hash
taken after the build. The run exits 0 when every record passed (or was skipped), 1 when one
failed or a target did not build, 3 when cargo could not start or read the manifest; the end
record carries the same status.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.isfile(os.path.join(HERE, "channel.py")):  # in the sandbox: laid beside this file
    sys.path.insert(0, HERE)
    from channel import Channel, prctl, undumpable  # noqa: E402
else:  # imported from the package (its tests)
    from code_gym.grading.channel import Channel, prctl, undumpable  # noqa: E402

MESSAGE = 500
PR_SET_CHILD_SUBREAPER = 36
LIBRARY_KINDS = ("lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro")
TEST_KINDS = LIBRARY_KINDS + ("bin", "test")
MAX_ROUNDS = 12
MAX_RERUNS = 200  # passes of a binary that ended wrongly run again alone, up to this many
LIBTEST_JSON = ["-Z", "unstable-options", "--format", "json", "--report-time"]
SOURCES = "code-gym-sources.json"  # beside the target cache's target/ (environments.SOURCES)


def harden() -> None:
    """Not dumpable (a child of the same uid cannot read /proc/<reader>/fd or ptrace it), and the
    subreaper of every process it starts (an orphan comes back to it, to be killed)."""
    undumpable()
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def reap() -> None:
    """Kill every process left under this one (orphans of a test binary come back to the reader as
    their subreaper), and wait for them."""
    me = os.getpid()
    for _ in range(50):
        children = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                children.append(int(entry))
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# -- cargo

def relative(path: str, root: str) -> str:
    real = os.path.realpath(path)
    return os.path.relpath(real, root) if real.startswith(root.rstrip("/") + "/") else path


def metadata(cargo: list[str], options: list[str], root: str) -> tuple[dict | None, str]:
    """(the crate's package from `cargo metadata --no-deps`, cargo's error text)."""
    features = [w for w in options if w.split("=", 1)[0] in ("--features", "-F", "--all-features",
                                                              "--no-default-features", "--locked", "--frozen")]
    # the values of --features follow their flag
    words, keep = [], False
    for word in options:
        if keep:
            words.append(word)
            keep = False
        elif word in features:
            words.append(word)
            keep = word in ("--features", "-F")
    try:
        done = subprocess.run([cargo[0], "metadata", "--no-deps", "--format-version", "1", "--offline", *words],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              errors="replace", close_fds=True)
    except OSError as error:
        return None, f"cargo could not start: {error}"
    if done.returncode != 0:
        return None, done.stderr
    try:
        data = json.loads(done.stdout)
    except ValueError:
        return None, "cargo metadata printed no JSON"
    manifest = os.path.join(root, "Cargo.toml")
    for package in data.get("packages", []):
        if os.path.realpath(package.get("manifest_path", "")) == manifest:
            return package, ""
    return None, "cargo metadata lists no package at ./Cargo.toml (a workspace without a root package?)"


class Target:
    def __init__(self, raw: dict, root: str):
        self.name = raw["name"]
        self.kinds = list(raw.get("kind", []))
        self.src = relative(raw["src_path"], root)
        self.edition = raw.get("edition", "2015")
        self.tested = raw.get("test", True)
        self.harness = True  # False: `harness = false`, a main of its own (no libtest)

    @property
    def library(self) -> bool:
        return any(k in LIBRARY_KINDS for k in self.kinds)

    def select(self) -> list[str]:
        if self.library:
            return ["--lib"]
        kind = "bin" if "bin" in self.kinds else "test"
        return [f"--{kind}", self.name]


def without_harness(root: str) -> set[tuple[str, str]]:
    """(section, name) of the targets Cargo.toml declares with `harness = false` ("lib" for the library)."""
    try:
        import tomllib
        with open(os.path.join(root, "Cargo.toml"), "rb") as handle:
            manifest = tomllib.load(handle)
    except (ImportError, OSError, ValueError):
        return set()
    found = set()
    lib = manifest.get("lib")
    if isinstance(lib, dict) and lib.get("harness") is False:
        found.add(("lib", ""))
    for section in ("bin", "test"):
        for table in manifest.get(section) or []:
            if isinstance(table, dict) and table.get("harness") is False:
                found.add((section, str(table.get("name", ""))))
    return found


def test_targets(package: dict, root: str, files: list[str]) -> tuple[list[Target], list[str], Target | None]:
    """(the targets to build and run, the selected files that are no test target, the library).
    The unit tests of the library and the binaries always run: they live in the sources a patch
    changes, which no task can list as test files (a test file is protected)."""
    targets = [Target(t, root) for t in package.get("targets", [])]
    plain = without_harness(root)
    for target in targets:
        section = "lib" if target.library else ("bin" if "bin" in target.kinds else "test")
        target.harness = (section, "" if target.library else target.name) not in plain
    library = next((t for t in targets if t.library), None)
    runnable = [t for t in targets if any(k in TEST_KINDS for k in t.kinds) and t.tested]
    if not files:
        return runnable, [], library
    by_src = {t.src: t for t in runnable}
    wanted = list(dict.fromkeys(os.path.normpath(f) for f in files))
    chosen = [by_src[f] for f in wanted if f in by_src]
    chosen += [t for t in runnable if "test" not in t.kinds and t not in chosen]
    return chosen, [f for f in wanted if f not in by_src], library


class Build:
    def __init__(self) -> None:
        self.executables: dict[str, str] = {}  # target root -> test executable
        self.errors: dict[str, list[str]] = {}  # target root -> rendered compiler errors
        self.failed: dict[str, str] = {}  # target root -> why it did not build
        self.stderr = ""
        self.round: dict[str, list[str]] = {}  # the errors of the last cargo call, by target root
        self.library_built = False  # the library (without --test: what the other targets link) built
        self.shown: set[str] = set()  # diagnostics printed (a round repeats a failing one)


def cargo_build(cargo: list[str], options: list[str], targets: list[Target], root: str, build: Build) -> bool:
    """One `cargo test --no-run` of `targets`; True when cargo finished the build."""
    selectors = [w for t in targets for w in t.select()]
    command = [*cargo, "--no-run", "--offline", "--message-format", "json", *options, *selectors]
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", close_fds=True)
    except OSError as error:
        build.stderr = f"cargo could not start: {error}"
        return False
    stdout, stderr = proc.communicate()
    build.stderr = stderr
    build.round = {}
    shown = build.shown  # the library and its unit tests compile the same file: one error, twice
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        reason = message.get("reason")
        target = message.get("target") or {}
        src = relative(target.get("src_path", ""), root) if target.get("src_path") else ""
        ours = os.path.realpath(os.path.dirname(message.get("manifest_path", ""))) == root
        if reason == "compiler-artifact" and ours and (message.get("profile") or {}).get("test"):
            if message.get("executable"):
                build.executables[src] = message["executable"]
        elif reason == "compiler-artifact" and ours and any(k in LIBRARY_KINDS for k in target.get("kind") or []):
            build.library_built = True
        elif reason == "compiler-message":
            diagnostic = message.get("message") or {}
            rendered = diagnostic.get("rendered") or diagnostic.get("message") or ""
            if (diagnostic.get("message") or "").startswith("aborting due to"):
                continue
            if diagnostic.get("level") in ("error", "error: internal compiler error"):
                if rendered not in build.round.get(src, []):
                    build.round.setdefault(src, []).append(rendered)
                if rendered not in build.errors.get(src, []):
                    build.errors.setdefault(src, []).append(rendered)
            if rendered in shown:
                continue
            shown.add(rendered)
            if rendered:
                say(rendered.rstrip("\n"))
    sys.stdout.write(stderr)
    sys.stdout.flush()
    return proc.returncode == 0


def standalone(target: Target, root: str, out: str) -> tuple[str | None, str]:
    """Compile an integration test that does not use the library on its own (rustc --test)."""
    exe = os.path.join(out, "standalone-" + target.name)
    try:
        done = subprocess.run(["rustc", "--test", "--edition", target.edition, "-o", exe, "--crate-name",
                               target.name.replace("-", "_"), target.src], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, errors="replace",
                              close_fds=True, cwd=root)
    except OSError as error:
        return None, str(error)
    return (exe if done.returncode == 0 else None), done.stdout


def uses_library(target: Target, library: Target | None, root: str) -> bool:
    if library is None:
        return False
    try:
        with open(os.path.join(root, target.src), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return True
    name = library.name.replace("-", "_")
    return name in text or "extern crate" in text or "#[path" in text or "mod " in text or "include!" in text


def build_targets(cargo: list[str], options: list[str], targets: list[Target], library: Target | None,
                  root: str) -> Build:
    """Build `targets`, again and again without the ones that failed, until the rest built.

    The library's root names two units: the library (what the other targets link) and its unit
    tests (the library compiled with --test), and cargo's messages do not say which one an error
    is from. Errors under that root fail every target only when the library itself did not build:
    when cargo reported the library built, or the next round, without the unit tests, builds it,
    they were the unit tests' and fail only those (`src/lib.rs::*`)."""
    build = Build()
    pending = list(targets)
    unit_tests_only = False  # the library's unit tests were left out of this round for their errors
    for _ in range(MAX_ROUNDS):
        if not pending:
            break
        if cargo_build(cargo, options, pending, root, build):
            pending = [t for t in pending if t.src not in build.executables]
            for target in pending:
                build.failed[target.src] = "cargo built no test executable for it"
            break
        library_errors = build.round.get(library.src, []) if library is not None else []
        broke = [t for t in pending if t.src not in build.executables and build.round.get(t.src)]
        if library_errors and library in pending and library.src not in build.executables and (
                build.library_built or len(pending) > 1):
            # the unit tests' errors, or the library's: the library built, or the next round tells
            build.failed[library.src] = "\n".join(library_errors)
            unit_tests_only = not build.library_built
            broke = [t for t in broke if t is not library]
            for target in broke:
                build.failed[target.src] = "\n".join(build.round[target.src])
            pending = [t for t in pending if t.src not in build.executables and t.src not in build.failed]
            continue
        if library_errors:  # every other target of the crate links the library
            if unit_tests_only:  # left out, the library still did not build: not (only) the unit tests' errors
                build.failed[library.src] = "\n".join(build.errors.get(library.src, []))
            why = "the library did not build:\n" + "\n".join(library_errors)
            for target in pending:
                if target.src not in build.executables:
                    build.failed.setdefault(target.src, why if target is not library else "\n".join(library_errors))
            break
        if not broke:
            why = error_lines(build.stderr) or "cargo failed before compiling it"
            for target in pending:
                if target.src not in build.executables:
                    build.failed[target.src] = why
            break
        for target in broke:
            build.failed[target.src] = "\n".join(build.round[target.src])
        pending = [t for t in pending if t.src not in build.executables and t.src not in build.failed]
    return build


def error_lines(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith(("error", "Caused by", "  ")) or "error:" in ln]
    return "\n".join(lines)


# -- test binaries

class Binary:
    def __init__(self, target: Target, exe: str):
        self.target = target
        self.exe = exe
        self.listed: list[str] = []
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.problems: list[str] = []


def listed_tests(exe: str, root: str, env: dict[str, str], libtest: list[str]) -> list[str] | None:
    """The tests a binary holds (`--list --format terse`), None when it cannot list them."""
    flags = [w for w in libtest if w in ("--ignored", "--include-ignored")]
    try:
        done = subprocess.run([exe, "--list", "--format", "terse", *flags], cwd=root, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True, errors="replace",
                              close_fds=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        reap()
    if done.returncode != 0:
        return None
    names = []
    for line in done.stdout.splitlines():
        if line.endswith(": test"):
            names.append(line[:-len(": test")])
    return names


class Execution:
    """What one run of a test binary reported: outcomes and failure output by name, the names it
    reported more than once, libtest's closing suite event, the exit status."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.repeated: set[str] = set()
        self.finished: dict | None = None
        self.status: int | None = None
        self.error = ""


def execute(exe: str, root: str, env: dict[str, str], args: list[str], echo: bool) -> Execution:
    """Run `exe` with `args` and read libtest's JSON events (`echo`: print libtest's lines, and the
    lines that are no event, for the agent)."""
    run = Execution()
    try:
        proc = subprocess.Popen([exe, *args], cwd=root, env=env, stdout=subprocess.PIPE, stderr=None if echo else
                                subprocess.DEVNULL, stdin=subprocess.DEVNULL, close_fds=True)
    except OSError as error:
        run.error = f"the test binary could not start: {error}"
        return run
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        event = _event(line)
        if event is None:
            if echo:
                say(line)
            continue
        kind, name = event.get("type"), event.get("name")
        if kind == "suite" and event.get("event") in ("ok", "failed"):
            run.finished = event
            continue
        outcome = {"ok": "passed", "failed": "failed", "ignored": "skipped"}.get(event.get("event"))
        if kind != "test" or not isinstance(name, str) or outcome is None:
            continue
        if name in run.outcomes:
            run.repeated.add(name)
            continue
        run.outcomes[name] = outcome
        if echo:
            say(f"test {name} ... {({'passed': 'ok', 'failed': 'FAILED', 'skipped': 'ignored'})[outcome]}")
        if outcome == "failed":
            output = event.get("stdout") or ""
            run.messages[name] = output.strip()[-MESSAGE:] or "the test failed"
            if echo:
                say(f"---- {name} stdout ----\n{output.rstrip()}")
    run.status = proc.wait()
    reap()
    return run


def run_binary(binary: Binary, root: str, env: dict[str, str], libtest: list[str], names: list[str] | None) -> None:
    """Run one test binary and read its JSON events into `binary` (printing libtest's lines). A run
    that ended wrongly (an exit status that disagrees with its reports, no closing summary, a test
    reported twice, a name the binary does not hold) has its passes run again, each alone: a pass
    stands only where its own run ends cleanly with it."""
    exe, src = binary.exe, binary.target.src
    say(f"     Running {src} ({os.path.relpath(exe, root) if exe.startswith(root) else exe})")
    listed = listed_tests(exe, root, env, libtest)
    if listed is None:
        binary.problems.append("the test binary could not list its tests")
        listed = []
    skips = [libtest[i + 1] if w == "--skip" else w.split("=", 1)[1]
             for i, w in enumerate(libtest) if w == "--skip" and i + 1 < len(libtest) or w.startswith("--skip=")]
    binary.listed = [n for n in listed if (names is None or n in names) and not any(s in n for s in skips)]
    run = execute(exe, root, env, [*libtest, *LIBTEST_JSON, *([*names, "--exact"] if names else [])], echo=True)
    if run.error:
        binary.problems.append(run.error)
    binary.outcomes, binary.messages = run.outcomes, run.messages
    for name in sorted(run.repeated):
        binary.outcomes[name] = "failed"
        binary.messages[name] = "libtest reported this test more than once"
        binary.problems.append(f"{name} was reported more than once")
    for name in [n for n in binary.outcomes if n not in binary.listed]:  # written by the code under test
        binary.problems.append(f"{name} is not a test of this binary")
        del binary.outcomes[name]
    failed = [n for n, o in binary.outcomes.items() if o == "failed"]
    status = run.status
    if status == 0 and (run.finished is None or failed):
        binary.problems.append("the test binary exited 0 before libtest's summary" if run.finished is None else
                               "the test binary exited 0 although a test failed")
    elif status == 101 and not failed:
        binary.problems.append("the test binary exited 101 but reported no failing test")
        for name in binary.listed:
            binary.outcomes[name] = "failed"
            binary.messages[name] = "the test binary exited 101 but reported no failing test"
    elif status is not None and status not in (0, 101):
        binary.problems.append(f"the test binary was killed by signal {-status}" if status < 0 else
                               f"the test binary exited {status}")
    if binary.problems:
        rerun_passes(binary, root, env, libtest)
    for name in binary.listed:
        if name not in binary.outcomes:
            binary.outcomes[name] = "failed"
            binary.messages[name] = (binary.problems[-1] if binary.problems else "no result was reported") + \
                " before reporting this test"
    failed = [n for n, o in binary.outcomes.items() if o == "failed"]
    summary = f"test result: {sum(o == 'passed' for o in binary.outcomes.values())} passed; {len(failed)} failed; " \
              f"{sum(o == 'skipped' for o in binary.outcomes.values())} ignored"
    say(summary + "".join(f"\ncode-gym: {p}" for p in binary.problems) + "\n")


def rerun_passes(binary: Binary, root: str, env: dict[str, str], libtest: list[str]) -> None:
    passes = [n for n, o in binary.outcomes.items() if o == "passed"]
    if not passes:
        return
    say(f"code-gym: {binary.target.src}: the run ended wrongly ({binary.problems[0]}): its {len(passes)} passing "
        f"test(s) run again, each on its own")
    flags = [w for w in libtest if w in ("--ignored", "--include-ignored")]
    why = f"it passed in a run that ended wrongly ({binary.problems[0]}), and not on its own"
    for k, name in enumerate(passes):
        if k >= MAX_RERUNS:
            binary.outcomes[name] = "failed"
            binary.messages[name] = f"it passed in a run that ended wrongly ({binary.problems[0]}); too many to run again"
            continue
        again = execute(binary.exe, root, env, [*flags, *LIBTEST_JSON, name, "--exact"], echo=False)
        if not (again.status == 0 and again.finished is not None and again.outcomes == {name: "passed"}
                and not again.repeated):
            binary.outcomes[name] = "failed"
            binary.messages[name] = why[:MESSAGE]
            say(f"test {name} ... FAILED on its own")


def run_main(binary: Binary, root: str, env: dict[str, str]) -> None:
    """A target with `harness = false`: its own main is the test, `SRC::main`, passed when it exits 0."""
    say(f"     Running {binary.target.src} (harness = false)")
    why = ""
    try:
        status = subprocess.run([binary.exe], cwd=root, env=env, stdin=subprocess.DEVNULL, close_fds=True).returncode
    except OSError as error:
        status, why = None, f"it could not start: {error}"
    finally:
        reap()
    binary.listed = ["main"]
    if status == 0:
        binary.outcomes["main"] = "passed"
    else:
        binary.outcomes["main"] = "failed"
        binary.messages["main"] = why if status is None else (
            f"it was killed by signal {-status}" if status < 0 else f"it exited {status}")
    say(f"test main ... {'ok' if status == 0 else 'FAILED'}\n")


def _event(line: str) -> dict | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "type" in event else None


def digest(path: str) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def repository_files(root: str) -> dict[str, str]:
    """The repository's regular files (no symlink), by path relative to `root`; its .git and target
    folders left out."""
    found = {}
    for folder, dirs, files in os.walk(root):
        if folder == root:
            dirs[:] = [d for d in dirs if d not in (".git", "target")]
        for name in files:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found[os.path.relpath(path, root)] = path
    return found


def read_sources(cache: str) -> dict | None:
    """The target cache's account of what it was built from (SOURCES beside its target folder):
    {"built_ns": a time no unit of the cache is newer than, "files": {path: [size, sha256, mtime_ns]}}."""
    try:
        with open(os.path.join(os.path.dirname(cache.rstrip("/")), SOURCES), encoding="utf-8") as handle:
            sources = json.load(handle)
        return sources if isinstance(sources.get("files"), dict) and int(sources["built_ns"]) > 0 else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def refresh_times(root: str, sources: dict) -> tuple[int, str]:
    """Make cargo's freshness follow content, whenever the files were written: cargo takes a unit of
    the target cache as fresh while no file it read is newer than the unit, so a repository file
    whose bytes differ from the ones the cache was built from, and whose modification time is not
    later than every unit of the cache (a patch written before a cold cache was built, a file
    restored with its times), gets a time later than all of them. Nothing else is touched: a file
    with the cache's bytes is what the units were compiled from (whatever its time), one newer than
    the cache is rebuilt anyway, and a file the cache never saw (new) is in no unit's inputs (the
    grader's own files keep their times: it checks them after the run). Returns (files touched,
    the error that stopped it, "" if none)."""
    built = int(sources["built_ns"])
    later = max(time.time_ns(), built + 1_000_000_000)
    touched = 0
    for rel, entry in sources["files"].items():
        path = os.path.join(root, rel)
        try:
            st = os.stat(path)  # cargo follows symbolic links
        except OSError:
            continue  # deleted: cargo sees it missing
        if st.st_mtime_ns > built or not os.path.isfile(path):
            continue
        try:
            if st.st_size == entry[0] and digest(path) == entry[1]:
                continue
            os.utime(path, ns=(st.st_atime_ns, later))
        except OSError as error:
            return touched, f"{rel}: {error}"
        touched += 1
    return touched, ""


def crate_root(start: str, sources: dict) -> str | None:
    """The crate folder of a cargo call made in `start`: the nearest folder up from it whose
    Cargo.toml is the cache's, else the nearest with a Cargo.toml."""
    want = (sources["files"].get("Cargo.toml") or [None, None])[1]
    nearest, path = None, os.path.realpath(start)
    while True:
        manifest = os.path.join(path, "Cargo.toml")
        if os.path.isfile(manifest):
            try:
                if want and digest(manifest) == want:
                    return path
            except OSError:
                pass
            nearest = nearest or path
        parent = os.path.dirname(path)
        if parent == path:
            return nearest
        path = parent


def prepare_target(root: str | None) -> None:
    """CARGO_TARGET_DIR as a copy of the task's target cache (kept mtimes: cargo reuses its units),
    and the repository's changed files dated after the cache (refresh_times) so that cargo compiles
    them again. `root`: the crate's folder (None: found up from the working directory)."""
    cache, target = os.environ.get("CODE_GYM_RUST_CACHE", ""), os.environ.get("CARGO_TARGET_DIR", "")
    if not (cache and target and os.path.isdir(cache) and not os.path.exists(target)):
        return
    started = time.monotonic()
    done = subprocess.run(["cp", "-a", cache, target], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, text=True, errors="replace", close_fds=True)
    if done.returncode != 0:
        say(f"code-gym: the target cache could not be copied ({done.stdout.strip()[:300]}); building from scratch")
        shutil.rmtree(target, ignore_errors=True)
        return
    copied = time.monotonic()
    sources = read_sources(cache)
    if root is None and sources is not None:
        root = crate_root(os.getcwd(), sources) or (sources.get("root") if os.path.isdir(sources.get("root") or "")
                                                    else None)
    if sources is None or root is None:
        say("code-gym: the target cache does not say what it was built from; building from scratch")
        shutil.rmtree(target, ignore_errors=True)
        return
    touched, error = refresh_times(root, sources)
    if error:
        say(f"code-gym: a changed file's time cannot be set ({error[:300]}); building from scratch")
        shutil.rmtree(target, ignore_errors=True)
    elif os.environ.get("CODE_GYM_RUST_TIMING"):
        say(f"code-gym: target cache copied in {copied - started:.2f} s, {touched} changed file(s) older than it "
            f"dated after it in {time.monotonic() - copied:.2f} s")


def main(argv: list[str]) -> int:
    if argv[1:] == ["--prepare"]:  # the cargo wrapper on PATH, before an agent's own cargo call
        prepare_target(None)
        return 0
    spec = json.loads(argv[1])
    harden()
    channel = Channel()
    root = os.path.realpath(os.getcwd())
    cargo, options, libtest = list(spec["cargo"]), list(spec.get("options", [])), list(spec.get("libtest", []))
    names = spec.get("names") or None
    prepare_target(root)
    package, error = metadata(cargo, options, root)
    if package is None:
        say(error.rstrip())
        say("code-gym: cargo could not read the crate's manifest: no test ran")
        channel.write("end", exitstatus=3)
        return 3
    targets, strangers, library = test_targets(package, root, list(spec.get("files", [])))
    loose = []  # a test file of tests/ that is no target (`autotests = false`) and uses std alone: built on its own
    for file in strangers:
        folder, name = os.path.split(file)
        candidate = Target({"name": name[:-3], "kind": ["test"], "src_path": os.path.join(root, file),
                            "edition": package.get("edition", "2015")}, root)
        if folder == "tests" and name.endswith(".rs") and os.path.isfile(file) \
                and not uses_library(candidate, library or candidate, root):
            loose.append(candidate)
            continue
        say(f"code-gym: {file} is not the root of a library, binary or integration-test target: it is not run "
            "on its own (a test module in it runs with the target that declares it)")
    build = build_targets(cargo, options, targets, library, root)
    targets += loose
    if spec.get("build_only"):
        channel.write("end", exitstatus=0 if not build.failed else 1)
        return 0 if not build.failed else 1
    scratch = tempfile.mkdtemp(prefix="standalone-")  # in the sandbox's private /tmp
    for target in targets:  # an integration test that failed only with the library and does not use it, or a loose one
        if target not in loose and not (
                target.src in build.failed and "test" in target.kinds and library is not None
                and not build.errors.get(target.src) and library.src in build.errors
                and not uses_library(target, library, root)):
            continue
        exe, text = standalone(target, root, scratch)
        if exe is not None:
            build.executables[target.src] = exe
            build.failed.pop(target.src, None)
        else:
            if target in loose:
                build.failed[target.src] = f"it is no target of the crate and does not build on its own:\n{text}"
            if text.strip():
                say(text.rstrip())
    hashes = {src: digest(exe) for src, exe in build.executables.items() if os.path.isfile(exe)}
    env = dict(os.environ) | {"RUSTC_BOOTSTRAP": "1"}
    collects, reports = [], []
    for target in targets:
        if target.src in build.failed:
            why = build.failed[target.src]
            collects.append({"id": target.src, "outcome": "failed", "message": why.strip()[:MESSAGE]})
            continue
        exe = build.executables.get(target.src)
        binary = Binary(target, exe or "")
        if exe is None or hashes.get(target.src) is None or digest(exe) != hashes[target.src]:
            collects.append({"id": target.src, "outcome": "failed",
                             "message": "the test executable was changed or removed before it ran"})
            say(f"code-gym: {target.src}: the test executable was changed or removed before it ran")
            continue
        wanted = names.get(target.src) if names else None
        if target.harness:
            run_binary(binary, root, env, libtest, wanted)
        else:
            run_main(binary, root, env)
        for name in binary.listed:
            record = {"id": f"{target.src}::{name}", "outcome": binary.outcomes[name]}
            if name in binary.messages:
                record["message"] = binary.messages[name][:MESSAGE]
            reports.append(record)
        if not binary.listed and binary.problems:
            collects.append({"id": target.src, "outcome": "failed", "message": "; ".join(binary.problems)[:MESSAGE]})
    shutil.rmtree(scratch, ignore_errors=True)
    for record in collects:
        channel.write("collect", **record)
    for record in reports:
        channel.write("report", when="call", **record)
    ok = not collects and all(r["outcome"] in ("passed", "skipped") for r in reports)
    status = 0 if ok else 1
    channel.write("end", exitstatus=status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
