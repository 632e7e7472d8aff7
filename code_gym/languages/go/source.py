"""Go source through tree-sitter-go: the syntax tree, the definition around some lines (the
reference hint's units), and the static check of a changed file (the `static` reward).

The check never runs the Go toolchain. A file "compiles" when it parses without an ERROR or
MISSING node and opens with a package clause. Its findings are two errors of Go's compiler that a
parse cannot see, read from the file alone, so that each is certain (findings can be missed, not
invented):

  UnusedImport    an import whose package is never named in the file: a standard-library
                  package (its name is its path's last element) or one imported under a name;
                  a blank (`_`) or dot import is never unused, and a third-party package imported
                  without a name is not judged (its package name need not be its path's)
  UnusedVariable  a local variable (`x := ...`, `var x`, a range or type-switch variable) whose
                  name occurs nowhere else in its function: Go rejects a variable never read

Each is reported once per name, so a new use of a name the old file already lacked is not new.
Every other compile error (types, undefined names) needs the package, and is the graded run's.
"""
from __future__ import annotations

from collections.abc import Iterator

import tree_sitter_go
from tree_sitter import Language, Node, Tree

from code_gym.grading import treesitter
from code_gym.grading.treesitter import node_text, syntax_error, walk
from code_gym.languages.base import FileCheck
from code_gym.util.hostfs import MAX_DIFF_BYTES

LANGUAGE = Language(tree_sitter_go.language())
# as the other languages' static check: a file that grew by more than this is not parsed, and scores 0
MAX_SOURCE_BYTES = MAX_DIFF_BYTES


def parse(data: bytes, old: Tree | None = None) -> Tree:
    """The tree-sitter syntax tree of Go source `data` (never raises: errors are ERROR and MISSING
    nodes); `old`: the edited tree of an earlier version, whose unchanged parts are reused. Parsers
    are not shared between threads."""
    return treesitter.parse(LANGUAGE, data, old)


def package_name(tree: Tree) -> str | None:
    """The name in the file's package clause, None when it has none."""
    clause = next((c for c in tree.root_node.named_children if c.type == "package_clause"), None)
    if clause is None:
        return None
    name = next((c for c in clause.named_children if c.type == "package_identifier"), None)
    return node_text(name) if name is not None else None


# -- imports ------------------------------------------------------------------------------------

def imports(tree: Tree) -> list[tuple[str, str | None, Node]]:
    """The file's imports: (path, the name written before it or None, the import_spec node)."""
    out = []
    for node in tree.root_node.named_children:
        if node.type != "import_declaration":
            continue
        for spec in walk(node):
            if spec.type != "import_spec":
                continue
            path, name = spec.child_by_field_name("path"), spec.child_by_field_name("name")
            out.append((string_content(path), node_text(name) if name is not None else None, spec))
    return out


def string_content(node: Node) -> str:
    """The text inside a string literal's quotes, escapes kept as written (import paths have none)."""
    text = node_text(node)
    return text[1:-1] if len(text) >= 2 else text


def is_standard(path: str) -> bool:
    """Whether an import path names a standard-library package (no dot in its first element)."""
    return "." not in path.split("/")[0]


# -- the definition around some lines -----------------------------------------------------------

def receiver_type(method: Node) -> str:
    """The type a method is declared on: `func (b *Buffer[T]) Len()` -> "Buffer"."""
    receiver = method.child_by_field_name("receiver")
    declaration = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None) \
        if receiver is not None else None
    kind = declaration.child_by_field_name("type") if declaration is not None else None
    while kind is not None and kind.type in ("pointer_type", "parenthesized_type", "generic_type"):
        if kind.type == "generic_type":
            kind = kind.child_by_field_name("type")
        else:
            kind = kind.named_children[-1] if kind.named_children else None
    return node_text(kind) if kind is not None else ""


def definition_name(node: Node) -> str | None:
    """The qualified name of a top-level definition: "Parse" for a function, "Buffer.Len" for a
    method, "Buffer" for a type; None for anything else."""
    if node.type == "function_declaration":
        return node_text(node.child_by_field_name("name"))
    if node.type == "method_declaration":
        owner = receiver_type(node)
        name = node_text(node.child_by_field_name("name"))
        return f"{owner}.{name}" if owner else name
    if node.type == "type_spec":
        return node_text(node.child_by_field_name("name"))
    return None


