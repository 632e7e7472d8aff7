"""JavaScript source through tree-sitter: the syntax tree, the definition around some lines (the
reference hint's units), and the static check of a changed file (the `static` reward).

The check never runs the code. A file "compiles" when it parses without an ERROR or MISSING node
and without the redeclarations node rejects at load time (`let x; let x;`, a parameter declared
again with `let` in its function's body): tree-sitter's grammar accepts those, node does not. Its
findings are names, read from the whole file at once (not scope by scope, so a name declared
anywhere counts as declared: findings can be missed, not invented):

  UndefinedName         a name read that the file never declares, and that is no global of
                        node, the language, the common test frameworks or a browser
  UndeclaredAssignment  a name assigned that the file never declares (an implicit global; a
                        ReferenceError in strict code and in ES modules)

Each is reported once per name, so a new use of a name the old file already lacked is not new.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter_javascript
from tree_sitter import Language, Node, Tree

from code_gym.grading import treesitter
from code_gym.grading.treesitter import node_text, syntax_error, walk
from code_gym.languages.base import FileCheck
from code_gym.util.hostfs import MAX_DIFF_BYTES

LANGUAGE = Language(tree_sitter_javascript.language())
# as Python's static check: a file that grew by more than this is not parsed, and scores 0
MAX_SOURCE_BYTES = MAX_DIFF_BYTES

# names a file may read without declaring them: node 20's globals (`Object.getOwnPropertyNames(
# globalThis)` in a script), CommonJS's module wrapper, newer node's, the globals of mocha, jest and
# jasmine, the common ones of a browser, a worker and AMD, those the global object inherits from
# Object.prototype, and the contextual keywords tree-sitter reads as names in places (`await (0, f)(x)`
# in compiled code parses as a call of `await`)
GLOBALS = frozenset("""
AbortController AbortSignal AggregateError Array ArrayBuffer Atomics BigInt BigInt64Array BigUint64Array Blob
Boolean BroadcastChannel Buffer ByteLengthQueuingStrategy CompressionStream CountQueuingStrategy Crypto CryptoKey
CustomEvent DOMException DataView Date DecompressionStream Error EvalError Event EventTarget File
FinalizationRegistry Float16Array Float32Array Float64Array FormData Function Headers Infinity Int16Array
Int32Array Int8Array Intl Iterator JSON Map Math MessageChannel MessageEvent MessagePort NaN Navigator Number
Object Performance PerformanceEntry PerformanceMark PerformanceMeasure PerformanceObserver
PerformanceObserverEntryList PerformanceResourceTiming Promise Proxy RangeError ReadableByteStreamController
ReadableStream ReadableStreamBYOBReader ReadableStreamBYOBRequest ReadableStreamDefaultController
ReadableStreamDefaultReader ReferenceError Reflect RegExp Request Response Set SharedArrayBuffer String
SubtleCrypto Symbol SyntaxError TextDecoder TextDecoderStream TextEncoder TextEncoderStream TransformStream
TransformStreamDefaultController TypeError URIError URL URLSearchParams Uint16Array Uint32Array Uint8Array
Uint8ClampedArray WeakMap WeakRef WeakSet WebAssembly WebSocket WritableStream WritableStreamDefaultController
WritableStreamDefaultWriter atob btoa clearImmediate clearInterval clearTimeout console crypto decodeURI
decodeURIComponent encodeURI encodeURIComponent escape eval fetch global globalThis isFinite isNaN navigator
parseFloat parseInt performance process queueMicrotask setImmediate setInterval setTimeout structuredClone
undefined unescape
require module exports __dirname __filename arguments
describe it test expect before after beforeEach afterEach beforeAll afterAll context specify suite setup teardown
suiteSetup suiteTeardown xit xdescribe xcontext xspecify fit fdescribe jest jasmine spyOn fail pending
window document self location history localStorage sessionStorage alert confirm prompt XMLHttpRequest
HTMLElement Element Node NodeList getComputedStyle requestAnimationFrame cancelAnimationFrame define
Window Worker addEventListener removeEventListener dispatchEvent postMessage importScripts
hasOwnProperty isPrototypeOf propertyIsEnumerable toString toLocaleString valueOf constructor
await yield async let static get set of
""".split())

_DEFINITIONS = frozenset({"function_declaration", "generator_function_declaration", "class_declaration",
                          "method_definition", "function_expression", "generator_function", "arrow_function", "class"})
_PATTERNS = frozenset({"object_pattern", "array_pattern", "pair_pattern", "assignment_pattern",
                       "object_assignment_pattern", "rest_pattern"})
_SCOPES = frozenset({"program", "statement_block", "switch_body", "class_static_block"})
_COMMENT_GLOBALS = re.compile(r"^/\*\s*globals?\s+(.*?)\*/$", re.S)


def parse(data: bytes, old: Tree | None = None) -> Tree:
    """The tree-sitter syntax tree of `data` (never raises: errors are ERROR and MISSING nodes);
    `old`: the tree of an earlier version, edited to match (`Tree.edit`), whose unchanged parts are
    reused. Parsers are not shared between threads."""
    return treesitter.parse(LANGUAGE, data, old)


# -- the definition around some lines -----------------------------------------------------------

def member_name(node: Node) -> str | None:
    """The name a definition assigned to `node` takes: `Foo.prototype.bar` -> "Foo.bar",
    `module.exports.parse` / `exports.parse` -> "parse", `this.x` -> "x", `module.exports` itself
    -> "module.exports"; None for a computed target (`a[k]`)."""
    if node.type in ("identifier", "property_identifier", "private_property_identifier"):
        return node_text(node)
    if node.type in ("string", "number"):
        return node_text(node).strip("'\"`")
    if node.type != "member_expression":
        return None
    target, prop = node.child_by_field_name("object"), node_text(node.child_by_field_name("property"))
    if target.type == "this":
        return prop
    head = member_name(target)
    if head is None:
        return None
    if head in ("exports", "module.exports"):
        return prop
    if head == "module" and prop == "exports":
        return "module.exports"
    return head if prop == "prototype" else f"{head}.{prop}"


def _context_name(node: Node) -> str | None:
    """The name an anonymous function, class or object gets from where it is put: a declared
    variable, an assignment's target, an object's key, a class field, `export default`."""
    parent = node.parent
    if parent is None:
        return None
    if parent.type == "variable_declarator" and parent.child_by_field_name("value") == node:
        return member_name(parent.child_by_field_name("name"))
    if parent.type == "assignment_expression" and parent.child_by_field_name("right") == node:
        return member_name(parent.child_by_field_name("left"))
    if parent.type == "pair" and parent.child_by_field_name("value") == node:
        return member_name(parent.child_by_field_name("key"))
    if parent.type == "field_definition" and parent.child_by_field_name("value") == node:
        return member_name(parent.child_by_field_name("property"))
    if parent.type == "export_statement" and parent.child_by_field_name("value") == node:
        return "default"
    return None


def definition_name(node: Node) -> str | None:
    """The name of a function, class or method node: a declaration's own; an expression's from its
    place (the variable or member it is assigned to), else its own; None for anything else and for
    anonymous callbacks."""
    if node.type not in _DEFINITIONS:
        return None
    own = node.child_by_field_name("name")
    if node.type == "method_definition":
        return member_name(own)
    if node.type in ("function_declaration", "generator_function_declaration", "class_declaration"):
        return node_text(own)
    context = _context_name(node)  # `Foo.prototype.bar = function bar ()`: "Foo.bar"
    if own is not None and context in (None, "module.exports"):
        return node_text(own)
    return context


def namespace_name(node: Node) -> str | None:
    """The prefix an object literal gives its methods (`const api = {...}` -> "api", and
    `module.exports = {...}` -> ""), None for an object that is not named."""
    if node.type != "object":
        return None
    name = _context_name(node)
    return "" if name == "module.exports" else name


def enclosing_definition(data: bytes | None, lines: list[int]) -> str:
    """The qualified name ("Cart.total", "parse.inner") of the innermost named function, class or
    method spanning all of `lines` (1-based), "" when none does."""
    if not data or not lines:
        return ""
    low, high = min(lines) - 1, max(lines) - 1
    best, best_size = "", None
    stack = [(parse(data).root_node, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.children:
            name, space = definition_name(child), namespace_name(child)
            inner = prefix
            if name is not None:
                inner = f"{prefix}{name}."
                first, last = child.start_point[0], child.end_point[0]
                if first <= low and last >= high and (best_size is None or last - first < best_size):
                    best, best_size = f"{prefix}{name}", last - first
            elif space is not None:
                inner = f"{prefix}{space}." if space else prefix
            stack.append((child, inner))
    return best


# -- names: declared, read, assigned ------------------------------------------------------------

def _bindings(pattern: Node | None) -> Iterator[Node]:
    """The identifiers a declaration's pattern binds (`{a, b: [c], ...d} = ...` -> a, c, d)."""
    if pattern is None:
        return
    if pattern.type in ("identifier", "shorthand_property_identifier_pattern"):
        yield pattern
    elif pattern.type in ("pair_pattern",):
        yield from _bindings(pattern.child_by_field_name("value"))
    elif pattern.type in ("assignment_pattern", "object_assignment_pattern"):
        yield from _bindings(pattern.child_by_field_name("left"))
    elif pattern.type in _PATTERNS:
        for child in pattern.named_children:
            yield from _bindings(child)


