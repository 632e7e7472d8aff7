"""JavaScript's syntax units: credit.syntax's "javascript" grammar, through the public split and
DiDPO APIs (the table entry is data; these check that the units it gives are the ones a reader of
the code would draw)."""
import numpy as np
from credit_testlib import code_span, file_diff, insert_call, offsets, token_mask

import credit
from credit.split import LEVELS, split_diff
from credit.syntax import GRAMMARS, block_spans, grammar_for

JS = GRAMMARS["javascript"]

PARSE = ["function parsePrice(text) {", "  const cleaned = text.trim().replace(/,/g, '');", "  if (!cleaned) {",
         "    return 0;", "  }", "  return Number(cleaned);", "}"]
SPLIT = ["function parsePrice(text) {", "  const parts = text.split('.');", "  const whole = parseInt(parts[0], 10);",
         "  const cents = parts.length > 1 ? parseInt(parts[1], 10) : 0;", "  return whole + cents / 100;", "}"]
FORMAT = ["function formatPrice(value) {", "  const sign = value < 0 ? '-' : '';",
          "  return sign + '$' + Math.abs(value).toFixed(2);", "}"]


def units(sub):
    return {(LEVELS[sub.unit_levels[u]], tuple(sub.unit(u).tolist())) for u in range(sub.n_units)}


