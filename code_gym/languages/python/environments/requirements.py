"""What a project needs installed to run its tests, read statically from its own files.

Nothing of the project runs here: pyproject.toml, setup.cfg, tox.ini and pytest.ini are parsed as
data, setup.py and noxfile.py as Python syntax trees (only literal values count), requirements files
line by line, and test files are scanned for the imports and fixtures of common pytest plugins.
Every requirement is checked with `packaging` (PEP 508); the project itself (by its distribution
name, with or without extras) is never a requirement: its repository copy is what tests import.
"""
from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from code_gym.languages.python import source as pysource
from code_gym.languages.python.environments.spec import BASE_REQUIREMENTS
from code_gym.tasks.task import TaskError

# the distributions the grader itself runs inside every environment (BASE_REQUIREMENTS): a project's
# own requirement on one (wcwidth pins pytest==7.4.2 in its tox deps) is replaced by the grader's
GRADER_DISTRIBUTIONS = {canonicalize_name(Requirement(r).name): r for r in BASE_REQUIREMENTS}
# what pytest 8 and 9 themselves require (their pins in a project's lock file are relaxed with its pytest)
PYTEST_DEPENDENCIES = frozenset({"pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "colorama", "pygments"})
# extras and dependency groups that hold what a project's tests need ("dev" only when none of these)
TEST_EXTRAS = ("test", "tests", "testing")
DEV_EXTRAS = ("dev", "develop", "development")
_REQUIREMENT_FILES = ("requirements.txt", "requirements-test.txt", "requirements-tests.txt", "requirements_test.txt",
                      "requirements-testing.txt", "test-requirements.txt", "test_requirements.txt",
                      "requirements/test.txt", "requirements/tests.txt", "requirements/testing.txt",
                      "requirements/base.txt", "tests/requirements.txt")
_DEV_REQUIREMENT_FILES = ("requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt", "requirements/dev.txt")
_SCAN_SKIP = frozenset({".git", ".tox", ".nox", ".venv", "venv", "node_modules", "build", "dist", "__pycache__"})
# what a test suite's code names -> the plugin distribution that provides it
_IMPORTS = {"hypothesis": "hypothesis", "pytest_asyncio": "pytest-asyncio", "pytest_mock": "pytest-mock",
            "trio": "trio", "pytest_trio": "pytest-trio", "anyio": "anyio", "freezegun": "freezegun",
            "hypothesmith": "hypothesmith", "mock": "mock", "pretend": "pretend", "parameterized": "parameterized",
            "responses": "responses", "testfixtures": "testfixtures"}
_MARKERS = {"asyncio": "pytest-asyncio", "timeout": "pytest-timeout", "trio": "pytest-trio",
            "benchmark": "pytest-benchmark", "flaky": "flaky", "xdist_group": "pytest-xdist"}
_FIXTURES = {"mocker": "pytest-mock", "benchmark": "pytest-benchmark", "httpserver": "pytest-httpserver",
             "freezer": "pytest-freezer", "datadir": "pytest-datadir"}
# pytest ini keys and command-line options -> the plugin that defines them
_INI_KEYS = {"asyncio_mode": "pytest-asyncio", "asyncio_default_fixture_loop_scope": "pytest-asyncio",
             "timeout": "pytest-timeout", "timeout_method": "pytest-timeout", "mock_use_standalone_module": "pytest-mock",
             "env": "pytest-env", "trio_mode": "pytest-trio"}
_OPTIONS = {"-n": "pytest-xdist", "--numprocesses": "pytest-xdist", "--dist": "pytest-xdist", "--cov": "pytest-cov",
            "--timeout": "pytest-timeout", "--benchmark-skip": "pytest-benchmark", "--benchmark-disable": "pytest-benchmark",
            "--reruns": "pytest-rerunfailures", "--doctest-rst": "pytest-doctestplus", "--mypy": "pytest-mypy"}
_PLUGIN_NAMES = {"xdist": "pytest-xdist", "pytest_cov": "pytest-cov", "timeout": "pytest-timeout",
                 "asyncio": "pytest-asyncio", "pytest_asyncio": "pytest-asyncio", "pytest_mock": "pytest-mock",
                 "hypothesis": "hypothesis", "anyio": "anyio", "trio": "pytest-trio"}


@dataclass(frozen=True)
class Requirements:
    """A project's requirement set: PEP 508 strings, normalized and sorted, with where each came from."""
    project: str | None  # the distribution name the project declares (never installed from an index)
    requirements: tuple[str, ...]
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)  # requirement -> files naming it
    skipped: tuple[str, ...] = ()  # lines that name no index package (paths, URLs, options), with their file


class _Collector:
    def __init__(self, root: Path):
        self.root = root
        self.project: str | None = None
        self.found: dict[str, Requirement] = {}
        self.sources: dict[str, set[str]] = {}
        self.skipped: list[str] = []

    def add(self, text: str, where: str) -> None:
        text = text.split(" #", 1)[0].strip()
        if not text or text.startswith("#"):
            return
        try:
            req = Requirement(text)
        except InvalidRequirement:
            self.skipped.append(f"{where}: {text}")
            return
        if req.url:
            self.skipped.append(f"{where}: {text} (a URL: not installed)")
            return
        name = canonicalize_name(req.name)
        if self.project and name == canonicalize_name(self.project):
            return  # the project itself, e.g. "pkg[test]" in its own extras (expanded by the caller)
        if name in GRADER_DISTRIBUTIONS:
            self.skipped.append(f"{where}: {text} (replaced by the grader's {GRADER_DISTRIBUTIONS[name]}: its results "
                                "plugin, warm runner and coverage tracer run on the environment's pytest and coverage)")
            return
        key = str(req)
        self.found.setdefault(key, req)
        self.sources.setdefault(key, set()).add(where)

    def add_all(self, texts, where: str) -> None:
        for text in texts:
            if isinstance(text, str):
                self.add(text, where)

    def relax_pytest_pins(self) -> None:
        """After a project's own pytest was replaced: its pins of pytest's dependencies (a lock file
        made with pytest 7 pins pluggy 1.2, "# via pytest", which pytest 8 cannot use) keep the name
        and lose the version, so the resolver picks what the grader's pytest needs."""
        if not any("replaced by the grader's pytest" in s for s in self.skipped):
            return
        for key, req in list(self.found.items()):
            if canonicalize_name(req.name) in PYTEST_DEPENDENCIES and req.specifier:
                loose = Requirement(str(req))
                loose.specifier = SpecifierSet()
                where = self.sources.pop(key)
                del self.found[key]
                self.skipped.append(f"{', '.join(sorted(where))}: {key} (relaxed to {loose}: a pin of a dependency "
                                    "of the pytest it replaces)")
                self.found.setdefault(str(loose), loose)
                self.sources.setdefault(str(loose), set()).update(where)

    def result(self) -> Requirements:
        self.relax_pytest_pins()
        keys = sorted(self.found, key=lambda k: (canonicalize_name(self.found[k].name), k))
        return Requirements(self.project, tuple(keys), {k: tuple(sorted(self.sources[k])) for k in keys},
                            tuple(dict.fromkeys(self.skipped)))


def _chosen(table: dict) -> list:
    """The entries of `table` named like test extras; dev ones when there is no test one."""
    picked = [v for k, v in table.items() if canonicalize_name(k) in TEST_EXTRAS]
    return picked or [v for k, v in table.items() if canonicalize_name(k) in DEV_EXTRAS]


def _self_extras(values: list, project: str | None) -> set[str]:
    """Extras the project names of itself ("pkg[test,speedups]")."""
    extras = set()
    for text in values:
        try:
            req = Requirement(text) if isinstance(text, str) else None
        except InvalidRequirement:
            continue
        if req and project and canonicalize_name(req.name) == canonicalize_name(project):
            extras |= set(req.extras)
    return extras


def _extras(c: _Collector, extras: dict, where: str) -> None:
    wanted = [v for v in _chosen(extras) if isinstance(v, list)]
    values = [x for v in wanted for x in v]
    for extra in _self_extras(values, c.project):
        values += extras.get(extra, []) if isinstance(extras.get(extra), list) else []
    c.add_all(values, where)


def _pyproject(c: _Collector) -> dict:
    path = c.root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except tomllib.TOMLDecodeError:
        c.skipped.append("pyproject.toml: not valid TOML")
        return {}
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    c.project = project.get("name") if isinstance(project.get("name"), str) else c.project
    c.add_all(project.get("dependencies", []) or [], "pyproject.toml [project] dependencies")
    if isinstance(project.get("optional-dependencies"), dict):
        _extras(c, project["optional-dependencies"], "pyproject.toml [project.optional-dependencies]")
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for group in _chosen(groups):
            for entry in group if isinstance(group, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
                    entry = groups.get(entry["include-group"], [])
                c.add_all(entry if isinstance(entry, list) else [entry], "pyproject.toml [dependency-groups]")
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    _tool_tables(c, tool)
    return data


def _table(data: dict, *keys: str) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _poetry_requirement(name: str, spec) -> str | None:
    """A PEP 508 string for a Poetry dependency ("^1.2" and "~1.2" become lower bounds: a test
    environment needs a working version, not Poetry's upper bounds); None for `python`, optional
    ones and path, git or URL dependencies."""
    if isinstance(spec, dict):
        if spec.get("optional") or any(k in spec for k in ("path", "git", "url", "file")):
            return None
        extras = [e for e in spec.get("extras", []) if isinstance(e, str)] if isinstance(spec.get("extras"), list) else []
        name = f"{name}[{','.join(extras)}]" if extras else name
        spec = spec.get("version", "*")
    if name.lower() == "python" or not isinstance(spec, str):  # the interpreter's version, not a package
        return None
    version = spec.strip()
    if version in ("", "*"):
        return name
    if version[0] in "^~" and version[1:2] != "=":
        return f"{name}>={version[1:].strip()}"
    return f"{name}{version}" if version[0] in "<>=!~" else f"{name}=={version}"


def _tool_tables(c: _Collector, tool: dict) -> None:
    """Poetry, PDM and Hatch test dependencies, and setuptools' dependencies read from files."""
    poetry = _table(tool, "poetry")
    tables = [("tool.poetry.dependencies", _table(poetry, "dependencies")),
              ("tool.poetry.dev-dependencies", _table(poetry, "dev-dependencies"))]
    tables += [(f"tool.poetry.group.{name}.dependencies", _table(group, "dependencies"))
               for name, group in _table(poetry, "group").items() if canonicalize_name(name) in TEST_EXTRAS + DEV_EXTRAS]
    for where, table in tables:
        for name, spec in table.items():
            text = _poetry_requirement(name, spec)
            if text is not None:
                c.add(text, f"pyproject.toml [{where}]")
    hatch = {k: v.get("dependencies") for k, v in _table(tool, "hatch", "envs").items() if isinstance(v, dict)}
    for where, table in (("tool.pdm.dev-dependencies", _table(tool, "pdm", "dev-dependencies")), ("tool.hatch.envs", hatch)):
        lists = {k: v for k, v in table.items() if isinstance(v, list)}
        for value in _chosen(lists) or ([lists["default"]] if "default" in lists else []):
            c.add_all(value, f"pyproject.toml [{where}]")
    dynamic = _table(tool, "setuptools", "dynamic")
    entries = [_table(dynamic, "dependencies")] + [v for k, v in _table(dynamic, "optional-dependencies").items()
                                                   if canonicalize_name(k) in TEST_EXTRAS and isinstance(v, dict)]
    for entry in entries:
        files = entry.get("file", [])
        for rel in [files] if isinstance(files, str) else files if isinstance(files, list) else []:
            if isinstance(rel, str):
                _requirements_file(c, rel, set())


def _ini(path: Path) -> configparser.ConfigParser | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(path.read_text(errors="replace"))
    except (configparser.Error, OSError):
        return None
    return parser


def _lines(value: str) -> list[str]:
    """A multi-line setup.cfg value, one requirement a line (";" starts a marker, not a new entry)."""
    return [line.strip() for line in value.splitlines() if line.strip()]


def _setup_cfg(c: _Collector) -> None:
    parser = _ini(c.root / "setup.cfg") if (c.root / "setup.cfg").is_file() else None
    if parser is None:
        return
    if parser.has_option("metadata", "name") and not c.project:
        c.project = parser.get("metadata", "name").strip()
    for key in ("install_requires", "tests_require"):
        if parser.has_option("options", key):
            c.add_all(_lines(parser.get("options", key)), f"setup.cfg [options] {key}")
    if parser.has_section("options.extras_require"):
        extras = {k: _lines(v) for k, v in parser.items("options.extras_require")}
        _extras(c, extras, "setup.cfg [options.extras_require]")


def _literal(node: ast.AST, names: dict[str, ast.AST]):
    """The literal value of `node`, following module-level names assigned once; None if not literal."""
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, (ast.List, ast.Tuple)):  # a list mixing literals and names of literal lists
        out = []
        for elt in node.elts:
            value = _literal(elt, names) if not isinstance(elt, ast.Starred) else _literal(elt.value, names)
            out += value if isinstance(value, list) else [value] if isinstance(value, str) else []
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, names), _literal(node.right, names)
        return left + right if isinstance(left, list) and isinstance(right, list) else None
    if isinstance(node, ast.Dict):
        keys = [_literal(k, names) if k is not None else None for k in node.keys]
        values = [_literal(v, names) for v in node.values]
        return {k: v for k, v in zip(keys, values) if isinstance(k, str)}
    return None


