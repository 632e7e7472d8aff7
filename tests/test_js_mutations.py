"""JavaScript mutations through tree-sitter: the functions a module defines, every mutant parses
and edits only its function, and each operator changes what a real function does under node."""
import json
import random
import shutil
import subprocess

import pytest

from code_gym.languages.javascript import source
from code_gym.languages.javascript.builder import mutations

MODULE = """\
/**
 * Price helpers for the shop.
 */

'use strict';

/** Parses a price: "1,299.50" -> 1299.5. */
function parsePrice(text) {
  'use strict';
  // commas are thousands separators
  const cleaned = text.trim().replace(/,/g, '');
  if (!cleaned || cleaned.length > 20) {
    return 0;
  }
  return Number(cleaned);
}

// A shopping cart.
class Cart {
  constructor(items) {
    this.items = items;
  }

  // Sums the prices.
  total() {
    let sum = 0;
    for (let i = 0; i < this.items.length; i++) {
      if (this.items[i] === null) continue;
      sum += Math.max(this.items[i].price, 0);
    }
    return sum;
  }

  empty() { return this.items.length === 0; }
}

Cart.prototype.count = function () {
  const n = this.items.length;
  return n > 1 ? n : 1;
};

const round = (value, digits) => {
  const f = Math.pow(10, digits);
  return Math.round(value * f) / f;
};

function todo() {
  throw new Error('todo');
}

module.exports = {
  Cart,
  parsePrice,
  format: function (value) {
    return round(value, 2).toFixed(2);
  },
  async load(url, options) {
    const response = await fetch(url, { ...options });
    return response.ok && response.status !== 204 ? response.json() : null;
  },
  clamp(v, lo, hi) { return Math.min(Math.max(v, lo), hi); },
};

(function () {
  function hidden(a, b) {
    return a <= b;
  }
  module.exports.hidden = hidden;
})();
"""


def test_the_functions_of_a_module_in_every_form():
    found = mutations.functions("lib/shop.js", MODULE)
    assert [(f.qualname, f.signature) for f in found] == [
        ("parsePrice", "function parsePrice(text)"),
        ("Cart.constructor", "constructor(items)"),
        ("Cart.total", "total()"),
        ("Cart.count", "Cart.prototype.count = function ()"),
        ("round", "const round = (value, digits) =>"),
        ("format", "format: function (value)"),
        ("load", "async load(url, options)"),
        ("hidden", "function hidden(a, b)"),
    ]  # not: a one-line method or object member, a body that only throws, the IIFE itself
    parse, _, total = found[:3]
    assert parse.docstring == 'Parses a price: "1,299.50" -> 1299.5.' and parse.module_doc == "Price helpers for the shop."
    assert parse.body_lines == (11, 15) and (parse.node.lineno, parse.node.end_lineno) == (8, 16)
    assert total.docstring == "Sums the prices." and total.class_doc == "A shopping cart."


def test_a_module_that_does_not_parse_raises_syntax_error():
    with pytest.raises(SyntaxError, match="broken.js: line 1"):
        mutations.functions("broken.js", "function f( {\n  return 1;\n}\n")


def _all_mutants():
    for fn in mutations.functions("lib/shop.js", MODULE):
        yield from ((fn, change) for change in mutations.mutation_sites(fn, MODULE))


def test_every_mutant_parses_and_edits_only_its_function():
    data = MODULE.encode()
    operators = set()
    for fn, change in _all_mutants():
        new = change.source.encode()
        assert source.syntax_error(source.parse(new)) is None, (fn.qualname, change.operator, change.line)
        start, end = fn.span
        tail = len(data) - end
        assert new[:start] == data[:start] and new[len(new) - tail:] == data[end:]
        assert fn.node.lineno <= change.line <= fn.node.end_lineno
        operators.add(change.operator)
    assert operators == set(mutations.OPERATORS)


def test_offsets_are_bytes_and_line_breaks_are_kept():
    """Sites after non-ASCII text land where they are; CRLF files keep their line breaks."""
    code = 'function greet(name) {\r\n  const hi = "héllo ✓";\r\n  if (name.length < 3) return hi;\r\n  return hi + name;\r\n}\r\n'
    (fn,) = mutations.functions("m.js", code)
    got = {(c.operator, c.removed[0]): c.source for c in mutations.mutation_sites(fn, code)}
    assert got[("flip-comparison", "name.length < 3")] == code.replace("name.length < 3", "name.length > 3")
    assert got[("off-by-one", "3")] == code.replace("< 3", "< 4")
    removed = mutations.remove_body(fn, code).source
    assert removed == 'function greet(name) {\r\n  throw new Error("not implemented");\r\n}\r\n'


def test_the_sites_of_one_function():
    fn = next(f for f in mutations.functions("lib/shop.js", MODULE) if f.qualname == "load")
    got = sorted((c.operator, c.removed[0]) for c in mutations.mutation_sites(fn, MODULE))
    assert got == [
        ("drop-condition", "response.ok && response.status !== 204"),
        ("flip-comparison", "response.status !== 204"),
        ("off-by-one", "204"),
        ("swap-arguments", "fetch(url, { ...options })"),
    ]


