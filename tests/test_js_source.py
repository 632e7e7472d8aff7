"""JavaScript source through tree-sitter: the definition around some lines (the reference hint's
units) and the static check (the `static` reward): what node refuses to load fails it, a new
undeclared name is a finding, and what node accepts is not refused."""
import shutil
import subprocess

import pytest

from code_gym.languages.javascript import source

MODULE = b"""\
'use strict';
const { helper } = require('./helper');

class Cart {
  constructor(items) {
    this.items = items;
  }

  total() {
    let sum = 0;
    for (const item of this.items) {
      sum += item.price;
    }
    return sum;
  }
}

Cart.prototype.count = function () {
  return this.items.length;
};

module.exports = {
  parse(text) {
    return helper(text);
  },
  format: function (value) {
    const round = (v) => {
      return Math.round(v);
    };
    return round(value).toFixed(2);
  },
};

module.exports.extra = function () {
  return [1, 2].map((x) => x * 2);
};

export default function (a) {
  return a;
}
"""


@pytest.mark.parametrize("lines, name", [
    ([10, 13], "Cart.total"), ([6], "Cart.constructor"), ([4], "Cart"), ([4, 20], ""), ([19], "Cart.count"),
    ([25], "parse"), ([29], "format.round"), ([27, 31], "format"), ([35], "extra"), ([39], "default"), ([1, 2], ""),
])
def test_the_innermost_named_definition_spanning_the_lines(lines, name):
    """Methods are qualified by their class, prototype methods by their constructor; members of
    `module.exports` by their own name; anonymous callbacks are no definition of their own."""
    assert source.enclosing_definition(MODULE, lines) == name


def test_no_source_or_no_lines_have_no_definition():
    assert source.enclosing_definition(None, [1]) == "" and source.enclosing_definition(MODULE, []) == ""
    # a file that does not parse: the definitions tree-sitter still recognises, and no exception
    assert source.enclosing_definition(b"function f(a) {\n  return 1;\n}\nfunction g( {\n", [2]) == "f"
    assert source.enclosing_definition(b"function f( {\n  return 1;\n}\n", [2]) == ""


def node_loads(code: bytes, tmp_path, suffix: str = ".js") -> bool:
    """Whether node compiles the code (`node --check`)."""
    path = tmp_path / f"checked{suffix}"
    path.write_bytes(code)
    return subprocess.run(["node", "--check", str(path)], capture_output=True).returncode == 0


LOADS = {
    "var twice": b"var a = 1;\nvar a = 2;\n",
    "functions twice": b"function f() {}\nfunction f() {}\n",
    "let in sibling blocks": b"{ let z = 1; }\n{ let z = 2; }\n",
    "param again with var": b"function g(b) { var b = 1; return b; }\n",
    "shadowing in an inner function": b"let x = 1;\nfunction h() { let x = 2; return x; }\n",
    "hashbang, class fields, optional chaining": b"#!/usr/bin/env node\nclass A { #p = 1; static s = 2; get p() { return this.#p; } }\nconsole.log(new A()?.p ?? 0);\n",
    "jsx-free modern syntax": b"const f = async function* () { for await (const x of []) yield x; };\nlabel: for (;;) { break label; }\n",
}
REFUSED = {
    "let twice": (b"let a = 1;\nlet a = 2;\n", "Identifier 'a' has already been declared (line 2)"),
    "let after var": (b"var a = 1;\nlet a = 2;\n", "Identifier 'a' has already been declared (line 2)"),
    "class after function": (b"function C() {}\nclass C {}\n", "Identifier 'C' has already been declared (line 2)"),
    "param again with let": (b"function g(b) {\n  let b = 1;\n}\n", "Identifier 'b' has already been declared (line 2)"),
    "catch param again": (b"try {} catch (e) {\n  const e = 1;\n}\n", "Identifier 'e' has already been declared (line 2)"),
    "switch cases share a scope": (b"switch (x) {\n  case 1: let q;\n  case 2: let q;\n}\n",
                                   "Identifier 'q' has already been declared (line 3)"),
    "unclosed block": (b"function f() {\n  if (x) {\n    return 1;\n}\n", "missing `}`"),
    "broken header": (b"function f( {\n  return 1;\n}\n", "line 1: unexpected"),
}


