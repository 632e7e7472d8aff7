"""The Go source tree a build starts from: a Debian package (`golang-github-google-go-cmp-dev`,
fetched with `apt-get download` and unpacked with `dpkg-deb -x`: no maintainer script runs), or a
local folder holding an import path's tree (`FOLDER/github.com/google/go-cmp/...`, as a GOPATH's
src/ or /usr/share/gocode/src holds it). Its test files, its source files and its environment.

The task repository is one import path's tree: the package's Go-Import-Path, else the folder
reached by going down the tree while it holds a single folder and no file. A package that ships
several import paths side by side is refused (tasks are made of one).

The environment is the Debian packages the code needs: the package's Depends closure (without
itself), and for each import of the repository's files that no package of it ships (test-only
dependencies: testify, go-cmp, ...), the package that ships it (`go_packages.import_path_package`) and
its closure. An import no Debian package ships is left out and recorded: the test packages that
need it fail to build in the baseline and are left out there."""
from __future__ import annotations

import posixpath
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from code_gym import languages
from code_gym.grading.builder import BuildError
from code_gym.languages.go.source import is_standard
from code_gym.languages.go import packages as go_packages
from code_gym.tasks import debian
from code_gym.tasks.loaders.folder import copy_tree, task_id
from code_gym.tasks.task import Task, TaskError

DEBIAN_NAME = re.compile(r"^golang-[a-z0-9][a-z0-9.+-]*-dev$")
MAX_SOURCE_BYTES = 200_000  # bigger files are tables or generated code: not where a task is made
# folders the go tool ignores (testdata, _x, .x) and folders of other code (vendored, examples)
SKIP_DIRS = frozenset({"testdata", "vendor", ".git", "examples", "example", "_examples"})
_GENERATED = re.compile(r"^// Code generated .* DO NOT EDIT\.$", re.M)
_IMPORT_BLOCK = re.compile(r"^import\s*\(\s*\n(.*?)^\)", re.M | re.S)
_IMPORT_LINE = re.compile(r"^import\s+(?:[\w.]+\s+)?\"([^\"]+)\"", re.M)
_QUOTED = re.compile(r"\"([^\"]+)\"")


@dataclass(frozen=True)
class EnvOptions:
    """How a package's environment is made."""
    test_dependencies: bool = True  # add the packages that ship what the test files import beyond Depends
    max_lookups: int = 8  # imports looked up in Debian's packages (each may download a few .debs)


@dataclass(frozen=True)
class Project:
    name: str
    root: Path  # a private copy of the import path's tree: the builder never touches the source
    import_path: str  # "github.com/google/go-cmp"
    packages: tuple[str, ...]  # the Debian packages of its environment (task.toml [environment] packages)
    test_files: tuple[str, ...]  # repo-relative *_test.go files
    source_files: tuple[str, ...]  # repo-relative non-test .go files: where tasks are made
    test_command: str
    package: str = ""  # the Debian package it came from ("" for a folder)
    version: str = ""
    unresolved: tuple[str, ...] = ()  # imports no Debian package ships
    added: tuple[str, ...] = ()  # packages added for imports beyond Depends

    @property
    def environment(self) -> dict:
        """task.toml's [environment] table."""
        return {"import_path": self.import_path, "packages": list(self.packages)}

    @property
    def task(self) -> Task:
        """The project as a task without a statement: what the adapter needs for the builder's own
        runs (`language.runtime(project.task)`: the environment its packages make)."""
        where = self.root / "task.toml"
        try:
            environment = languages.get("go").read_environment(self.environment, where)
        except TaskError as exc:
            raise BuildError(f"{self.name}: its environment cannot be read: {exc}") from None
        return Task(id=self.name, statement="(building)", repo=self.root, hidden_dir=self.root,
                    visible_tests=self.test_files, hidden_tests=(), protected_paths=(), reference_patch="",
                    test_command=self.test_command, language="go", environment=environment)

    @property
    def manifest_environment(self) -> dict:
        return {**self.environment, "added_for_tests": list(self.added), "unresolved_imports": list(self.unresolved)}


def is_debian_name(text: str) -> bool:
    return bool(DEBIAN_NAME.match(text)) and not Path(text).exists()


# -- the import path's tree


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in SKIP_DIRS or p.startswith(("_", ".")) for p in parts)


def import_path_root(src: Path, hint: str = "") -> str:
    """The one import path a GOPATH src folder holds: `hint` (a package's Go-Import-Path) when its
    folder is there, else the folder reached going down while there is one folder and no file:
    three elements deep (host/owner/repository) or holding a file of its own (a folder of folders
    higher up holds several import paths)."""
    if hint and (src / hint).is_dir():
        root = hint.strip("/") + "/"
        others = sorted({d for p in src.rglob("*.go") if not ((d := posixpath.dirname(p.relative_to(src).as_posix()))
                                                               + "/").startswith(root)})
        if others:
            raise BuildError(f"{src}: holds other import paths beside {hint} ({', '.join(others[:3])}): a task is "
                             "made of one")
        return hint.strip("/")
    parts: list[str] = []
    here = src
    while True:
        entries = [e for e in here.iterdir() if not e.name.startswith(".")]
        folders = [e for e in entries if e.is_dir() and not e.is_symlink()]
        if len(entries) == 1 and len(folders) == 1:
            parts.append(folders[0].name)
            here = folders[0]
            continue
        break
    if not any(here.rglob("*.go")):
        raise BuildError(f"{src}: no Go files under it")
    if not parts or (len(parts) < 3 and not any(e.is_file() for e in here.iterdir())):
        names = ", ".join(sorted(e.name for e in here.iterdir())[:6])
        raise BuildError(f"{src}: holds several import paths side by side ({names}): a task is made of one; "
                         "pass a folder holding one import path's tree")
    return "/".join(parts)


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.go")
                  if p.is_file() and not _skipped(p.relative_to(root).as_posix()))