def test_a_guard_if_is_dropped_and_other_ifs_are_not():
    code = ("function f(a, b) {\n  if (a) return 1;\n  if (b) {\n    a = b;\n  } else {\n    a = 2;\n  }\n"
            "  if (a) { b = 1; } a++;\n  return a;\n}\nfunction g(a) {\n  if (a) {\n    return 1;\n  }\n}\n")
    for fn in mutations.functions("m.js", code):
        dropped = [c for c in mutations.mutation_sites(fn, code) if c.operator == "drop-condition"]
        # f: only the first if (the second has an else, the third shares its line); g: the if is alone
        assert [c.line for c in dropped] == ([2] if fn.qualname == "f" else [])
    (change,) = [c for c in mutations.mutation_sites(mutations.functions("m.js", code)[0], code)
                 if c.operator == "drop-condition"]
    assert change.source == code.replace("  if (a) return 1;\n", "", 1)


def test_arguments_that_are_equal_or_spread_are_not_swapped():
    code = "function f(a, b) {\n  g(a, a);\n  h(...b, a);\n  k(a, ...b);\n  return new Map(a, b);\n}\n"
    (fn,) = mutations.functions("m.js", code)
    swaps = [c for c in mutations.mutation_sites(fn, code) if c.operator == "swap-arguments"]
    assert [c.removed[0] for c in swaps] == ["new Map(a, b)"]  # a spread among the first two: not swapped
    assert "return new Map(b, a);" in swaps[0].source


def test_remove_body_keeps_the_signature_the_doc_and_the_directives():
    fn = mutations.functions("lib/shop.js", MODULE)[0]
    change = mutations.remove_body(fn, MODULE)
    assert change.kind == "feature" and change.line == 11
    assert ("/** Parses a price: \"1,299.50\" -> 1299.5. */\nfunction parsePrice(text) {\n  'use strict';\n"
            "  throw new Error(\"not implemented\");\n}\n") in change.source
    assert "commas are thousands separators" not in change.source
    assert "text.trim().replace(/,/g, '')" in change.removed and "Number(cleaned)" in change.removed
    commented = ("function f() {  // brace comment\n  // above directive\n  'use strict'; // directive note\n"
                 "  // above work\n  const x = g(1, 2);\n  return x + 1; // trailing\n  // last\n}\n")
    (fn,) = mutations.functions("m.js", commented)
    assert mutations.remove_body(fn, commented).source == (
        "function f() {  // brace comment\n  // above directive\n  'use strict'; // directive note\n"
        "  throw new Error(\"not implemented\");\n}\n")


def test_pick_mutations_spreads_over_the_operators_and_follows_its_seed():
    fn = next(f for f in mutations.functions("lib/shop.js", MODULE) if f.qualname == "parsePrice")
    checker = mutations.checker(MODULE)
    picked = mutations.pick_mutations(fn, MODULE, 4, random.Random(1), checker)
    assert sorted(c.operator for c in picked) == sorted(mutations.OPERATORS)
    again = mutations.pick_mutations(fn, MODULE, 4, random.Random(1))
    assert [c.source for c in again] == [c.source for c in picked]
    assert len(mutations.pick_mutations(fn, MODULE, 50, random.Random(1))) == len(mutations.mutation_sites(fn, MODULE))


SCORE = """\
/** Sums the values, squaring those above a limit (seven is unlucky); a zero gives -1. */
function score(values, limit) {
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v > limit && v !== 7) {
      total += Math.pow(v, 2);
      continue;
    }
    if (v === 0) return -1;
    total += v;
  }
  return total;
}

module.exports = { score };
"""
# requires each module named on the command line and prints score() of each case (or what it threw)
RUN_CASES = """\
const cases = [[[3, 7, 5, 10, 1], 4], [[0, 2], 1], [[4, 1, 2], 4], [[2, 8], 5], [[6], 6], [[1, 1], 0]];
const out = {};
for (const name of process.argv.slice(2)) {
  const { score } = require(name);
  out[name] = cases.map(([v, l]) => { try { return score(v, l); } catch (e) { return 'throws ' + e.message; } });
}
console.log(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (scripts/setup.sh installs it)")
def test_each_operator_changes_what_the_function_does_under_node(tmp_path):
    (fn,) = mutations.functions("score.js", SCORE)
    changes = mutations.mutation_sites(fn, SCORE) + [mutations.remove_body(fn, SCORE)]
    assert {c.operator for c in changes} == {*mutations.OPERATORS, mutations.REMOVE_BODY}
    (tmp_path / "original.js").write_text(SCORE)
    (tmp_path / "run.js").write_text(RUN_CASES)
    for i, change in enumerate(changes):
        (tmp_path / f"mutant{i}.js").write_text(change.source)
    names = ["./original.js"] + [f"./mutant{i}.js" for i in range(len(changes))]
    run = subprocess.run(["node", "run.js", *names], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert results["./original.js"] == [136, -1, 7, 66, 6, 2]
    same = [(c.operator, c.removed[0]) for i, c in enumerate(changes) if results[f"./mutant{i}.js"] == results["./original.js"]]
    assert same == []  # every mutant of this function changes some result
    assert results[names[-1]] == ["throws not implemented"] * 6
