"""Go mutations through tree-sitter-go: the functions a file defines with their docs, every mutant
parses and edits only its function (and the imports it leaves unused), every mutant of a
hand-written package that the drop rules let through compiles under Debian's go, and each
operator changes what a real function does under `go test`.

The go toolchain runs here on this file's own packages only (trusted code, GOPATH mode, no
network); a package's code from outside runs only in the sandbox."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox_backends import IN_CI

from code_gym.grading.builder import REMOVE_BODY
from code_gym.languages.go import source
from code_gym.languages.go.builder import mutations

GO = shutil.which("go") or ("/usr/bin/go" if os.path.exists("/usr/bin/go") else None)
needs_go = pytest.mark.skipif(GO is None and not IN_CI, reason="go is not installed (apt-get install golang-go)")

MODULE = """\
// Copyright 2024 The Shop Authors. Licensed under the MIT license.

// Package shop prices carts.
package shop

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEmpty is returned for an empty price.
var ErrEmpty = errors.New("empty price")

// Cart holds the prices of items.
type Cart struct {
	items []int
}

// ParsePrice reads a price in cents: "1,299" -> 1299.
func ParsePrice(text string) (int, error) {
	// commas separate thousands
	cleaned := strings.ReplaceAll(strings.TrimSpace(text), ",", "")
	if cleaned == "" {
		return 0, ErrEmpty
	}
	n := 0
	for _, r := range cleaned {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("bad digit %q", r)
		}
		n = n*10 + int(r-'0')
	}
	return n, nil
}

// Total sums the prices, skipping negative ones.
func (c *Cart) Total() int {
	sum := 0
	for i := 0; i < len(c.items); i++ {
		if c.items[i] < 0 {
			continue
		}
		sum += c.items[i]
	}
	return sum
}

// Max is the larger of two prices.
func Max(a, b int) int {
	if a > b && a != 0 {
		return a
	}
	return b
}

// Sub subtracts b from a.
func Sub(a, b int) int {
	return a - b
}

// Diff is how much dearer a is than b.
func Diff(a, b int) int {
	return Sub(a, b)
}

// Buckets counts prices under each limit.
func Buckets(prices []int) [3]int {
	var out [3]int
	limits := []int{100, 1000}
	for _, p := range prices {
		k := len(limits)
		for i, l := range limits {
			if p < l {
				k = i
				break
			}
		}
		out[k]++
	}
	return out
}

func (c *Cart) Empty() bool { return len(c.items) == 0 }

func todo() {
	panic("todo")
}
"""

TESTS = """\
package shop

import "testing"