@pytest.mark.parametrize("code", LOADS.values(), ids=LOADS.keys())
def test_what_node_loads_compiles(code, tmp_path):
    check = source.check_file("m.js", None, code)
    assert check.compiles, check.error
    if shutil.which("node"):
        assert node_loads(code, tmp_path)


@pytest.mark.parametrize("code, error", REFUSED.values(), ids=REFUSED.keys())
def test_what_node_refuses_does_not_compile(code, error, tmp_path):
    check = source.check_file("m.js", None, code)
    assert not check.compiles and check.score == 0.0
    assert check.error.startswith("SyntaxError: ") and error in check.error
    if shutil.which("node"):
        assert not node_loads(code, tmp_path)


def test_new_undeclared_names_are_findings_and_old_ones_are_not():
    old = b"function total(items) {\n  let sum = 0;\n  for (const x of items) sum += x;\n  return sum + legacyOffset;\n}\n"
    new = old.replace(b"return sum + legacyOffset;", b"count = items.length;\n  return sum + legacyOffset + offst;")
    check = source.check_file("m.js", old, new)
    assert check.compiles
    assert check.new_findings == ["UndeclaredAssignment: assignment to undeclared name 'count'",
                                  "UndefinedName: undefined name 'offst'"]
    assert check.score == pytest.approx(1 / 3)
    # a second use of a name the old file already lacked is not new
    assert source.check_file("m.js", old, old + b"console.log(legacyOffset);\n").new_findings == []


def test_declarations_of_every_kind_are_seen():
    code = b"""\
/* global LATER, other:writable */
import def, { a as b, c } from 'm';
import * as ns from 'n';
const { d, e: [f], ...g } = require('x');
function h(i, j = 2, { k }, ...l) {
  try { return [i, j, k, l, b, c, def, ns, d, f, g]; } catch (err) { return err; }
}
class M { m() { return M; } }
const n = (o) => o + p;
for (const [q, r] of Object.entries({})) { q + r; }
for (var s in {}) { s; }
const t = function named() { return named; };
typeof window === 'undefined' && typeof maybeGlobal;
label: for (;;) { break label; }
const obj = { d, key: 1, [c]: 2 };
export { h as exported, obj };
export { thing } from './elsewhere';
console.log(LATER, other, arguments, __dirname, undefined, new.target, import.meta, this, super.x);
var p;
"""
    assert source.name_findings(source.parse(code)) == []


def test_a_file_with_with_or_eval_has_no_name_findings():
    assert source.name_findings(source.parse(b"with (o) { x = y; }\n")) == []
    assert source.name_findings(source.parse(b"eval('var y = 1'); z = y;\n")) == []
    assert source.name_findings(source.parse(b"z = y;\n")) == [
        "UndeclaredAssignment: assignment to undeclared name 'z'", "UndefinedName: undefined name 'y'"]


def test_jsx_tags_of_the_page_are_no_names_and_components_are():
    code = b"function App() {\n  return <div className='x'><Header /><Missing.Part /></div>;\n}\nfunction Header() { return null; }\n"
    assert source.name_findings(source.parse(code)) == ["UndefinedName: undefined name 'Missing'"]


def test_a_file_that_grew_too_much_is_not_parsed():
    check = source.check_file("m.js", b"", b"x;\n" * (source.MAX_SOURCE_BYTES // 2))
    assert not check.compiles and "too large" in check.error


def test_a_file_that_did_not_parse_before_counts_every_finding_as_new():
    check = source.check_file("m.js", b"function (\n", b"x = 1;\n")
    assert check.compiles and check.new_findings == ["UndeclaredAssignment: assignment to undeclared name 'x'"]
