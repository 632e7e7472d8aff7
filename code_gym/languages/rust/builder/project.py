"""The crate a build starts from: a Debian package name (`librust-semver-dev`, unpacked from apt's
download with `dpkg-deb -x`: nothing of the crate runs to fetch it) or a crate folder (one with
Cargo.toml), with its test targets, its source files and its environment.

The task repository is the crate as Debian ships it at /usr/share/cargo/registry/<crate>-<version>,
less `.cargo-checksum.json` and Debian's own `debian/` folder. Its environment is the Debian
packages of every dependency cargo resolves for the crate: normal, build, dev and optional ones,
those of every target platform, with the features the manifest asks of them (`librust-serde+
derive-dev`). A dev-dependency, an optional one or a platform-specific one that Debian does not
ship is left out of the tasks' Cargo.toml (with the features that name it; recorded in the
manifest): cargo could not resolve the crate otherwise, and the tests that used it fail to build,
so their target is left out by the baseline. A missing normal or build dependency is a refusal.

Test targets are the library (`src/lib.rs`, when its module tree holds tests), binaries
(`src/main.rs`, `src/bin/*.rs`, likewise) and integration tests (`tests/*.rs`, `tests/*/main.rs`,
or the manifest's `[[test]]` paths). Source files are the `.rs` files under `src/` that are not
test code (a file a `#[cfg(test)] mod x;` declares, or one marked `#![cfg(test)]`)."""
from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from code_gym.grading.builder import BuildError
from code_gym.languages.rust import environments
from code_gym.languages.rust.builder import mutations
from code_gym.languages.rust import crates
from code_gym.tasks import debian
from code_gym.tasks.loaders.folder import copy_tree, task_id
from code_gym.tasks.task import Task, TaskError

REGISTRY = "usr/share/cargo/registry"
DEFAULT_TEST_COMMAND = "cargo test"
SKIP = frozenset({".cargo-checksum.json", "debian", "target", ".git", ".github", ".gitlab-ci.yml", ".travis.yml"})
MAX_SOURCE_BYTES = 200_000  # bigger files are generated tables: not where a task is made
_DEPENDENCY_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
_DROPPABLE = ("dev-dependencies",)  # kinds of dependency a crate's tasks can do without (besides optional ones)
_DEBIAN_PACKAGE = re.compile(r"^librust-[a-z0-9][a-z0-9.+-]*-dev$")


@dataclass(frozen=True)
class Dependency:
    """One entry of a dependency table of Cargo.toml."""
    key: str  # its name in the table (what the code calls it)
    crate: str  # the crate's own name (`package = ...` when renamed)
    requirement: str | None
    kind: str  # "dependencies", "dev-dependencies" or "build-dependencies"
    table: tuple[str, ...]  # where it sits: ("dev-dependencies",) or ("target", "cfg(windows)", "dependencies")
    optional: bool = False
    default_features: bool = True
    features: tuple[str, ...] = ()

    @property
    def droppable(self) -> bool:
        return self.optional or self.kind in _DROPPABLE or self.table[0] == "target"


@dataclass(frozen=True)
class EnvOptions:
    """How a crate's environment is made."""
    # leave out dev, optional and platform-specific dependencies Debian does not ship (their tests
    # fail to build and are left out) instead of refusing the crate
    drop_missing: bool = True
    # leave out the dev-dependencies no source or test file names (benchmark harnesses: criterion)
    test_dependencies_only: bool = True


@dataclass(frozen=True)
class Project:
    name: str  # the crate's name as a task id
    root: Path  # a private copy: the builder never touches the source
    crate: str
    version: str
    test_files: tuple[str, ...]  # target roots whose module tree holds tests
    source_files: tuple[str, ...]  # where tasks are made
    packages: tuple[str, ...]  # the Debian packages of its environment (task.toml [environment] packages)
    test_command: str = DEFAULT_TEST_COMMAND
    dropped: tuple[str, ...] = ()  # dependencies left out of Cargo.toml, "kind crate (requirement): why"
    origin: str = ""  # the Debian package, or the folder, it came from
    env: environments.RustEnvironment | None = None  # its crates as an offline directory source

    @property
    def manifest_environment(self) -> dict:
        """The manifest's account of the environment."""
        env = self.env
        return {"packages": list(self.packages), "closure": len(env.packages) if env else 0,
                "key": env.key if env else "", "cached": bool(env and env.cached),
                "build_seconds": round(env.build_seconds, 2) if env else 0.0, "dropped_dependencies": list(self.dropped)}

    @property
    def environment(self) -> dict:
        return {"packages": list(self.packages)}

    @property
    def task(self) -> Task:
        """The project as a task without a statement: what the adapter needs for the builder's own
        runs (`language.runtime(project.task)`: the environment and the target cache of the crate)."""
        # no hidden tests, in a folder of their own (the target cache's key reads the repository's files)
        return Task(id=self.name, statement="(building)", repo=self.root, hidden_dir=self.root.parent / "no-hidden",
                    visible_tests=self.test_files, hidden_tests=(), protected_paths=(), reference_patch="",
                    test_command=self.test_command, language="rust",
                    environment=environments.read_environment(self.environment, self.root / "Cargo.toml"))