def _is_source(root: Path, rel: str) -> bool:
    path = root / rel
    if rel.endswith("_test.go") or path.stat().st_size > MAX_SOURCE_BYTES:
        return False
    return not _GENERATED.search(path.read_text(encoding="utf-8", errors="replace")[:4000])


def file_imports(text: str) -> set[str]:
    """The import paths a Go file names (its import declarations, read without parsing the file)."""
    head = text.split("\nfunc ", 1)[0]
    found = set(_IMPORT_LINE.findall(head))
    for block in _IMPORT_BLOCK.findall(head):
        found |= set(_QUOTED.findall(block))
    return found


# -- the environment


@lru_cache(maxsize=512)
def _shipped(deb: Path) -> frozenset[str]:
    """The import paths (folders holding .go files) a .deb ships under /usr/share/gocode/src."""
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, timeout=120).stdout
    prefix = f"./{go_packages.GOCODE}/"
    found = set()
    for line in listing.splitlines():
        path = line.rsplit(" ", 1)[-1]
        if path.startswith(prefix) and path.endswith(".go"):
            found.add(posixpath.dirname(path[len(prefix):]))
    return frozenset(found)


def _provided(packages: list[debian.Package]) -> set[str]:
    return {path for deb in debian.download(packages) for path in _shipped(deb)}


def environment_packages(package: debian.Package | None, import_path: str, imports: set[str],
                         options: EnvOptions) -> tuple[list[str], list[str], list[str]]:
    """(the environment's packages, those added for imports beyond Depends, the imports no package
    ships) of a repository at `import_path` whose files import `imports`."""
    index = debian.index(go_packages.FAMILY)
    wanted = [package.name] if package is not None else []
    try:
        chosen = debian.closure(wanted, index) if wanted else []
    except debian.DebianError as exc:
        raise BuildError(f"{package}: its dependencies cannot be resolved: {exc}") from None
    outside = sorted(i for i in imports if not is_standard(i) and i != import_path
                     and not i.startswith(import_path + "/"))
    provided = _provided(chosen)
    added, unresolved, lookups = [], [], 0
    for path in outside:
        if path in provided:
            continue
        if not options.test_dependencies or lookups >= options.max_lookups:
            unresolved.append(path)
            continue
        lookups += 1
        try:
            found = go_packages.import_path_package(path, index)
            more = debian.closure([p.name for p in chosen] + [found.name], index)
        except debian.DebianError:
            unresolved.append(path)
            continue
        added.append(found.name)
        chosen = more
        provided = _provided(chosen)
    own = {package.name} if package is not None else set()
    return sorted(p.name for p in chosen if p.name not in own), added, unresolved


# -- opening a project


def _short_name(import_path: str) -> str:
    parts = import_path.split("/")
    last = parts[-1]
    if (re.fullmatch(r"v[0-9]+", last) or len(last) <= 3) and len(parts) > 1:
        return task_id("-".join(parts[-2:]))
    return task_id(last)


def unpack(name: str, folder: Path) -> tuple[debian.Package, Path]:
    """The Debian package `name` (its newest version apt knows) and the folder it is unpacked into
    (`folder/NAME_VERSION`, reused when there)."""
    try:
        package = debian.index(go_packages.FAMILY).provider(name)
        if package is None or package.name != name:
            raise BuildError(f"{name}: no such Debian package (apt-cache knows none by this name; "
                             "run apt-get update?)")
        return package, debian.extract([package], folder / f"{package.name}_{package.version}")
    except debian.DebianError as exc:
        raise BuildError(f"{name}: {exc}") from None


def open_project(source: str | Path, workdir: Path, env_options: EnvOptions = EnvOptions(),
                 downloads: Path | None = None, test_command: str = "") -> Project:
    """Copy `source` (a Debian package name, or a folder holding an import path's tree) into
    `workdir`, find its test files and sources, and the Debian packages of its environment.
    BuildError with the reason when it cannot be built from."""
    text = str(source)
    package = None
    if is_debian_name(text):
        package, unpacked = unpack(text, downloads or workdir / "downloads")
        src = unpacked / go_packages.GOCODE
        if not src.is_dir():
            raise BuildError(f"{text}: ships no Go source under /{go_packages.GOCODE}")
        hint = package.go_import_path
    elif Path(text).is_dir():
        src, hint = Path(text), ""
        for inner in (go_packages.GOCODE, "src"):
            if (src / inner).is_dir():
                src = src / inner
                break
    else:
        raise BuildError(f"{text}: not a Debian package name (golang-*-dev) or a folder holding an import path's tree")
    import_path = import_path_root(src, hint)
    root = workdir / "project"
    copy_tree(src / import_path, root, _skipped)
    files = _files(root)
    tests = [f for f in files if f.endswith("_test.go")]
    if not tests:
        raise BuildError(f"{text}: no _test.go files in {import_path}: the builder needs the package's tests")
    sources = [f for f in files if _is_source(root, f)]
    if not sources:
        raise BuildError(f"{text}: no Go source files beside its tests in {import_path}")
    imports = set().union(*(file_imports((root / f).read_text(encoding="utf-8", errors="replace")) for f in files))
    packages, added, unresolved = environment_packages(package, import_path, imports, env_options)
    command = test_command or languages.get("go").default_test_command
    return Project(_short_name(import_path), root, import_path, tuple(packages), tuple(tests), tuple(sources),
                   command, package.name if package else "", package.version if package else "",
                   tuple(unresolved), tuple(added))