def _parse_python(path: Path) -> ast.Module | None:
    try:
        return pysource.parse(path.read_text(errors="replace"), str(path))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _setup_py(c: _Collector) -> None:
    tree = _parse_python(c.root / "setup.py") if (c.root / "setup.py").is_file() else None
    if tree is None:
        return
    names = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        called = getattr(func, "id", None) or getattr(func, "attr", None)
        if not isinstance(node, ast.Call) or called != "setup":
            continue
        for kw in node.keywords:
            value = _literal(kw.value, names) if kw.arg else None
            if kw.arg == "name" and isinstance(value, str) and not c.project:
                c.project = value
            elif kw.arg in ("install_requires", "tests_require") and isinstance(value, (list, tuple)):
                c.add_all(value, f"setup.py {kw.arg}")
            elif kw.arg == "extras_require" and isinstance(value, dict):
                _extras(c, {k: list(v) if isinstance(v, (list, tuple)) else [v] for k, v in value.items()},
                        "setup.py extras_require")


def _requirements_file(c: _Collector, rel: str, seen: set[str]) -> None:
    path = (c.root / rel)
    if rel in seen or not path.is_file() or not path.resolve().is_relative_to(c.root.resolve()):
        return
    seen.add(rel)
    for line in path.read_text(errors="replace").splitlines():
        line = line.split(" #", 1)[0].strip()
        option, _, argument = line.partition(" ")
        if not line or line.startswith("#"):
            continue
        if option in ("-r", "--requirement") or (option.startswith("-r") and len(option) > 2):
            _requirements_file(c, str(Path(rel).parent / (argument.strip() or option[2:])), seen)
        elif option in ("-c", "--constraint") or option.startswith("-c"):
            continue  # constraints limit versions; they add no requirement
        elif line.startswith(("-", ".", "/")) or "://" in line:
            c.skipped.append(f"{rel}: {line} (not a package on an index)")
        else:
            c.add(line, rel)