func TestParsePrice(t *testing.T) {
	for text, want := range map[string]int{"1,299": 1299, " 42 ": 42, "0": 0} {
		if got, err := ParsePrice(text); err != nil || got != want {
			t.Errorf("ParsePrice(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	if _, err := ParsePrice("  "); err != ErrEmpty {
		t.Errorf("an empty price: %v", err)
	}
	if _, err := ParsePrice("1x"); err == nil {
		t.Error("a bad digit is accepted")
	}
}

func TestTotal(t *testing.T) {
	if got := (&Cart{[]int{5, -3, 7}}).Total(); got != 12 {
		t.Errorf("Total = %d, want 12", got)
	}
}

func TestMaxDiff(t *testing.T) {
	if Max(3, 9) != 9 || Max(9, 3) != 9 || Max(0, -1) != -1 {
		t.Error("Max")
	}
	if Diff(10, 4) != 6 {
		t.Error("Diff")
	}
}

func TestBuckets(t *testing.T) {
	if got := Buckets([]int{5, 50, 500, 5000, 99}); got != [3]int{3, 1, 1} {
		t.Errorf("Buckets = %v", got)
	}
}
"""


def test_the_functions_of_a_file_with_their_docs():
    found = mutations.functions("shop/shop.go", MODULE)
    assert [(f.qualname, f.signature) for f in found] == [
        ("ParsePrice", "func ParsePrice(text string) (int, error)"),
        ("Cart.Total", "func (c *Cart) Total() int"),
        ("Max", "func Max(a, b int) int"),
        ("Sub", "func Sub(a, b int) int"),
        ("Diff", "func Diff(a, b int) int"),
        ("Buckets", "func Buckets(prices []int) [3]int"),
    ]  # not: a one-line method, a body that only panics
    parse, total = found[:2]
    assert parse.docstring == 'ParsePrice reads a price in cents: "1,299" -> 1299.'
    assert parse.module_doc == "Package shop prices carts."  # the license above it is no package doc
    assert total.class_doc == "Cart holds the prices of items." and parse.class_doc is None
    assert parse.body_lines == (23, 34) and (parse.node.lineno, parse.node.end_lineno) == (20, 35)


def test_a_method_of_a_generic_type_and_a_license_only_file():
    text = "// Copyright 2020 x\n\npackage p\n\n// Set is a set.\ntype Set[T comparable] map[T]bool\n\n" \
           "func (s Set[T]) Has(v T) bool {\n\t_, ok := s[v]\n\treturn ok\n}\n"
    [has] = mutations.functions("p.go", text)
    assert has.qualname == "Set.Has" and has.class_doc == "Set is a set." and has.module_doc is None


def test_a_file_that_does_not_parse_raises_syntax_error():
    with pytest.raises(SyntaxError, match="broken.go: line"):
        mutations.functions("broken.go", "package p\n\nfunc f( {\n\treturn 1\n}\n")


def test_remove_body_panics_and_drops_the_imports_it_leaves_unused():
    fn = mutations.functions("shop.go", MODULE)[0]
    change = mutations.remove_body(fn, MODULE)
    assert change.operator == REMOVE_BODY and change.kind == "feature" and change.line == 23
    assert '\tpanic("not implemented")\n}\n' in change.source
    assert "commas separate" not in change.source  # the comment above the first statement goes with the body
    # strings and fmt were used only there; errors is still used by ErrEmpty
    assert '"strings"' not in change.source and '"fmt"' not in change.source and '"errors"' in change.source
    assert "strings.ReplaceAll(strings.TrimSpace(text), \",\", \"\")" in change.removed
    assert source.syntax_error(source.parse(change.source.encode())) is None


def test_an_import_left_as_the_only_one_goes_with_its_declaration():
    text = 'package p\n\nimport "strings"\n\n// Up upper-cases.\nfunc Up(s string) string {\n\ts = strings.ToUpper(s)\n' \
           '\treturn s\n}\n'
    change = mutations.remove_body(mutations.functions("p.go", text)[0], text)
    assert "import" not in change.source and change.source.startswith("package p\n")


def _all_mutants(text=MODULE):
    for fn in mutations.functions("shop.go", text):
        yield from ((fn, change) for change in mutations.mutation_sites(fn, text))


def test_every_mutant_parses_and_edits_only_its_function_and_imports():
    operators = set()
    for fn, change in _all_mutants():
        assert source.syntax_error(source.parse(change.source.encode())) is None, (fn.qualname, change.operator)
        before = MODULE.splitlines()
        after = change.source.splitlines()
        import_lines = {i for i, line in enumerate(before) if line.startswith('\t"')}
        changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        first = changed[0] if changed else len(after)
        assert first + 1 >= fn.node.lineno or first in import_lines, (fn.qualname, change.operator)
        operators.add(change.operator)
    assert operators == set(mutations.OPERATORS)


def test_the_drop_rules_keep_go_s_declared_and_not_used_check():
    """`if r < '0' || r > '9'`: dropping `r > '9'` keeps r read; the guard `if c.items[i] < 0`
    drops with its lines; a guard whose only reader of a local is itself is not dropped."""
    text = "package p\n\nfunc f(xs []int) int {\n\tn := len(xs)\n\tif n > 3 {\n\t\treturn 1\n\t}\n\treturn 0\n}\n"
    fn = mutations.functions("p.go", text)[0]
    assert not [c for c in mutations.mutation_sites(fn, text) if c.operator == "drop-condition"]
    text2 = text.replace("\treturn 0\n", "\treturn n\n")
    fn2 = mutations.functions("p.go", text2)[0]
    [drop] = [c for c in mutations.mutation_sites(fn2, text2) if c.operator == "drop-condition"]
    assert "if n > 3" not in drop.source and "return n" in drop.source


def test_swaps_leave_out_builtins_conversions_and_spreads():
    text = "package p\n\nfunc f(a, b []int, s string) []int {\n\tx := make([]int, len(a))\n\tcopy(x, a)\n" \
           "\ty := append(a, b...)\n\tg(len(a), len(b))\n\th(b, y...)\n\treturn x\n}\n"
    fn = mutations.functions("p.go", text)[0]
    swaps = [c for c in mutations.mutation_sites(fn, text) if c.operator == "swap-arguments"]
    assert [c.line for c in swaps] == [7] and "g(len(b), len(a))" in swaps[0].source


def test_an_array_length_is_no_off_by_one_site():
    fn = [f for f in mutations.functions("shop.go", MODULE) if f.qualname == "Buckets"][0]
    for change in mutations.mutation_sites(fn, MODULE):
        assert "var out [3]int" in change.source and "func Buckets(prices []int) [3]int" in change.source


def test_pick_mutations_spreads_over_operators_and_is_seeded():
    fn = mutations.functions("shop.go", MODULE)[0]
    first = mutations.pick_mutations(fn, MODULE, 4, random.Random(1))
    again = mutations.pick_mutations(fn, MODULE, 4, random.Random(1))
    assert [c.source for c in first] == [c.source for c in again]
    assert len({c.operator for c in first}) == 4


def _gopath(tmp: Path, files: dict[str, str]) -> Path:
    package = tmp / "src" / "example.com" / "shop"
    package.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (package / name).write_text(text)
    return package


def _go(args: list[str], package: Path, tmp: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "GOPATH": str(tmp), "GO111MODULE": "off", "GOFLAGS": "",
           "GOPROXY": "off", "GOCACHE": str(tmp / "cache"), "CGO_ENABLED": "0"}
    return subprocess.run([GO, *args], cwd=package, env=env, capture_output=True, text=True, timeout=300)


@needs_go
def test_every_mutant_compiles_and_each_operator_fails_a_test(tmp_path):
    package = _gopath(tmp_path, {"shop.go": MODULE, "shop_test.go": TESTS})
    assert _go(["test", "-count=1", "."], package, tmp_path).returncode == 0
    changes = [c for _, c in _all_mutants()]
    changes += [mutations.remove_body(fn, MODULE) for fn in mutations.functions("shop.go", MODULE)]
    not_compiling, failing = [], set()
    for change in changes:
        (package / "shop.go").write_text(change.source)
        run = _go(["test", "-count=1", "-vet=off", "."], package, tmp_path)
        if "[build failed]" in run.stdout + run.stderr:
            not_compiling.append((change.function.qualname, change.operator, change.line, run.stderr[-300:]))
        elif run.returncode != 0:
            failing.add(change.operator)
    # swap-arguments of Sub(a, b) compiles; no drop or import edit breaks the build
    assert not [n for n in not_compiling if n[1] != "swap-arguments"], not_compiling
    assert failing == set(mutations.OPERATORS) | {REMOVE_BODY}
