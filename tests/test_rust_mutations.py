"""Rust mutations through tree-sitter-rust: the functions a file defines (test code left out),
every mutant parses and edits only its function, each operator changes what a real function does
under rustc, and the statements read libtest's panic messages in both of rustc's shapes."""
import random
import shutil
import subprocess

import pytest
from sandbox_backends import IN_CI

from code_gym.grading.builder import REMOVE_BODY
from code_gym.languages.rust.builder import mutations
from code_gym.languages.rust.builder.statement import Symptom, describe, panic_message, write_statement

MODULE = """\
//! Price helpers for the shop.
//!
//! Prices are in cents.

use std::fmt;

/// Parses a price: "1,299" -> 1299.
///
/// Empty text is zero.
#[inline]
pub fn parse_price(text: &str) -> u64 {
    // commas are thousands separators
    let cleaned: String = text.trim().chars().filter(|c| *c != ',').collect();
    if cleaned.is_empty() || cleaned.len() > 20 {
        return 0;
    }
    cleaned.parse().unwrap_or(0)
}

/// A shopping cart.
pub struct Cart {
    items: Vec<u64>,
}

impl Cart {
    /// Sums the prices over a floor.
    pub fn total(&self, floor: u64) -> u64 {
        let mut sum = 0;
        for i in 0..self.items.len() {
            if self.items[i] == 0 {
                continue;
            }
            sum += std::cmp::max(self.items[i], floor);
        }
        sum
    }

    pub fn is_empty(&self) -> bool { self.items.len() == 0 }

    fn count(&self) -> usize {
        assert!(self.items.len() < 100);
        self.items.len()
    }
}

impl<T: AsRef<str>> fmt::Display for Wrapper<T> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let text = self.0.as_ref();
        write!(f, "{}", text)
    }
}

pub mod round {
    /// Rounds to a step.
    pub fn to_step(value: u64, step: u64) -> u64 {
        let steps = value / step;
        steps * step
    }
}

pub fn evens() -> impl Iterator<Item = u32> {
    let limit = 10;
    (0..limit).filter(|n| n % 2 == 0)
}

pub fn unfinished(x: u32) -> u32 {
    todo!()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let x = parse_price("1,299");
        assert_eq!(x, 1299);
    }
}

#[test]
fn loose_test() {
    let y = 1 + 1;
    assert_eq!(y, 2);
}
"""


def by_name(source=MODULE):
    return {f.qualname: f for f in mutations.functions("src/lib.rs", source)}


def test_functions_and_their_docs():
    fns = by_name()
    assert list(fns) == ["parse_price", "Cart::total", "Cart::count", "Wrapper::fmt", "round::to_step", "evens"]
    price = fns["parse_price"]
    assert price.docstring == "Parses a price: \"1,299\" -> 1299.\n\nEmpty text is zero."
    assert price.signature == "pub fn parse_price(text: &str) -> u64"
    assert price.module_doc.startswith("Price helpers for the shop.")
    assert price.body_lines == (13, 17)
    assert (price.node.lineno, price.node.end_lineno) == (11, 18)
    assert fns["Cart::total"].class_doc == "A shopping cart."
    assert fns["Cart::count"].docstring is None
    assert "tests::parses" not in fns and "loose_test" not in fns  # test code is left out
    assert "Cart::is_empty" not in fns  # a body on one line
    assert "unfinished" not in fns  # a placeholder body


def test_impl_for_a_type_parameter_goes_by_its_trait():
    source = "trait Shout { fn shout(&self) -> String; }\n" \
             "impl<T: AsRef<str>> Shout for T {\n    fn shout(&self) -> String {\n" \
             "        self.as_ref().to_uppercase()\n    }\n}\n"
    assert list(by_name(source)) == ["Shout::shout"]


def test_a_file_of_test_code_has_no_functions():
    assert mutations.functions("src/tests.rs", "#![cfg(test)]\nfn helper() -> u8 {\n    1 + 1\n}\n") == []


def test_syntax_error_is_raised():
    with pytest.raises(SyntaxError):
        mutations.functions("src/lib.rs", "fn broken( {\n")


