"""The npm package a build starts from: a private copy of a folder, a packed `.tgz`, or a registry
spec `name@version` (fetched with `npm pack`, which only downloads the tarball: no script of the
package runs), with its test files, its source files, its test runner and its environment.

The runner comes from package.json's `scripts.test`, followed through `npm run` chains and past
wrappers (`nyc`, `c8`, `cross-env`, ...): node's test runner, mocha, jest, or tape (also run as
`tap` or as `node FILE` when the test files require tape). The test files are the ones its
arguments name (globs, folders), else the runner's defaults. The source files are the package's
own JavaScript files the test files reach through relative `require`/`import` (and the package's
`main`): a change elsewhere no test can notice.

The environment is the package's dependencies and, of its devDependencies, the ones the tests use:
the runner, what the test files, the test script and the runner's configuration name. Linters,
coverage tools and publishing helpers are left out of the tasks' package.json (recorded in the
manifest), so that a task installs what its tests need and nothing else."""
from __future__ import annotations

import json
import posixpath
import re
import shlex
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from code_gym.grading.builder import BuildError
from code_gym.languages.javascript import environments
from code_gym.languages.javascript.environments import EnvironmentBuildError, NpmEnvironment
from code_gym.tasks.loaders.folder import copy_tree, task_id
from code_gym.tasks.task import Task, TaskError

SCRIPT_SUFFIXES = (".js", ".cjs", ".mjs")
ARCHIVE_SUFFIXES = (".tgz", ".tar.gz")
# an npm registry spec with an exact version: "minimist@1.2.8", "@scope/name@1.0.0-beta.1"
NPM_SPEC = re.compile(r"^(@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*@[0-9]+\.[0-9]+\.[0-9]+[\w.+-]*$", re.I)
TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec"})
SKIP_DIRS = frozenset({".git", "node_modules", "coverage", ".nyc_output", ".github"})
# folders of data and helpers inside a test folder: never test files of their own
HELPER_DIRS = frozenset({"fixtures", "fixture", "__fixtures__", "__mocks__", "helpers", "helper", "support",
                         "data", "resources", "utils"})
NOT_SOURCE_DIRS = frozenset({"example", "examples", "bench", "benchmark", "benchmarks", "docs", "doc", "scripts",
                             "bin", "coverage", "types"}) | TEST_DIRS
MAX_SOURCE_BYTES = 200_000  # bigger files are bundles or tables: not where a task is made
PACK_TIMEOUT = 120.0

RUNNERS = ("node --test", "mocha", "jest", "tape")  # the tasks' test_command, as runners.runner_of reads it
_UNSUPPORTED = {"ava": "ava", "vitest": "vitest", "jasmine": "jasmine", "lab": "@hapi/lab", "karma": "karma",
                "qunit": "qunit", "zuul": "zuul", "airtap": "airtap", "testling": "testling", "uvu": "uvu",
                "tsd": "tsd", "xo": None, "mochify": "mochify", "react-scripts": "react-scripts", "expresso": "expresso",
                "nodeunit": "nodeunit", "vows": "vows", "buster": "buster", "intern": "intern", "brittle": "brittle"}
_WRAPPERS = frozenset({"nyc", "c8", "cross-env", "npx", "env", "time", "covert", "istanbul", "nodemon", "dotenv",
                       "with-env", "node-env-run", "cover"})
# mocha, jest and node options that take a value as their next word
_VALUED = frozenset({"-r", "--require", "-R", "--reporter", "-t", "--timeout", "-u", "--ui", "-g", "--grep", "-f",
                     "--fgrep", "--file", "--extension", "--config", "--package", "--ignore", "-s", "--slow",
                     "--reporter-option", "--reporter-options", "-O", "--opts", "--spec", "--testTimeout",
                     "--test-reporter", "--test-reporter-destination", "--import", "--loader", "--conditions", "-c",
                     "--rootDir", "--testPathPattern", "--testNamePattern", "-i", "--maxWorkers", "-w", "--env",
                     "--setupFiles", "--test-name-pattern", "--test-concurrency", "--watch-path", "--experimental-loader",
                     "--dir", "--reporters"})