def added_diff(path: str, lines: list[str]) -> str:
    """A diff that adds `lines` after a first line `const a = 1;` of `path`."""
    body = "".join("+" + line + "\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,{len(lines) + 1} @@\n const a = 1;\n{body}"


def test_javascript_files_find_the_grammar_and_typescript_does_not():
    for path in ("lib/a.js", "bin/cli.cjs", "esm/index.mjs", "ui/App.jsx"):
        assert grammar_for(path) is JS
    assert grammar_for("src/a.ts") is None and grammar_for("package.json") is None


def test_functions_loops_and_ifs_nest_and_else_stays_with_its_if():
    rows = ["function total(a) {", "  let t = 0;", "  for (const x of a) {", "    if (x > 1) {", "      t += x;",
            "    } else {", "      t -= 1;", "    }", "  }", "  return t;", "}", "const y = total([1]);"]
    assert block_spans(JS, [rows]) == [[(0, 10), (2, 8), (3, 7)]]


def test_classes_methods_callbacks_and_compound_statements_are_blocks():
    rows = ["class Cart {", "  add(item) {", "    this.items.push(item);", "  }", "}",
            "describe('cart', () => {", "  it('adds', function () {", "    try {", "      new Cart().add(1);",
            "    } catch (err) {", "      switch (err.code) {", "        case 1: break;", "      }", "    }",
            "  });", "});", "do { n--; } while (n > 0);", "while (n) n--;"]
    assert block_spans(JS, [rows]) == [[(0, 4), (1, 3), (5, 15), (6, 14), (7, 13), (10, 12), (16, 16), (17, 17)]]


def test_a_side_cut_from_a_method_parses_dedented_and_a_fragment_does_not_parse():
    method_body = ["    if (this.size > 0) {", "", "      return this.items[0];", "    }", "    return null;"]
    open_block = ["  if (x) {", "    y();"]  # its closing brace is in the next hunk: no clean parse
    no_mark = ["a;", "b;"]  # no "(", "{" or "=": holds no block, not parsed
    assert block_spans(JS, [method_body, open_block, no_mark]) == [[(0, 3)], None, []]


def test_jsx_and_modules_parse():
    rows = ["export default function App({ items }) {", "  return (", "    <ul>",
            "      {items.map((i) => <li key={i}>{i}</li>)}", "    </ul>", "  );", "}"]
    assert block_spans(JS, [rows]) == [[(0, 6), (3, 3)]]


def test_a_javascript_diff_splits_into_its_function_loop_and_if():
    lines = ["", "function f(a) {", "  for (const i of a) {", "    if (i) {", "      console.log(i);", "    }", "  }",
             "  return a;", "}"]
    got = units(split_diff(added_diff("m.js", lines), levels=("syntax",)))
    assert got == {("syntax", (1, 2, 3, 4, 5, 6, 7, 8)), ("syntax", (2, 3, 4, 5, 6)), ("syntax", (3, 4, 5))}


def test_a_call_chain_splits_by_its_callbacks_not_by_its_indentation():
    chain = ["const out = items", "  .filter((x) => x > 0)", "  .map((x) => {", "    return x * 2;", "  });"]
    diff = added_diff("m.mjs", chain)
    assert units(split_diff(diff, levels=("syntax",))) == {("syntax", (1,)), ("syntax", (2, 3, 4))}
    # indentation blocks take the whole statement as a block under its first line
    assert units(split_diff(diff, levels=("syntax",), syntax="indent")) == {("syntax", (0, 1, 2, 3, 4)),
                                                                            ("syntax", (2, 3, 4))}


def test_javascript_that_does_not_parse_falls_back_to_indentation():
    broken = ["function broken( {", "  return (", "for (const i of y) {", "  log(i);", "}"]
    diff = added_diff("m.js", broken)
    got = units(split_diff(diff, levels=("syntax",)))
    assert got == units(split_diff(diff, levels=("syntax",), syntax="indent"))
    assert ("syntax", (2, 3, 4)) in got


def one_step(code_lines: list[str], reward: float) -> credit.Trajectory:
    """A one-step rollout that inserts `code_lines` into shop.js as one hunk, in one tool call."""
    action = insert_call("shop.js", code_lines)
    body = [" // context above"] + ["+" + x for x in code_lines] + [" // context below"]
    hunk = f"@@ -9,2 +9,{len(code_lines) + 2} @@\n" + "\n".join(body) + "\n"
    step = credit.Step(action, file_diff("shop.js", hunk), token_offsets=offsets(action))
    return credit.Trajectory("q", [step], reward)


def test_didpo_credits_javascript_functions_written_in_one_hunk():
    """Two ways to write parsePrice and a shared formatPrice in one hunk: the hunks differ, and the
    function-level syntax units make formatPrice one anchor of all four rollouts."""
    good, bad = PARSE + [""] + FORMAT, SPLIT + [""] + FORMAT
    trajs = [one_step(good, 1), one_step(good, 1), one_step(bad, 0), one_step(bad, 0)]
    res = credit.didpo(trajs)
    np.testing.assert_allclose(res.episode, [0.5, 0.5, -0.5, -0.5])
    assert sorted(a.size for a in res.anchors) == [2, 2, 4]
    shared = next(a for a in res.anchors if a.size == 4)
    assert shared.preview.splitlines()[0] == FORMAT[0]
    np.testing.assert_allclose(shared.advantage, [0.5, 0.5, -0.5, -0.5])
    for i, sign in enumerate([1, 1, -1, -1]):
        action = trajs[i].steps[0].action
        written = PARSE if sign > 0 else SPLIT
        # each parsePrice variant's anchor is homogeneous in return (A^D = 0): its tokens keep A^E;
        # formatPrice's tokens add its anchor's A^D
        np.testing.assert_allclose(res.tokens[i][0][token_mask(action, code_span(action, written))], 0.5 * sign)
        np.testing.assert_allclose(res.tokens[i][0][token_mask(action, code_span(action, FORMAT))], 1.0 * sign)


def test_didpo_groups_a_javascript_method_written_with_other_comments():
    """Lines are compared without their // comments: the same method with different comments is one
    anchor, and the credit lands on each rollout's own lines."""
    def method(comment: str) -> list[str]:
        return ["class Cart {", "  total() {", f"    // {comment}", "    let sum = 0;",
                "    for (const item of this.items) {", "      sum += item.price;", "    }", "    return sum;", "  }",
                "}"]

    trajs = [one_step(method("add them up"), 1), one_step(method("sum the prices"), 0)]
    res = credit.didpo(trajs)
    assert any(a.size == 2 and a.preview.startswith("class Cart {") for a in res.anchors)
    for i, sign in enumerate([1, -1]):
        action = trajs[i].steps[0].action
        loop = method("x")[4:7]
        np.testing.assert_allclose(res.tokens[i][0][token_mask(action, code_span(action, loop))], 1.0 * sign)