# -- the source: a Debian package or a crate folder


def is_debian_package(text: str) -> bool:
    return bool(_DEBIAN_PACKAGE.match(text)) and not Path(text).exists()


def unpack_package(name: str, workdir: Path, index: debian.Index | None = None) -> Path:
    """The crate folder Debian package `name` ships, unpacked under `workdir`."""
    index = index or debian.index(crates.FAMILY)
    package = index.provider(name)
    if package is None:
        raise BuildError(f"{name}: no such Debian package ({index.describe(name)})")
    try:
        folder = debian.extract([package], workdir / "unpacked")
    except debian.DebianError as exc:
        raise BuildError(f"{name}: {exc}") from None
    manifests = sorted((folder / REGISTRY).glob("*/Cargo.toml")) if (folder / REGISTRY).is_dir() else []
    if len(manifests) != 1:
        raise BuildError(f"{name}: {package} ships {len(manifests)} crates under /{REGISTRY} (expected one): is it a "
                         "librust-*-dev package?")
    return manifests[0].parent


def _skipped(rel: str) -> bool:
    return rel in SKIP


# -- the manifest's dependencies


def read_manifest(root: Path) -> dict:
    try:
        return tomllib.loads((root / "Cargo.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BuildError(f"{root}: no Cargo.toml: the builder needs a crate") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BuildError(f"{root}/Cargo.toml does not parse: {exc}") from None


def dependencies(manifest: Mapping) -> list[Dependency]:
    """Every dependency of the manifest: the three tables at the top and under each `[target.X]`."""
    places = [((kind,), manifest.get(kind)) for kind in _DEPENDENCY_TABLES]
    for platform, tables in (manifest.get("target") or {}).items():
        places += [(("target", platform, kind), tables.get(kind)) for kind in _DEPENDENCY_TABLES]
    found = []
    for table, entries in places:
        for key, spec in (entries or {}).items():
            spec = {"version": spec} if isinstance(spec, str) else dict(spec)
            if "path" in spec or "git" in spec:
                raise BuildError(f"dependency {key} comes from a {'path' if 'path' in spec else 'git repository'}: "
                                 "the builder takes crates whose dependencies are all crates")
            found.append(Dependency(key, spec.get("package", key), spec.get("version"), table[-1], table,
                                    bool(spec.get("optional")),
                                    spec.get("default-features", spec.get("default_features", True)) is not False,
                                    tuple(spec.get("features") or ())))
    return found


def _feature_requests(manifest: Mapping) -> dict[str, set[str]]:
    """The features the crate's own [features] ask of its dependencies: key -> features
    (`std = ["serde/std", "log?/std"]`)."""
    asked: dict[str, set[str]] = {}
    for items in (manifest.get("features") or {}).values():
        for item in items:
            dep, slash, feature = item.partition("/")
            if slash:
                asked.setdefault(dep.rstrip("?").removeprefix("dep:"), set()).add(feature)
    return asked


def _feature(package: debian.Package, feature: str, index: debian.Index) -> debian.Package:
    """The package of a crate feature; for `default`, the crate's own when Debian has no package of
    that name (the crate's default features need nothing more, or cargo's resolution says what)."""
    try:
        return crates.feature_package(package, feature, index)
    except debian.DebianError:
        if feature == "default":
            return package
        raise


def named_in(code: str, key: str) -> bool:
    """Whether Rust `code` names the crate a dependency table calls `key` (`foo-bar` is `foo_bar`)."""
    name = re.escape(key.replace("-", "_"))
    return re.search(rf"\b{name}\s*::|\bextern\s+crate\s+{name}\b|\buse\s+{name}\b|\b{name}!", code) is not None


def resolve_packages(manifest: Mapping, index: debian.Index, drop_missing: bool = True, test_code: str | None = None
                     ) -> tuple[list[str], list[Dependency], dict[str, str]]:
    """(the Debian packages of the crate's dependencies, with their features; the dependencies left
    out; why each was). With `test_code` (the crate's sources and tests), the dev-dependencies it
    does not name are left out too (benchmark harnesses, publishing checks: compiled for every test
    build, used by none). BuildError naming the first dependency Debian cannot give that the crate
    cannot do without."""
    asked = _feature_requests(manifest)
    names: list[str] = []
    dropped: list[Dependency] = []
    why: dict[str, str] = {}
    for dep in dependencies(manifest):
        if test_code is not None and dep.kind == "dev-dependencies" and not named_in(test_code, dep.key):
            dropped.append(dep)
            why[dep.key] = "no test or source file names it"
            continue
        try:
            package = crates.crate_package(dep.crate, dep.requirement, index)
            wanted = [package] + [_feature(package, f, index) for f in (["default"] if dep.default_features else []) +
                                  list(dep.features) + sorted(asked.get(dep.key, ()))]
        except debian.DebianError as exc:
            if drop_missing and dep.droppable:
                dropped.append(dep)
                why[dep.key] = str(exc)
                continue
            raise BuildError(f"the {dep.kind[:-len('-dependencies')] or 'normal'} dependency {dep.crate} "
                             f"{dep.requirement or ''}: {exc}".replace("dependencies dependency", "dependency")) from None
        names = list(dict.fromkeys(names + [p.name for p in wanted]))
    try:
        debian.closure(names, index)
    except debian.DebianError as exc:
        raise BuildError(f"the dependencies' Debian packages do not resolve: {exc}") from None
    return names, dropped, why


def without(manifest: dict, dropped: list[Dependency]) -> dict:
    """The manifest with the `dropped` dependencies and the features items naming them left out."""
    out = json.loads(json.dumps(manifest))
    for dep in dropped:
        table = out
        for part in dep.table:
            table = table.get(part, {})
        table.pop(dep.key, None)
    gone = {d.key for d in dropped} - {d.key for d in dependencies(out)}
    if gone and "features" in out:
        out["features"] = {name: [i for i in items if _named(i) not in gone] for name, items in out["features"].items()}
    return out


def _named(item: str) -> str:
    """The dependency a features item names: `serde`, `dep:serde`, `serde/std`, `serde?/std`."""
    return item.partition("/")[0].rstrip("?").removeprefix("dep:")


# Cargo.toml text: cargo's own normalized layout (keys with dotted headers), read back to check it
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to Cargo.toml")


def _tables(data: Mapping, path: tuple[str, ...]) -> list[str]:
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and not
               (isinstance(v, list) and v and all(isinstance(i, dict) for i in v))}
    lines = [f"{_key(k)} = {_value(v)}" for k, v in scalars.items()]
    out = ([f"[{'.'.join(map(_key, path))}]"] if path and (lines or not data) else []) + lines
    for k, v in data.items():
        if isinstance(v, dict):
            out += ([""] if out else []) + _tables(v, path + (k,))
        elif k not in scalars:
            for item in v:
                out += ["", f"[[{'.'.join(map(_key, path + (k,)))}]]"] + [f"{_key(a)} = {_value(b)}"
                                                                       for a, b in item.items()]
    return out


def dump_cargo_toml(manifest: Mapping) -> str:
    text = "\n".join(_tables(manifest, ())) + "\n"
    if tomllib.loads(text) != json.loads(json.dumps(manifest)):
        raise AssertionError("Cargo.toml writer lost information")  # a bug here, not bad input
    return text


# -- test targets and source files


def _module_files(root: Path, path: str, name: str) -> list[str]:
    """The files `mod name;` in file `path` may load (`name.rs`, `name/mod.rs`, beside a lib.rs,
    main.rs or mod.rs, else in the folder named after the file)."""
    folder = posixpath.dirname(path)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if stem not in ("lib", "main", "mod") and not path.startswith("src/bin/"):
        folder = posixpath.join(folder, stem)
    return [f for f in (posixpath.join(folder, f"{name}.rs"), posixpath.join(folder, name, "mod.rs"))
            if (root / f).is_file()]


def _text(root: Path, rel: str) -> str:
    try:
        return (root / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def files_of_test_code(root: Path, files: list[str]) -> set[str]:
    """The files of `files` that only test code loads: declared by a `#[cfg(test)] mod x;` (and
    the files those declare), or marked `#![cfg(test)]`."""
    found: set[str] = set()
    todo = []
    for path in files:
        text = _text(root, path)
        if mutations.is_test_file(text):
            found.add(path)
        todo += [f for name in mutations.test_modules(text) for f in _module_files(root, path, name)]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        todo += [f for name in mutations.declared_modules(_text(root, path)) for f in _module_files(root, path, name)]
    return found


def _has_tests(text: str) -> bool:
    return re.search(r"#\[\s*(test|tokio::test)\s*\]", text) is not None


def targets_with_tests(root: Path, manifest: Mapping, sources: list[str]) -> list[str]:
    """The target roots whose code holds tests."""
    targets = []
    src = [f for f in sources if f.startswith("src/")]
    if (root / "src/lib.rs").is_file() and any(_has_tests(_text(root, f)) for f in src if not f.startswith("src/bin/")):
        targets.append("src/lib.rs")
    for binary in ["src/main.rs", *sorted(f for f in src if f.startswith("src/bin/") and f.count("/") == 2)]:
        if (root / binary).is_file() and _has_tests(_text(root, binary)):
            targets.append(binary)
    declared = [t["path"] for t in manifest.get("test") or () if isinstance(t.get("path"), str)]
    automatic = [] if (manifest.get("package") or {}).get("autotests") is False else sorted(
        p.relative_to(root).as_posix() for p in [*(root / "tests").glob("*.rs"), *(root / "tests").glob("*/main.rs")])
    for path in dict.fromkeys(declared + automatic):
        if (root / path).is_file() and _has_tests(_text(root, path)):
            targets.append(path)
    return targets


# -- opening a project


def open_project(source: str | Path, workdir: Path, env_options: EnvOptions = EnvOptions(),
                 index: debian.Index | None = None) -> Project:
    """Copy (or unpack from Debian) the crate `source` into `workdir`, find its test targets,
    source files and the Debian packages of its dependencies, and write its Cargo.lock (cargo's
    offline resolution against those packages). BuildError with the reason when it cannot be built
    from."""
    text = str(source)
    index = index or debian.index(crates.FAMILY)
    if is_debian_package(text):
        origin = unpack_package(text, workdir, index)
    elif Path(source).is_dir():
        origin = Path(source)
    else:
        raise BuildError(f"{text}: not a crate folder (with Cargo.toml) or a Debian package librust-*-dev")
    root = workdir / "project"
    copy_tree(origin, root, _skipped)
    manifest = read_manifest(root)
    package = manifest.get("package") or {}
    if "workspace" in manifest and not package:
        raise BuildError(f"{text}: Cargo.toml is a workspace: pass one of its crates")
    crate, version = package.get("name"), package.get("version", "")
    if not isinstance(crate, str):
        raise BuildError(f"{text}: Cargo.toml names no [package] name")
    code = "\n".join(_text(root, p.relative_to(root).as_posix()) for folder in ("src", "tests")
                     for p in sorted((root / folder).rglob("*.rs")))
    packages, dropped, why = resolve_packages(manifest, index, env_options.drop_missing,
                                              code if env_options.test_dependencies_only else None)
    if dropped:
        (root / "Cargo.toml").write_text(dump_cargo_toml(without(manifest, dropped)), encoding="utf-8")
        manifest = read_manifest(root)
    (root / "Cargo.lock").unlink(missing_ok=True)
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rs") if p.is_file())
    src = [f for f in files if f.startswith("src/")]
    tests_only = files_of_test_code(root, src)
    targets = targets_with_tests(root, manifest, files)
    if not targets:
        raise BuildError(f"{text}: no test in the crate (no #[test] in src/ or tests/): the builder needs its tests")
    sources = [f for f in src if f not in tests_only and (root / f).stat().st_size <= MAX_SOURCE_BYTES]
    if not sources:
        raise BuildError(f"{text}: no source file under src/ besides test code")
    notes = tuple(f"{d.kind} {d.crate} {d.requirement or '*'}: {why[d.key]}" for d in dropped)
    project = Project(task_id(crate), root, crate, version, tuple(targets), tuple(sources), tuple(packages),
                      dropped=notes, origin=text)
    try:
        env = environments.task_environment(project.task)
        environments.generate_lockfile(root, env)
    except TaskError as exc:
        raise BuildError(f"{text}: the environment of its dependencies cannot be made: {exc}") from None
    return replace(project, env=env)