# the grader's drivers need mocha 8+ and tape 4.11+: a package that asks for an older one (its tests use
# the same describe/it and test(t) APIs) gets this range instead, recorded in the manifest
RUNNER_RANGES = {"mocha": ((8, 0), "^10.8.2"), "tape": ((4, 11), "^4.17.0")}
# the options of scripts.test a task's test_command keeps: tape's driver takes only -r/--require;
# the others take every option but those that change the output, watch or measure coverage
_TAPE_OPTIONS = frozenset({"-r", "--require"})
_DROPPED_OPTIONS = {
    "mocha": frozenset({"-R", "--reporter", "-O", "--reporter-option", "--reporter-options", "-w", "--watch",
                        "--watch-files", "--watch-ignore", "-c", "--colors", "--color", "-C", "--no-colors", "-p",
                        "--parallel", "-j", "--jobs", "--recursive", "--exit"}),
    "jest": frozenset({"--coverage", "--collectCoverage", "--ci", "--watch", "--watchAll", "--json", "--outputFile",
                       "--reporters", "--verbose", "--silent", "--coverageReporters", "--coverageDirectory", "-i",
                       "--runInBand", "--maxWorkers", "-w"}),
    "node --test": frozenset({"--test-reporter", "--test-reporter-destination", "--watch", "--experimental-test-coverage",
                              "--test-concurrency"}),
}
_CONFIG_FILES = re.compile(r"^(\.mocharc(\.\w+)?|jest\.config\.\w+|\.babelrc(\.\w+)?|babel\.config\.\w+|"
                           r"\.taprc|\.c8rc(\.\w+)?|\.nycrc(\.\w+)?)$")
_SPECIFIER = re.compile(r"""(?:\brequire\s*\(\s*|\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"\n]+)\1""")
_NODE_TEST_DEFAULTS = (re.compile(r"(^|/)test/"), re.compile(r"(^|/)(test|[^/]*[.\-_]test|test-[^/]*)\.[cm]?js$"))
_JEST_DEFAULTS = (re.compile(r"(^|/)__tests__/"), re.compile(r"\.(test|spec)\.[cm]?js$"))


class ReadError(BuildError):
    """scripts.test or the package's files cannot be read as a test suite (a refusal, not a bug)."""


@dataclass(frozen=True)
class EnvOptions:
    """How a package's environment is made (code_gym.languages.javascript.environments)."""
    enabled: bool = True  # False: no node_modules (a package without dependencies needs none)
    # leave out the devDependencies the tests do not name (linters, coverage, publishing tools)
    test_dependencies_only: bool = True


@dataclass(frozen=True)
class Project:
    name: str
    root: Path  # a private copy: the builder never touches the source
    test_files: tuple[str, ...]  # repo-relative, as the runner would find them
    source_files: tuple[str, ...]  # the package's own files the tests reach: where tasks are made
    test_command: str  # one of RUNNERS with the options scripts.test gives it (`test_command`)
    environment: NpmEnvironment | None = None  # its node_modules (None: no dependency at all)
    dropped_dependencies: tuple[str, ...] = ()  # devDependencies left out of the tasks' package.json
    script: str = ""  # package.json's scripts.test, as the package wrote it

    @property
    def task(self) -> Task:
        """The project as a task without a statement: what the adapter needs for the builder's own
        runs (`language.runtime(project.task)`: the environment from its package.json)."""
        return Task(id=self.name, statement="(building)", repo=self.root, hidden_dir=self.root,
                    visible_tests=self.test_files, hidden_tests=(), protected_paths=(), reference_patch="",
                    test_command=self.test_command, language="javascript")

    @property
    def manifest_environment(self) -> dict:
        """The manifest's account of the environment (task.toml names none: package.json is it)."""
        env = self.environment
        if env is None:
            return {}
        return {"key": env.spec.key, "folder": str(env.folder), "cached": env.cached,
                "build_seconds": round(env.build_seconds, 2), "installed": list(env.installed),
                "dropped_dev_dependencies": list(self.dropped_dependencies)}


# -- the source: a folder, a tarball, or a registry spec


def is_npm_spec(text: str) -> bool:
    return bool(NPM_SPEC.match(text)) and not Path(text).exists()


