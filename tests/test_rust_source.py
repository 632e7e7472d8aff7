"""Rust source read by tree-sitter-rust: the definition around some lines (the reference hint's
units), the tokens the audit reads, and the `static` reward's check (never compiled)."""
from __future__ import annotations

import textwrap

import pytest

from code_gym.languages.rust import source

CRATE = textwrap.dedent("""\
    use std::fmt;

    /// A length in metres.
    #[derive(Debug)]
    pub struct Length {
        pub metres: f64,
    }

    impl<'a, T: Copy> fmt::Display for &'a Wrapper<T> {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "x")
        }
    }

    mod parse {
        pub fn digits(text: &str) -> usize {
            fn is_digit(c: char) -> bool {
                c.is_ascii_digit()
            }
            text.chars().filter(|c| is_digit(*c)).count()
        }
    }

    trait Shape { fn area(&self) -> f64 { 0.0 } }

    const LIMIT: u32 = 10;
""")


@pytest.mark.parametrize("lines,name", [
    ([11], "Wrapper::fmt"),  # a method of an impl, named by the impl's type without generics or references
    ([10, 12], "Wrapper::fmt"),
    ([9], "Wrapper"),  # the impl's header line: the impl
    ([18], "parse::digits::is_digit"),  # a fn in a fn in a module
    ([17, 20], "parse::digits"),
    ([16, 21], "parse::digits"),
    ([3], "Length"),  # a doc comment belongs to the item after it
    ([4, 6], "Length"),
    ([24], "Shape::area"),  # one line holding a trait and its method: the inner one
    ([26], "LIMIT"),
    ([1], ""),
    ([11, 17], ""),  # lines in two definitions: none spans both (a module is never the answer)
])
def test_enclosing_definition(lines, name):
    assert source.enclosing_definition(CRATE.encode(), lines) == name


def test_enclosing_definition_of_nothing():
    assert source.enclosing_definition(None, [1]) == ""
    assert source.enclosing_definition(b"fn f() {}", []) == ""


def test_tokens_drop_comments_decode_strings_and_enter_macro_bodies():
    tree = source.parse(br'''fn f() { let s = "a\x41\u{42}\n"; /* std::process::exit */ m!{ r#type::x r"raw\n" } }''')
    seen = [(t.kind, t.text) for t in source.tokens(tree)]
    assert ("string", "aAB\n") in seen and ("string", "raw\\n") in seen
    assert ("identifier", "type") in seen  # a raw identifier without its prefix, inside a macro's token tree
    assert all("process" not in text for _, text in seen)  # a comment is no token


def test_check_file_compiles_and_reports_what_the_change_added():
    old = b"fn f() -> u32 { todo!() }\nfn g() { unsafe { h() } }\n"
    fixed = b"fn f() -> u32 { 1 }\nfn g() { unsafe { h() } }\n"
    check = source.check_file("src/lib.rs", old, fixed)
    assert check.compiles and check.new_findings == [] and check.score == 1.0
    messy = b"#[allow(unused)]\nfn f() -> u32 { dbg!(1); unsafe { 1 } }\nfn g() { unsafe { h() } todo!() }\n"
    check = source.check_file("src/lib.rs", old, messy)
    assert check.compiles
    assert check.new_findings == ["DebugMacro in f", "LintAllowed in f", "Todo in g", "UnsafeCode in f"]


def test_check_file_fails_a_syntax_error_and_names_it():
    check = source.check_file("src/lib.rs", b"fn f() {}\n", b"fn f() {\n    let x = ;\n}\n")
    assert not check.compiles and check.score == 0.0
    assert check.error.startswith("line 2:")


def test_check_file_keeps_a_grammar_gap_the_task_already_had():
    """tree-sitter-rust 0.24 rejects `~` inside macro bodies (anyhow's macros have it); rustc takes it."""
    old = b"macro_rules! m { () => { ~ } }\nfn f() -> u32 { todo!() }\n"
    check = source.check_file("src/lib.rs", old, old.replace(b"todo!()", b"1"))
    assert check.compiles and check.new_findings == []
    assert not source.check_file("src/lib.rs", old, old + b"fn g() { ~ }\n").compiles  # a second one is the change's


def test_check_file_of_an_oversized_file():
    check = source.check_file("src/lib.rs", b"", b"// x\n" * (source.MAX_SOURCE_BYTES // 4))
    assert not check.compiles and "too large" in check.error