def _declared_by(node: Node) -> Iterator[Node]:
    """The binding identifiers `node` itself declares (its own, not its descendants')."""
    kind = node.type
    if kind == "variable_declarator":
        yield from _bindings(node.child_by_field_name("name"))
    elif kind in _DEFINITIONS and kind != "method_definition":
        if node.child_by_field_name("name") is not None:
            yield node.child_by_field_name("name")
        yield from _bindings(node.child_by_field_name("parameter"))
    elif kind == "formal_parameters":
        for child in node.named_children:
            yield from _bindings(child)
    elif kind == "catch_clause":
        yield from _bindings(node.child_by_field_name("parameter"))
    elif kind == "for_in_statement" and node.child_by_field_name("kind") is not None:
        yield from _bindings(node.child_by_field_name("left"))
    elif kind in ("import_clause", "namespace_import"):
        yield from (c for c in node.named_children if c.type == "identifier")
    elif kind == "import_specifier":
        yield node.child_by_field_name("alias") or node.child_by_field_name("name")


def _not_a_reference(node: Node) -> bool:
    """An identifier that names no variable: an imported or exported name, a JSX tag of the page
    (lowercase), a name re-exported from another module."""
    parent = node.parent
    if parent.type == "import_specifier":
        return True
    if parent.type == "export_specifier":
        statement = parent.parent.parent
        return node == parent.child_by_field_name("alias") or statement.child_by_field_name("source") is not None
    if parent.type in ("jsx_opening_element", "jsx_closing_element", "jsx_self_closing_element"):
        return node_text(node)[:1].islower()
    return False