def npm_pack(spec: str, folder: Path) -> Path:
    """The registry tarball of `spec` (`name@version`), downloaded into `folder` (kept: a second call
    downloads nothing). `npm pack` of a registry spec runs no script of the package."""
    folder.mkdir(parents=True, exist_ok=True)
    name, _, version = spec.rpartition("@")
    expected = folder / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
    if expected.is_file():
        return expected
    try:
        done = subprocess.run(["npm", "pack", spec, "--json", "--ignore-scripts", "--pack-destination", str(folder)],
                              cwd=folder, capture_output=True, text=True, timeout=PACK_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{spec}: npm pack did not finish in {PACK_TIMEOUT:g}s; is the registry reachable?") from None
    if done.returncode != 0:
        _, error = environments.explain_failure(done.stdout + done.stderr, [name])
        raise BuildError(f"{spec}: npm pack failed: {error}")
    try:
        filename = json.loads(done.stdout)[0]["filename"]
    except (ValueError, LookupError, TypeError):
        raise BuildError(f"{spec}: npm pack did not say which tarball it wrote: {done.stdout[-300:]}") from None
    target = folder / filename.replace("/", "-").lstrip("@")
    if target != expected and target.is_file():
        target.rename(expected)
    return expected


def _unpack(archive: Path, target: Path) -> Path:
    """Unpack a package tarball into `target`; returns its top folder (npm's is package/)."""
    try:
        with tarfile.open(archive) as tf:
            tf.extractall(target, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise BuildError(f"{archive}: not a readable package tarball: {exc}") from None
    entries = [p for p in target.iterdir() if p.is_dir()]
    return entries[0] if len(entries) == 1 and len(list(target.iterdir())) == 1 else target


def _skipped(rel: str) -> bool:
    return posixpath.basename(rel) in SKIP_DIRS or rel.endswith(".min.js")


# -- the runner from scripts.test


@dataclass(frozen=True)
class Invocation:
    runner: str  # one of RUNNERS, or "tap" / "node" until the test files say what they are
    args: tuple[str, ...]  # of an unsupported runner: (the command, the script it is in)
    supported: bool = True


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _segments(script: str) -> list[str]:
    """The commands of a script line, split at `&&`, `||`, `;`; whatever follows a pipe (a TAP
    formatter) is dropped."""
    out = []
    for part in re.split(r"&&|\|\||;", script):
        out.append(re.split(r"(?<!\|)\|(?!\|)", part)[0].strip())
    return [s for s in out if s]


def invocations(scripts: dict, name: str = "test", depth: int = 0) -> list[Invocation]:
    """The test runner invocations of `scripts[name]`, following `npm run`, `npm test`, `yarn` and
    `pnpm` into the scripts they name; those of runners code-gym does not run are marked so."""
    script = scripts.get(name)
    if not isinstance(script, str) or depth > 8:
        return []
    found: list[Invocation] = []
    for segment in _segments(script):
        words = [w for w in _words(segment) if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        while words and (posixpath.basename(words[0]) in _WRAPPERS or words[0].startswith("-")):
            words = words[1:]
            while words and words[0].startswith("-") and posixpath.basename(words[0]) not in _WRAPPERS:
                words = words[1:]
        if not words:
            continue
        program = posixpath.basename(words[0])
        if program in ("npm", "yarn", "pnpm"):
            target = _script_named(program, words[1:])
            if target and (target != name or depth):
                found += invocations(scripts, target, depth + 1)
            continue
        if program == "node":
            program, words = _node_program(words)
        if program == "node" and "--test" in words:
            found.append(Invocation("node --test", tuple(w for w in words[1:] if w != "--test")))
        elif program == "node":
            found.append(Invocation("node", tuple(words[1:])))
        elif program in ("mocha", "_mocha"):
            found.append(Invocation("mocha", tuple(words[1:])))
        elif program == "jest":
            found.append(Invocation("jest", tuple(words[1:])))
        elif program in ("tape", "tap"):
            found.append(Invocation(program, tuple(words[1:])))
        elif _UNSUPPORTED.get(program):
            found.append(Invocation(_UNSUPPORTED[program], (segment, name), supported=False))
    return found


def _node_program(words: list[str]) -> tuple[str, list[str]]:
    """(the runner, its words) when node starts a runner's own program (`node
    node_modules/.bin/_mocha`, `node node_modules/jest/bin/jest.js`); else ("node", `words`)."""
    for i, word in enumerate(words[1:], 1):
        for runner in ("mocha", "jest", "tape"):
            if "node_modules/" in word and f"/{runner}" in word:
                return runner, words[i:]
    return "node", words


def _script_named(program: str, args: list[str]) -> str | None:
    """The script `npm run X`, `npm test`, `yarn X` or `pnpm X` runs."""
    rest = [w for w in args if not w.startswith("-")]
    if rest[:1] in (["run"], ["run-script"]):
        return rest[1] if len(rest) > 1 else None
    if rest[:1] in (["test"], ["t"]):
        return "test"
    return rest[0] if program != "npm" and rest else None


def _paths(args: tuple[str, ...]) -> list[str]:
    """The file, folder and glob arguments of a runner's command line."""
    out, skip = [], False
    for word in args:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in _VALUED
        else:
            out.append(word.removeprefix("./"))
    return out


def test_command(runner: str, args: tuple[str, ...]) -> str:
    """The tasks' test_command: the runner with the options of its scripts.test arguments it keeps
    (the grader appends the test files)."""
    kept, keep_value, skip_value = [], False, False
    for word in args:
        if keep_value or skip_value:
            if keep_value:
                kept.append(word)
            keep_value = skip_value = False
            continue
        if not word.startswith("-"):
            continue
        option = word.split("=", 1)[0]
        keep = option in _TAPE_OPTIONS if runner == "tape" else option not in _DROPPED_OPTIONS.get(runner, ())
        if keep:
            kept.append(word)
        if option in _VALUED and "=" not in word:
            keep_value, skip_value = keep, not keep
    return " ".join([runner, *(shlex.quote(w) for w in kept)])


def _braces(pattern: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    return [p for alt in match.group(1).split(",")
            for p in _braces(pattern[:match.start()] + alt + pattern[match.end():])]


def _glob_regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + "$")


def _matching(files: list[str], root: Path, paths: list[str], recursive: bool = True) -> list[str]:
    """The files that `paths` (files, folders, globs, as a runner takes them) name."""
    chosen = set()
    for path in paths:
        for pattern in _braces(path.rstrip("/")):
            if (root / pattern).is_dir():
                prefix = pattern.rstrip("/") + "/"
                chosen.update(f for f in files if f.startswith(prefix) and (recursive or "/" not in f[len(prefix):]))
            elif (root / pattern).is_file():
                chosen.add(pattern)
            elif any(c in pattern for c in "*?["):
                regex = _glob_regex(pattern)
                chosen.update(f for f in files if regex.match(f))
            elif not pattern.endswith(SCRIPT_SUFFIXES) and (root / f"{pattern}.js").is_file():
                chosen.add(f"{pattern}.js")
    return sorted(chosen)


def _requires(text: str, name: str) -> bool:
    return any(spec == name or spec.startswith(name + "/") for _, spec in _SPECIFIER.findall(text))


def _is_helper(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in HELPER_DIRS for p in parts[:-1]) or parts[-1].startswith("_")


def _mocharc_spec(root: Path, package: dict) -> list[str]:
    """The `spec` of a JSON .mocharc or package.json's `mocha` field (a YAML or JS one is not read)."""
    for name in (".mocharc.json", ".mocharc.jsonc", ".mocharc"):
        try:
            data = json.loads((root / name).read_text())
        except (OSError, ValueError):
            continue
        spec = data.get("spec") if isinstance(data, dict) else None
        return [spec] if isinstance(spec, str) else [s for s in spec or [] if isinstance(s, str)]
    field = package.get("mocha")
    spec = field.get("spec") if isinstance(field, dict) else None
    return [spec] if isinstance(spec, str) else [s for s in spec or [] if isinstance(s, str)]


def runner_and_tests(root: Path, package: dict, files: list[str]) -> tuple[str, list[str], tuple[str, ...]]:
    """(the tasks' test command, the test files, the runner's arguments in scripts.test) of the
    package at `root` whose JavaScript files are `files`; ReadError with the reason when its tests
    cannot be run."""
    scripts = package.get("scripts") if isinstance(package.get("scripts"), dict) else {}
    if not isinstance(scripts.get("test"), str):
        raise ReadError("package.json has no scripts.test: nothing says how its tests run")
    every = invocations(scripts)
    found = [i for i in every if i.supported]
    if not found and every:
        command, script = every[0].args
        raise ReadError(f"its tests run with {every[0].runner} ({command!r} in scripts.{script}); code-gym runs "
                        f"{', '.join(RUNNERS)}")
    if not found:
        raise ReadError(f"scripts.test ({scripts['test']!r}) runs no test runner code-gym knows ({', '.join(RUNNERS)})")
    runner = found[0].runner
    args = tuple(a for i in found if i.runner == runner for a in i.args)
    paths = _paths(args)
    texts = {f: _read(root / f) for f in files}
    if runner in ("tap", "node"):  # tape tests run by a TAP harness or by node itself
        named = _matching(files, root, paths) if paths else []
        if runner == "node" and named and not any(_requires(texts[f], "tape") for f in named):
            folders = {posixpath.dirname(f) for f in named}
            named = [f for f in files if posixpath.dirname(f) in folders]  # `node test/index.js` loads its siblings
        pool = named or [f for f in files if f.split("/")[0] in TEST_DIRS]
        tests = [f for f in pool if _requires(texts[f], "tape")]
        if not tests:
            uses = "tap" if any(_requires(texts[f], "tap") for f in pool) else None
            raise ReadError(f"its tests run with {'node-tap' if uses else runner!r} ({scripts['test']!r}) and no test file "
                            f"requires tape; code-gym runs {', '.join(RUNNERS)}")
        return "tape", tests, args
    if runner == "tape":
        tests = _matching(files, root, paths) if paths else [f for f in files if f.split("/")[0] in TEST_DIRS]
    elif runner == "mocha":
        spec = paths or _mocharc_spec(root, package) or ["test"]
        tests = _matching(files, root, spec, recursive="--recursive" in args or bool(paths))
    elif runner == "jest":
        tests = [f for f in files if any(p.search(f) for p in _JEST_DEFAULTS)]
        if paths:
            tests = [f for f in tests if any(f.startswith(p.rstrip("/")) or re.search(p, f) for p in paths)]
    else:
        tests = _matching(files, root, paths) if paths else \
            [f for f in files if any(p.search(f) for p in _NODE_TEST_DEFAULTS)]
    return runner, [f for f in tests if not _is_helper(f)], args


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# -- the sources the tests reach


def _resolve(root: Path, base: str, spec: str) -> str | None:
    """The repo-relative file a relative specifier in file `base` names."""
    target = posixpath.normpath(posixpath.join(posixpath.dirname(base), spec))
    return None if target.startswith("..") else _resolve_file(root, "" if target == "." else target)


def _resolve_file(root: Path, target: str, depth: int = 0) -> str | None:
    """The file node loads for `target` (repo-relative): itself, with an extension, or as a folder
    its package.json's `main`, then its index."""
    for candidate in ([target, *(target + s for s in SCRIPT_SUFFIXES)] if target else []):
        if (root / candidate).is_file():
            return candidate
    folder = root / target
    if not folder.is_dir():
        return None
    try:
        main = json.loads((folder / "package.json").read_text()).get("main")
    except (OSError, ValueError, AttributeError):
        main = None
    if isinstance(main, str) and depth < 3:
        found = _resolve_file(root, posixpath.normpath(posixpath.join(target, main)).removeprefix("./"), depth + 1)
        if found and found != target:
            return found
    for s in SCRIPT_SUFFIXES:
        index = posixpath.join(target, "index" + s)
        if (root / index).is_file():
            return index
    return None


def reached(root: Path, start: list[str], name: str) -> set[str]:
    """The files reached from `start` through relative specifiers and the package's own name."""
    seen, todo = set(), list(start)
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for _, spec in _SPECIFIER.findall(_read(root / current)):
            if spec.startswith("."):
                found = _resolve(root, current, spec)
            elif name and (spec == name or spec.startswith(name + "/")):
                found = _resolve_file(root, spec[len(name):].lstrip("/"))
            else:
                found = None
            if found and found.endswith(SCRIPT_SUFFIXES):
                todo.append(found)
    return seen


def _is_source(rel: str, root: Path) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    if any(p in NOT_SOURCE_DIRS or p in HELPER_DIRS for p in parts[:-1]) or name.startswith("."):
        return False
    if re.search(r"\.(test|spec)\.[cm]?js$|(^|[.\-_])config\.[cm]?js$|^(gulpfile|gruntfile|karma\.conf)", name, re.I):
        return False
    return (root / rel).stat().st_size <= MAX_SOURCE_BYTES


# -- the environment


def trim_dev_dependencies(package: dict, root: Path, tests: list[str], sources: list[str], runner: str,
                      args: tuple[str, ...]) -> tuple[dict, list[str]]:
    """(package.json with only the devDependencies its tests use, the names left out). Kept: the
    runner (at a version the grader's drivers run: `runner_range`), what a test or source file requires or imports, what the runner's arguments in the
    test script (`args`) or its configuration name (`mocha -r should`, a jest preset), Babel's packages when Babel is
    configured and jest's own when jest runs."""
    dev = package.get("devDependencies")
    if not isinstance(dev, dict) or not dev:
        return package, []
    code = [_read(root / f) for f in tests + sources]
    configs = [p for p in root.iterdir() if p.is_file() and _CONFIG_FILES.match(p.name)]
    fields = {k: package[k] for k in ("jest", "mocha", "babel") if k in package}
    settings = " ".join([" ".join(args), json.dumps(fields), *(_read(p) for p in configs)])
    babel = "babel" in package or any("babel" in p.name for p in configs)
    runner_package = {"node --test": None, "mocha": "mocha", "jest": "jest", "tape": "tape"}[runner]

    def used(name: str) -> bool:
        if name == runner_package or (babel and (name.startswith("@babel/") or name.startswith("babel-"))):
            return True
        if runner == "jest" and (name.startswith("@jest/") or name.startswith("jest-")):
            return True
        return (any(_requires(text, name) for text in code)
                or re.search(rf"(^|[\s='\"]){re.escape(name)}(/|[\s'\"]|$)", settings) is not None)

    kept = {n: v for n, v in dev.items() if used(n)}
    if runner_package in kept:
        kept[runner_package] = runner_range(runner_package, kept[runner_package])
    return {**package, "devDependencies": kept}, sorted(set(dev) - set(kept))


def runner_range(name: str, wanted: str) -> str:
    """The version range of the runner package `name` the tasks install: `wanted`, or
    RUNNER_RANGES' when `wanted` may resolve below the drivers' oldest version (its lowest version
    is older, and it does not allow newer minor versions of a major that is new enough)."""
    if name not in RUNNER_RANGES:
        return wanted
    oldest, replacement = RUNNER_RANGES[name]
    match = re.search(r"(\d+)(?:\.(\d+))?", wanted)
    if match is None:
        return wanted
    lowest = (int(match.group(1)), int(match.group(2) or 0))
    caret_reaches = wanted.lstrip().startswith(("^", ">")) and lowest[0] == oldest[0]
    return wanted if lowest >= oldest or caret_reaches else replacement


# -- opening a project


def open_project(source: str | Path, workdir: Path, env_options: EnvOptions = EnvOptions(),
                 downloads: Path | None = None) -> Project:
    """Copy (or unpack, or fetch and unpack) `source` into `workdir`, find its runner, test files
    and source files, and build (or find in the cache) its environment. BuildError with the reason
    when it cannot be built from."""
    text = str(source)
    if is_npm_spec(text):
        source = npm_pack(text, downloads or workdir / "downloads")
    source = Path(source)
    if source.is_dir():
        origin = source
    elif source.is_file() and source.name.endswith(ARCHIVE_SUFFIXES):
        origin = _unpack(source, workdir / "unpacked")
    else:
        raise BuildError(f"{text}: not a package folder, a .tgz or an npm spec name@version (an exact version)")
    root = workdir / "project"
    copy_tree(origin, root, _skipped)
    try:
        package = environments.read_package_json(root)
    except TaskError as exc:
        raise BuildError(f"{text}: {exc}") from None
    if not package:
        raise BuildError(f"{text}: no package.json: the builder needs an npm package")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and p.name.endswith(SCRIPT_SUFFIXES))
    try:
        runner, tests, args = runner_and_tests(root, package, files)
    except ReadError as exc:
        raise ReadError(f"{text}: {exc}") from None
    if not tests:
        raise BuildError(f"{text}: no test files ship in the package (its tarball leaves them out, or scripts.test "
                         f"names none): the builder needs the package's tests")
    name = package.get("name") if isinstance(package.get("name"), str) else origin.name
    sources = sorted(f for f in reached(root, tests, name) if f not in tests and _is_source(f, root))
    if not sources:
        raise BuildError(f"{text}: the test files reach none of the package's own source files "
                         f"(through relative require/import or the package's name)")
    script = package["scripts"]["test"]
    dropped: list[str] = []
    for lock in ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"):
        (root / lock).unlink(missing_ok=True)  # the tasks install from package.json alone
    if env_options.test_dependencies_only:
        package, dropped = trim_dev_dependencies(package, root, tests, sources, runner, args)
        (root / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    environment = None
    if env_options.enabled:
        try:
            spec = environments.project_spec(root)
            environment = None if spec is None else environments.build_environment(spec, root)
        except EnvironmentBuildError as exc:
            why = f"npm cannot install {exc.package}: {exc.error}" if exc.package else str(exc)
            raise BuildError(f"{text}: its environment cannot be built: {why}") from None
        except TaskError as exc:
            raise BuildError(f"{text}: {exc}") from None
    return Project(task_id(name), root, tuple(tests), tuple(sources), test_command(runner, args), environment,
                   tuple(dropped), script)