def _tox(c: _Collector) -> None:
    parser = _ini(c.root / "tox.ini") if (c.root / "tox.ini").is_file() else None
    if parser is None:
        return
    for section in ("testenv", "tox:testenv"):
        if parser.has_option(section, "deps"):
            for line in parser.get(section, "deps").splitlines():
                line = re.sub(r"^[\w,.-]+:\s+", "", line.strip())  # a factor condition ("py311: ...")
                if line.startswith("-r"):
                    _requirements_file(c, line[2:].strip().replace("{toxinidir}/", ""), set())
                elif "{" in line:
                    c.skipped.append(f"tox.ini [{section}] deps: {line} (a substitution)")
                elif line and not line.startswith("-"):
                    c.add(line, f"tox.ini [{section}] deps")


def _noxfile(c: _Collector) -> None:
    tree = _parse_python(c.root / "noxfile.py") if (c.root / "noxfile.py").is_file() else None
    for node in ast.walk(tree) if tree else ():
        func = getattr(node, "func", None)
        if isinstance(node, ast.Call) and getattr(func, "attr", None) == "install":
            args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            for prev, arg in zip([None] + args, args):
                if prev in ("-r", "--requirement"):
                    _requirements_file(c, arg, set())
                elif not arg.startswith(("-", ".")) and prev not in ("-c", "--constraint", "-e"):
                    c.add(arg, "noxfile.py session.install")


