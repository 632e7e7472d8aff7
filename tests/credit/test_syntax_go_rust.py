"""Go's and Rust's syntax units: credit.syntax's "go" and "rust" grammars (tree-sitter-go,
tree-sitter-rust), through the public split and DiDPO APIs, on code as gofmt and rustfmt lay it."""
import numpy as np
from credit_testlib import code_span, file_diff, insert_call, offsets, token_mask

import credit
from credit.split import LEVELS, split_diff
from credit.syntax import GRAMMARS, block_spans, grammar_for
from credit.text import comment_marker

GO, RUST = GRAMMARS["go"], GRAMMARS["rust"]


def units(sub):
    return {(LEVELS[sub.unit_levels[u]], tuple(sub.unit(u).tolist())) for u in range(sub.n_units)}


def added_diff(path: str, first: str, lines: list[str]) -> str:
    body = "".join("+" + line + "\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,{len(lines) + 1} @@\n {first}\n{body}"


def test_go_and_rust_files_find_their_grammars_and_comment_marker():
    assert grammar_for("pkg/range.go") is GO and grammar_for("range_test.go") is GO
    assert grammar_for("src/lib.rs") is RUST and grammar_for("tests/parse.rs") is RUST
    assert comment_marker("a.go") == "//" and comment_marker("src/lib.rs") == "//"


def test_go_functions_methods_loops_and_ifs_nest():
    rows = ["func (r Range) OR(f Range) Range {", "\treturn func(v Version) bool {", "\t\tfor _, x := range r {",
            "\t\t\tif x(v) {", "\t\t\t\treturn true", "\t\t\t}", "\t\t}", "\t\treturn f(v)", "\t}", "}"]
    assert block_spans(GO, [rows]) == [[(0, 9), (1, 8), (2, 6), (3, 5)]]


def test_rust_impls_functions_matches_and_closures_nest():
    rows = ["impl Version {", "    fn bump(&mut self, part: Part) {", "        match part {",
            "            Part::Major => self.major += 1,", "            Part::Minor => self.minor += 1,", "        }",
            "        let ok = self.pre.iter().all(|p| p.is_empty());", "    }", "}"]
    assert block_spans(RUST, [rows]) == [[(0, 8), (1, 7), (2, 5), (6, 6)]]


def test_a_side_cut_from_a_body_parses_in_rust_and_falls_back_in_go():
    rust_body = ["        if n > 0 {", "            return n;", "        }", "        let m = n + 1;"]
    go_call = ["t.Run(\"a\", func(t *testing.T) {", "\tt.Fatal()", "})"]  # a statement at top level: no Go parse
    assert block_spans(RUST, [rust_body]) == [[(0, 2)]]
    assert block_spans(GO, [go_call]) == [None]


def test_a_go_diff_splits_into_its_function_loop_and_if():
    lines = ["", "func Sum(xs []int) int {", "\tt := 0", "\tfor _, x := range xs {", "\t\tif x > 0 {",
             "\t\t\tt += x", "\t\t}", "\t}", "\treturn t", "}"]
    got = units(split_diff(added_diff("sum.go", "package sum", lines), levels=("syntax",)))
    assert got == {("syntax", (1, 2, 3, 4, 5, 6, 7, 8, 9)), ("syntax", (3, 4, 5, 6, 7)), ("syntax", (4, 5, 6))}


def one_step(path: str, code_lines: list[str], reward: float) -> credit.Trajectory:
    action = insert_call(path, code_lines)
    body = [" // context above"] + ["+" + x for x in code_lines] + [" // context below"]
    hunk = f"@@ -9,2 +9,{len(code_lines) + 2} @@\n" + "\n".join(body) + "\n"
    step = credit.Step(action, file_diff(path, hunk), token_offsets=offsets(action))
    return credit.Trajectory("q", [step], reward)


def test_didpo_groups_a_rust_function_written_with_other_comments():
    """The same fn with different // comments is one anchor: credit lands on each rollout's own lines."""
    def function(comment: str) -> list[str]:
        return ["pub fn total(items: &[u32]) -> u32 {", f"    // {comment}", "    let mut sum = 0;",
                "    for x in items {", "        sum += x;", "    }", "    sum", "}"]

    trajs = [one_step("src/lib.rs", function("add them up"), 1), one_step("src/lib.rs", function("sum"), 0)]
    res = credit.didpo(trajs)
    assert any(a.size == 2 and a.preview.startswith("pub fn total") for a in res.anchors)
    for i, sign in enumerate([1, -1]):
        action = trajs[i].steps[0].action
        loop = function("x")[3:6]
        np.testing.assert_allclose(res.tokens[i][0][token_mask(action, code_span(action, loop))], 1.0 * sign)
