"""The layout's rules (docs/architecture.md): imports point one way, credit <- code_gym (the
library) <- code_gym.apps <- integrations, and inside the library from subsystem to subsystem
(SUBSYSTEMS); nothing outside a language's folder imports its modules (only the registry,
`code_gym.languages`, and the protocol, `code_gym.languages.base`); no module imports another's
private names; no import cycles; `import code_gym` stays light."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("credit", "code_gym", "integrations")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


MODULES = _modules()


def _imports(name: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in module `name`, at any depth
    (function-level imports included). `from pkg import sub` counts as importing `pkg.sub` when
    `sub` is a module."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [alias.name for alias in node.names]
            submodules = [n for n in names if f"{base}.{n}" in MODULES]
            out += [(f"{base}.{n}", [], node.lineno) for n in submodules]
            rest = [n for n in names if n not in submodules]
            if rest or not submodules:
                out.append((base, rest, node.lineno))
    return out


def _layer(module: str) -> str | None:
    if module.split(".")[0] == "credit":
        return "credit"
    if module == "code_gym.apps" or module.startswith("code_gym.apps."):
        return "apps"
    if module.split(".")[0] == "code_gym":
        return "library"
    if module.split(".")[0] == "integrations":
        return "integrations"
    return None


# what each layer may import from the project's layers
ALLOWED = {"credit": {"credit"}, "library": {"credit", "library"}, "apps": {"credit", "library", "apps"},
           "integrations": {"credit", "library", "apps", "integrations"}}


def test_imports_point_one_way():
    wrong = [f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
             for name in MODULES for target, _, line in _imports(name)
             if _layer(target) is not None and _layer(target) not in ALLOWED[_layer(name)]]
    assert not wrong, "\n".join(wrong)


# code_gym's subsystems, lowest first: a module may import its own subsystem and those before it.
# The registry and protocol (code_gym.languages, .base) import nothing at run time and may be
# imported from anywhere; a language's folder is a plug-in that builds on the subsystems up to
# grading (its builder grades, its probes use the file policy) and is reached only through them.
SUBSYSTEMS = ("util", "workspace", "sandbox", "tasks", "grading", "actions", "rewards", "env", "apps")
LANGUAGE_MAY_IMPORT = {"util", "workspace", "sandbox", "tasks", "grading"}


def _subsystem(module: str) -> str | None:
    """The subsystem of a code_gym module: a SUBSYSTEMS name, "registry" (code_gym.languages and
    its base), "language:NAME" (a language's folder), "package" (code_gym itself), or None."""
    parts = module.split(".")
    if parts[0] != "code_gym":
        return None
    if len(parts) == 1:
        return "package"
    if parts[1] == "languages":
        return "registry" if len(parts) == 2 or parts[2] == "base" else f"language:{parts[2]}"
    return parts[1]


def _allowed(source: str, target: str) -> bool:
    if target in ("registry", source) or source in ("package", "registry") and target != "apps":
        return True
    if source.startswith("language:"):
        return target in LANGUAGE_MAY_IMPORT
    if target.startswith("language:"):
        return False  # through the registry only
    return (source in SUBSYSTEMS and target in SUBSYSTEMS
            and SUBSYSTEMS.index(target) <= SUBSYSTEMS.index(source))


def test_every_library_module_belongs_to_a_subsystem():
    loose = [name for name in MODULES if _subsystem(name) not in (None, "package", "registry")
             and _subsystem(name) not in SUBSYSTEMS and not _subsystem(name).startswith("language:")]
    assert not loose, f"modules outside the subsystems {SUBSYSTEMS}: {loose}"


def test_imports_between_subsystems_point_down():
    wrong = []
    for name in MODULES:
        source = _subsystem(name)
        for target, _, line in _imports(name):
            to = _subsystem(target)
            if source is not None and to is not None and not _allowed(source, to):
                wrong.append(f"{MODULES[name].relative_to(ROOT)}:{line} ({source}) imports {target} ({to})")
    assert not wrong, "\n".join(wrong)


def test_nothing_outside_a_language_folder_imports_its_modules():
    inside = [f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
              for name in MODULES for target, _, line in _imports(name)
              if (_subsystem(target) or "").startswith("language:") and _subsystem(name) != _subsystem(target)]
    assert not inside, "\n".join(inside)


def test_the_subsystem_rules_catch_a_wrong_import():
    assert not _allowed("grading", "env") and not _allowed("sandbox", "language:python")
    assert not _allowed("language:python", "rewards") and not _allowed("apps", "language:python")
    assert _allowed("env", "grading") and _allowed("tasks", "registry") and _allowed("language:python", "grading")


def test_every_subsystem_says_what_it_owns():
    folders = [ROOT / "code_gym" / s for s in SUBSYSTEMS] + [p for p in (ROOT / "code_gym" / "languages").iterdir()
                                                           if p.is_dir() and p.name != "__pycache__"]
    missing = [str(f.relative_to(ROOT)) for f in folders
               if not ast.get_docstring(ast.parse((f / "__init__.py").read_text()))]
    assert not missing, f"subsystem folders whose __init__.py has no docstring: {missing}"


def test_no_module_imports_another_modules_private_names():
    private = [f"{MODULES[name].relative_to(ROOT)}:{line} takes {n} from {target}"
               for name in MODULES for target, names, line in _imports(name) if _layer(target) is not None
               for n in names if n.startswith("_") and not n.startswith("__")]
    assert not private, "\n".join(private)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name in MODULES:
        targets = set()
        for target, _, _ in _imports(name):
            while target and target not in MODULES:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            # a package's own __init__ importing its submodules is how packages re-export
            if target and target != name and not (MODULES[name].name == "__init__.py" and target.startswith(name + ".")):
                targets.add(target)
        graph[name] = targets
    return graph


def test_no_import_cycles():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()))


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("heavy", ["torch", "matplotlib", "httpx", "tqdm", "docker", "ray", "openrlhf",
                                   "code_gym.apps", "integrations"])
def test_import_code_gym_stays_light(heavy):
    code = f"import sys, code_gym; sys.exit(1 if {heavy!r} in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"`import code_gym` imported {heavy}{done.stderr}"