def test_remove_body_keeps_signature_and_doc():
    fns = by_name()
    change = mutations.remove_body(fns["parse_price"], MODULE)
    assert change.operator == REMOVE_BODY and change.kind == "feature"
    assert "    todo!()\n}" in change.source
    assert "/// Parses a price" in change.source and "pub fn parse_price(text: &str) -> u64 {" in change.source
    assert "commas are thousands separators" not in change.source
    assert "cleaned.parse().unwrap_or(0)" in change.removed
    assert change.source.count("fn total(") == 1 and "sum += std::cmp::max" in change.source
    assert mutations.remove_body(fns["evens"], MODULE) is None  # `!` cannot stand for `impl Iterator`


def _lines_changed(before: str, after: str) -> set[int]:
    import difflib
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return {i + 1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal" for i in range(i1, max(i2, i1 + 1))}


def test_every_site_parses_and_stays_in_its_function():
    fns = by_name()
    seen = set()
    for fn in fns.values():
        for change in mutations.mutation_sites(fn, MODULE):
            seen.add(change.operator)
            assert mutations.syntax_error(mutations.parse(change.source.encode())) is None
            lines = _lines_changed(MODULE, change.source)
            assert lines and all(fn.node.lineno <= n <= fn.node.end_lineno for n in lines), (fn.qualname, change.operator)
    assert seen == set(mutations.OPERATORS)


def test_operators_edit_what_they_say():
    fns = by_name()
    sites = mutations.mutation_sites(fns["Cart::total"], MODULE)
    sources = {(c.operator, c.source) for c in sites}
    assert ("flip-comparison", MODULE.replace("self.items[i] == 0", "self.items[i] != 0")) in sources
    assert ("off-by-one", MODULE.replace("let mut sum = 0;", "let mut sum = 1;")) in sources
    assert ("swap-arguments", MODULE.replace("max(self.items[i], floor)", "max(floor, self.items[i])")) in sources
    guard = "            if self.items[i] == 0 {\n                continue;\n            }\n"
    assert ("drop-condition", MODULE.replace(guard, "")) in sources
    price = {(c.operator, c.source) for c in mutations.mutation_sites(fns["parse_price"], MODULE)}
    assert ("drop-condition", MODULE.replace("cleaned.is_empty() || cleaned.len() > 20", "cleaned.is_empty()")) in price
    assert ("off-by-one", MODULE.replace("cleaned.len() > 20", "cleaned.len() >= 20")) in price


def test_macro_arguments_and_types_are_not_mutated():
    fns = by_name()
    count = mutations.mutation_sites(fns["Cart::count"], MODULE)
    assert count == []  # `assert!(len < 100)` is a token tree
    text = "fn f(x: [u8; 4], p: (u8, u8)) -> u8 {\n    let a = p.0;\n    a + x[0]\n}\n"
    sources = {c.source for c in mutations.mutation_sites(by_name(text)["f"], text)}
    assert sources == {text.replace("x[0]", "x[1]")}
    small = "fn g() -> u8 {\n    let a = 255u8;\n    a\n}\n"
    assert mutations.mutation_sites(by_name(small)["g"], small) == []  # 256u8 is out of range


def test_swap_only_when_arguments_look_alike():
    text = "fn f(a: u8, s: &str) -> u8 {\n    let b = g(a, \"x\");\n    h(a, 2) + k(&s, a) + m(a, s)\n}\n"
    swaps = [c.source for c in mutations.mutation_sites(by_name(text)["f"], text) if c.operator == "swap-arguments"]
    assert swaps == [text.replace("m(a, s)", "m(s, a)")]


def test_pick_mutations_spreads_operators_and_is_seeded():
    fn = by_name()["Cart::total"]
    first = mutations.pick_mutations(fn, MODULE, 4, random.Random(1))
    again = mutations.pick_mutations(fn, MODULE, 4, random.Random(1))
    assert [c.source for c in first] == [c.source for c in again]
    assert {c.operator for c in first} == set(mutations.OPERATORS)


RUSTC = shutil.which("rustc", path="/usr/bin")
PROGRAM = """\
/// Counts the items over a floor.
pub fn count_over(items: &[u32], floor: u32) -> usize {
    let mut n = 0;
    for item in items {
        if *item < floor && *item != 7 {
            continue;
        }
        n += 1;
    }
    n
}

fn pick(a: u32, b: u32) -> u32 {
    a * 10 + b
}

pub fn digits(x: u32) -> u32 {
    let tens = x / 10;
    let ones = x % 10;
    pick(tens, ones)
}

#[test]
fn counts() {
    assert_eq!(count_over(&[1, 5, 9, 7, 5], 5), 4);
}

#[test]
fn picks() {
    assert_eq!(digits(42), 42);
    assert_eq!(pick(4, 2), 42);
}
"""


@pytest.mark.skipif(RUSTC is None and not IN_CI, reason="Debian's rustc is not installed at /usr/bin/rustc")
def test_each_operator_changes_behaviour_under_rustc(tmp_path):
    """Our own small program (no package's code) compiled with rustc --test: the original passes,
    and each operator yields a mutant that compiles and fails a test."""
    def failures(source: str) -> int | None:
        (tmp_path / "m.rs").write_text(source)
        built = subprocess.run([RUSTC, "--edition", "2018", "--test", "-o", str(tmp_path / "m"), str(tmp_path / "m.rs")],
                               capture_output=True, text=True, timeout=120)
        if built.returncode != 0:
            return None
        ran = subprocess.run([str(tmp_path / "m"), "--test-threads", "1"], capture_output=True, text=True, timeout=60)
        return ran.stdout.count(" ... FAILED")

    assert failures(PROGRAM) == 0
    fns = {f.qualname: f for f in mutations.functions("m.rs", PROGRAM)}
    killed = set()
    for fn in fns.values():
        for change in [mutations.remove_body(fn, PROGRAM), *mutations.mutation_sites(fn, PROGRAM)]:
            if change is None or change.operator in killed:
                continue
            if failures(change.source):
                killed.add(change.operator)
    assert killed == {REMOVE_BODY, *mutations.OPERATORS}


OLD_EQ = ("thread 'tests::parses' panicked at 'assertion failed: `(left == right)`\n  left: `2`,\n right: `3`', "
          "src/lib.rs:9:9\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n")
NEW_EQ = "thread 'tests::parses' panicked at src/lib.rs:9:9:\nassertion `left == right` failed: sums\n  left: 2\n right: 3\n"


def test_panic_messages_of_both_shapes():
    assert panic_message(OLD_EQ).startswith("assertion failed: `(left == right)`")
    assert describe(Symptom("t", OLD_EQ)) == "the values compared differ: left `2`, right `3`"
    assert describe(Symptom("t", NEW_EQ)) == "the values compared differ: left `2`, right `3` (the test says: sums)"
    assert describe(Symptom("t", "thread 'a' panicked at 'assertion failed: x < 3', tests/a.rs:4:5\n")) == \
        "the check `x < 3` fails"
    assert describe(Symptom("t", "thread 'a' panicked at 'not yet implemented', src/lib.rs:4:5\n")) == \
        "it reaches code that is not implemented (`todo!()`)"
    said = describe(Symptom("t", "thread 'a' panicked at 'called `Option::unwrap()` on a `None` value', src/x.rs:1:2"))
    assert said == "it panics with `` called `Option::unwrap()` on a `None` value ``"
    assert "src/" not in said  # the panic's place would point at the changed line


def test_statement_names_file_and_hides_the_place():
    fn = by_name()["Cart::total"]
    [change] = [c for c in mutations.mutation_sites(fn, MODULE) if c.source == MODULE.replace("items[i] == 0", "items[i] != 0")]
    text = write_statement(change, ["tests/cart.rs::sums"], {"tests/cart.rs::sums": Symptom("tests/cart.rs::sums", OLD_EQ)},
                           seed="x")
    assert "src/lib.rs" in text and "`sums`" in text and "left `2`, right `3`" in text
    assert "src/lib.rs:9" not in text


def test_module_doc_skips_badges():
    source = ("//! [![github]](https://github.com/x/y)&ensp;[![docs-rs]](https://docs.rs/y)\n//!\n"
              "//! [github]: https://img.shields.io/badge/github\n//!\n//! <br>\n//!\n"
              "//! Fast conversion of integers to text.\n\n/// Doc.\npub fn f(x: u8) -> u8 {\n    x + 1\n}\n")
    assert mutations.functions("src/lib.rs", source)[0].module_doc == "Fast conversion of integers to text."


def test_module_doc_skips_link_definitions():
    source = ("//! [![github]](https://github.com/x/y)\n//!\n//! [github]: https://img.shields.io/a\n"
              "//! [docs-rs]: https://img.shields.io/b\n//!\n//! Fast conversion.\n//! Of integers.\n\n"
              "/// Doc.\npub fn f(x: u8) -> u8 {\n    x + 1\n}\n")
    assert mutations.functions("src/lib.rs", source)[0].module_doc == "Fast conversion.\nOf integers."