def pytest_config(root: Path, pyproject: dict | None = None) -> dict[str, str]:
    """The project's pytest ini options as strings, from whichever file pytest would read first
    (`pyproject`: its pyproject.toml already parsed; None: read here)."""
    if pyproject is None:
        try:
            pyproject = tomllib.loads((root / "pyproject.toml").read_text(errors="replace"))
        except (OSError, tomllib.TOMLDecodeError):
            pyproject = {}
    for name, section in (("pytest.toml", None), (".pytest.toml", None), ("pytest.ini", "pytest")):
        path = root / name
        if path.is_file():
            if section is None:
                try:
                    data = tomllib.loads(path.read_text(errors="replace")).get("pytest", {})
                except tomllib.TOMLDecodeError:
                    return {}
                return {k: " ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in data.items()}
            parser = _ini(path)
            return dict(parser.items(section)) if parser is not None and parser.has_section(section) else {}
    options = pyproject.get("tool", {}).get("pytest", {}).get("ini_options") if isinstance(pyproject.get("tool"), dict) else None
    if isinstance(options, dict):
        return {k: " ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in options.items()}
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = _ini(root / name) if (root / name).is_file() else None
        if parser is not None and parser.has_section(section):
            return dict(parser.items(section))
    return {}


def _plugins(c: _Collector, config: dict[str, str], test_files) -> None:
    found: dict[str, str] = {}
    for key in config:
        if key in _INI_KEYS:
            found.setdefault(_INI_KEYS[key], f"pytest config {key}")
    words = config.get("addopts", "").split()
    for prev, word in zip([""] + words, words):
        option = word.split("=", 1)[0]
        if option in _OPTIONS:
            found.setdefault(_OPTIONS[option], f"pytest addopts {option}")
        if prev == "-p" and word in _PLUGIN_NAMES:
            found.setdefault(_PLUGIN_NAMES[word], f"pytest addopts -p {word}")
    for plugin in config.get("required_plugins", "").split():
        found.setdefault(plugin, "pytest required_plugins")
    for rel in test_files:
        text = (c.root / rel).read_text(errors="replace")
        for module, dist in _IMPORTS.items():
            if re.search(rf"^\s*(import|from)\s+{module}\b", text, re.M):
                found.setdefault(dist, f"{rel} imports {module}")
        for marker, dist in _MARKERS.items():
            if f"pytest.mark.{marker}" in text:
                found.setdefault(dist, f"{rel} uses pytest.mark.{marker}")
        for fixture, dist in _FIXTURES.items():
            if re.search(rf"def \w+\([^)]*\b{fixture}\b", text):
                found.setdefault(dist, f"{rel} uses the {fixture} fixture")
    declared = {canonicalize_name(r.name) for r in c.found.values()}
    for dist, why in sorted(found.items()):
        if canonicalize_name(dist) not in declared:
            c.add(dist, why)


def _test_files(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if any(part in _SCAN_SKIP for part in rel.parts[:-1]):
            continue
        if rel.name.startswith("test_") or rel.name.endswith("_test.py") or rel.name == "conftest.py":
            found.append(rel.as_posix())
    return sorted(found)


def project_requirements(root: str | Path) -> Requirements:
    """The runtime and test requirements that the project at `root` declares, and the pytest plugins
    its configuration and test files use. Reads files only; runs nothing."""
    if not Path(root).is_dir():  # else every file is simply absent, and the project "declares nothing"
        problem = "is not a folder" if Path(root).exists() else "does not exist"
        raise TaskError(f"{root} {problem}: pass the folder of a Python project")
    c = _Collector(Path(root))
    _setup_cfg(c)
    _setup_py(c)
    pyproject = _pyproject(c)
    # a project named by setup.cfg/setup.py after its pyproject lines were read: drop self-references
    for key in [k for k, r in c.found.items() if c.project and canonicalize_name(r.name) == canonicalize_name(c.project)]:
        del c.found[key], c.sources[key]
    seen: set[str] = set()
    for rel in _REQUIREMENT_FILES:
        _requirements_file(c, rel, seen)
    if not any(k for k in c.sources if any(s.startswith(("requirements", "test")) for s in c.sources[k])):
        for rel in _DEV_REQUIREMENT_FILES:
            _requirements_file(c, rel, seen)
    _tox(c)
    _noxfile(c)
    _plugins(c, pytest_config(c.root, pyproject), _test_files(c.root))
    return c.result()