def enclosing_definition(data: bytes | None, lines: list[int]) -> str:
    """The qualified name ("Buffer.Len", "Parse") of the innermost function, method or type
    declaration spanning all of `lines` (1-based), "" when none does. Go does not nest named
    functions: a function literal is part of the declaration it is written in."""
    if not data or not lines:
        return ""
    low, high = min(lines) - 1, max(lines) - 1
    best, best_size = "", None
    for node in walk(parse(data).root_node):
        name = definition_name(node)
        if not name:
            continue
        first, last = node.start_point[0], node.end_point[0]
        if first <= low and last >= high and (best_size is None or last - first < best_size):
            best, best_size = name, last - first
    return best


# -- the static check ---------------------------------------------------------------------------

def _qualifiers(tree: Tree) -> set[str]:
    """Every name used as a package qualifier (`fmt` in `fmt.Println` and in `fmt.Stringer`)."""
    names = set()
    for node in walk(tree.root_node):
        if node.type == "selector_expression":
            operand = node.child_by_field_name("operand")
            if operand is not None and operand.type == "identifier":
                names.add(node_text(operand))
        elif node.type == "qualified_type":
            package = node.child_by_field_name("package")
            if package is not None:
                names.add(node_text(package))
    return names


def unused_imports(tree: Tree) -> list[str]:
    """Imports whose package is never named in the file (see the module docstring)."""
    used = _qualifiers(tree)
    out = []
    for path, name, _ in imports(tree):
        if name in ("_", ".") or path == "C":
            continue
        if name is None and not is_standard(path):
            continue
        if (name or path.rsplit("/", 1)[-1]) not in used:
            out.append(f'UnusedImport: "{path}" imported and not used')
    return out


def _declared_locals(function: Node) -> Iterator[Node]:
    """The identifiers a function's body declares as variables (not its parameters)."""
    body = function.child_by_field_name("body")
    if body is None:
        return
    for node in walk(body):
        if node.type in ("short_var_declaration", "range_clause"):
            left = node.child_by_field_name("left")
            if left is not None and (node.type == "short_var_declaration" or _range_declares(node)):
                yield from (c for c in left.named_children if c.type == "identifier")
        elif node.type == "var_spec":
            yield from node.children_by_field_name("name")
        elif node.type == "type_switch_statement":
            alias = node.child_by_field_name("alias")
            if alias is not None:
                yield from (c for c in alias.named_children if c.type == "identifier") \
                    if alias.type == "expression_list" else [alias]


def _range_declares(clause: Node) -> bool:
    return any(c.type == ":=" for c in clause.children)


def unused_variables(tree: Tree) -> list[str]:
    """Local variables whose name occurs nowhere else in the function that declares them."""
    out = []
    for function in walk(tree.root_node):
        if function.type not in ("function_declaration", "method_declaration"):
            continue
        counts: dict[str, int] = {}
        for node in walk(function):
            if node.type == "identifier":
                counts[node_text(node)] = counts.get(node_text(node), 0) + 1
        for name in _declared_locals(function):
            text = node_text(name)
            if text != "_" and counts.get(text, 0) == 1:
                out.append(f"UnusedVariable: {text} declared but not used")
    return out


def name_findings(tree: Tree) -> list[str]:
    """UnusedImport and UnusedVariable findings (see the module docstring), one per name, sorted."""
    return sorted(set(unused_imports(tree) + unused_variables(tree)))


def compile_error(tree: Tree) -> str | None:
    """Why the file cannot compile as read by its syntax alone, or None."""
    error = syntax_error(tree)
    if error is not None:
        return f"syntax error: {error}"
    if package_name(tree) is None:
        return "syntax error: the file has no package clause"
    return None


def check_file(path: str, old: bytes | None, new: bytes) -> FileCheck:
    """The `static` reward's check of one changed Go file: it parses with a package clause, and the
    findings its starting version `old` did not have."""
    if len(new) - len(old or b"") > MAX_SOURCE_BYTES:
        return FileCheck(path, False, f"over {MAX_SOURCE_BYTES} bytes larger than before: too large to check")
    tree = parse(new)
    error = compile_error(tree)
    if error is not None:
        return FileCheck(path, False, error)
    before: set[str] = set()
    if old is not None:
        old_tree = parse(old)
        if compile_error(old_tree) is None:
            before = set(name_findings(old_tree))
    return FileCheck(path, True, new_findings=[f for f in name_findings(tree) if f not in before])