def _assigned(node: Node) -> bool:
    """Whether the identifier is written: an assignment's target (in a destructuring pattern too),
    `x++`, or the variable of `for (x in ...)` without a declaration."""
    child, parent = node, node.parent
    while parent.type in _PATTERNS:
        child, parent = parent, parent.parent
    if parent.type in ("assignment_expression", "augmented_assignment_expression", "for_in_statement"):
        return parent.child_by_field_name("left") == child
    return parent.type == "update_expression"


def _comment_globals(node: Node) -> set[str]:
    """The names a `/* global a, b:writable */` comment declares (eslint's convention)."""
    match = _COMMENT_GLOBALS.match(node_text(node))
    return {item.split(":")[0].strip() for item in match.group(1).split(",")} if match else set()


def name_findings(tree: Tree) -> list[str]:
    """UndefinedName and UndeclaredAssignment findings (see the module docstring), one per name,
    sorted. A file with a `with` statement or a direct `eval` resolves names at run time: none."""
    declared, bound, read, written = set(GLOBALS), set(), set(), set()
    for node in walk(tree.root_node):
        if node.type in ("with_statement",) or (node.type == "call_expression" and
                                                node_text(node.child_by_field_name("function")) == "eval"):
            return []
        if node.type == "comment":
            declared |= _comment_globals(node)
        for name in _declared_by(node):
            bound.add(name.id)
            declared.add(node_text(name))
        if node.type in ("identifier", "shorthand_property_identifier") and node.id not in bound:
            if node.type == "identifier" and _not_a_reference(node):
                continue
            if node.parent.type == "unary_expression" and node_text(node.parent).startswith("typeof"):
                continue
            (written if node.type == "identifier" and _assigned(node) else read).add(node_text(node))
    out = [f"UndeclaredAssignment: assignment to undeclared name '{n}'" for n in written - declared]
    out += [f"UndefinedName: undefined name '{n}'" for n in read - declared - written]
    return sorted(out)


# -- redeclarations node rejects ----------------------------------------------------------------

def _statements(scope: Node) -> Iterator[Node]:
    """The statements directly in a scope (a switch's cases share one), exports unwrapped."""
    children = scope.named_children
    if scope.type == "switch_body":
        children = [s for case in children for s in case.children_by_field_name("body")]
    for node in children:
        declaration = node.child_by_field_name("declaration") if node.type == "export_statement" else None
        yield declaration or node


def _scope_names(scope: Node) -> tuple[list[Node], list[Node]]:
    """(lexical names: let, const, class; other names: var, function) declared directly in a scope."""
    lexical, other = [], []
    for node in _statements(scope):
        if node.type == "lexical_declaration":
            lexical += [b for d in node.named_children if d.type == "variable_declarator" for b in _declared_by(d)]
        elif node.type == "class_declaration":
            lexical.append(node.child_by_field_name("name"))
        elif node.type == "variable_declaration":
            other += [b for d in node.named_children if d.type == "variable_declarator" for b in _declared_by(d)]
        elif node.type in ("function_declaration", "generator_function_declaration"):
            other.append(node.child_by_field_name("name"))
    return lexical, other


def _outer_names(scope: Node) -> list[Node]:
    """Names a block may not declare again with let/const/class: a function body's parameters,
    a catch block's parameter."""
    parent = scope.parent
    if scope.type != "statement_block" or parent is None:
        return []
    if parent.type == "catch_clause":
        return list(_bindings(parent.child_by_field_name("parameter")))
    if parent.type in _DEFINITIONS and parent.child_by_field_name("body") == scope:
        params = parent.child_by_field_name("parameters")
        return list(_declared_by(params)) if params is not None else list(
            _bindings(parent.child_by_field_name("parameter")))
    return []


def redeclaration(tree: Tree) -> str | None:
    """node's early error for the first name declared again in one scope where either declaration
    is lexical ("Identifier 'x' has already been declared (line 4)", at the later one), or None."""
    for scope in walk(tree.root_node):
        if scope.type not in _SCOPES:
            continue
        lexical, other = _scope_names(scope)
        is_lexical = {node_text(n): False for n in _outer_names(scope)}
        for node, lex in sorted([(n, True) for n in lexical] + [(n, False) for n in other],
                                key=lambda entry: entry[0].start_byte):
            name = node_text(node)
            if name in is_lexical and (lex or is_lexical[name]):
                return f"Identifier '{name}' has already been declared (line {node.start_point[0] + 1})"
            is_lexical[name] = is_lexical.get(name, False) or lex
    return None


# -- the static check ---------------------------------------------------------------------------

def _compile_error(tree: Tree) -> str | None:
    error = syntax_error(tree)
    if error is not None:
        return f"SyntaxError: {error}"
    error = redeclaration(tree)
    return f"SyntaxError: {error}" if error is not None else None


def check_file(path: str, old: bytes | None, new: bytes) -> FileCheck:
    """The `static` reward's check of one changed JavaScript file: it parses and loads (no
    redeclaration), and the name findings its starting version `old` did not have."""
    if len(new) - len(old or b"") > MAX_SOURCE_BYTES:
        return FileCheck(path, False, f"over {MAX_SOURCE_BYTES} bytes larger than before: too large to check")
    tree = parse(new)
    error = _compile_error(tree)
    if error is not None:
        return FileCheck(path, False, error)
    before: set[str] = set()
    if old is not None:
        old_tree = parse(old)
        if syntax_error(old_tree) is None:
            before = set(name_findings(old_tree))
    return FileCheck(path, True, new_findings=[f for f in name_findings(tree) if f not in before])
