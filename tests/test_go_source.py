"""Go source through tree-sitter-go: the definition around some lines and the static check (the
`static` reward) of a changed file, read without the Go toolchain."""
from __future__ import annotations

import textwrap

import pytest

from code_gym.languages.go import source

PACKAGE = textwrap.dedent("""\
    package stack

    import (
    \t"errors"
    \t"fmt"
    )

    // Stack is a stack of ints.
    type Stack struct {
    \titems []int
    }

    // Push adds x.
    func (s *Stack) Push(x int) {
    \ts.items = append(s.items, x)
    }

    // Pop takes the top.
    func (s *Stack) Pop() (int, error) {
    \tif len(s.items) == 0 {
    \t\treturn 0, errors.New("empty")
    \t}
    \tx := s.items[len(s.items)-1]
    \ts.items = s.items[:len(s.items)-1]
    \treturn x, nil
    }

    type List[T any] struct{ xs []T }

    func (l List[T]) Len() int {
    \treturn len(l.xs)
    }

    func Describe(s *Stack) string {
    \treturn fmt.Sprint(len(s.items))
    }
""")


def test_parse_reads_go_and_names_where_it_does_not():
    assert source.syntax_error(source.parse(PACKAGE.encode())) is None
    error = source.syntax_error(source.parse(b"package x\n\nfunc F( {\n}\n"))
    assert error is not None and error.startswith("line 3")
    assert source.package_name(source.parse(PACKAGE.encode())) == "stack"


@pytest.mark.parametrize("lines,name", [
    ([15], "Stack.Push"),  # a pointer receiver
    ([20, 24], "Stack.Pop"),
    ([31], "List.Len"),  # a generic receiver
    ([10], "Stack"),  # a type declaration
    ([35], "Describe"),
    ([3], ""),  # the imports: no definition
    ([15, 20], ""),  # two methods: none spans both
])
def test_enclosing_definition_is_the_innermost_function_method_or_type(lines, name):
    assert source.enclosing_definition(PACKAGE.encode(), lines) == name


def test_enclosing_definition_of_nothing_is_empty():
    assert source.enclosing_definition(None, [1]) == ""
    assert source.enclosing_definition(PACKAGE.encode(), []) == ""


def test_a_changed_file_that_parses_compiles_with_no_findings():
    fixed = PACKAGE.replace("len(s.items) == 0", "len(s.items) < 1")
    check = source.check_file("stack.go", PACKAGE.encode(), fixed.encode())
    assert check.compiles and check.new_findings == [] and check.score == 1.0


def test_a_syntax_error_or_a_missing_package_clause_does_not_compile():
    broken = source.check_file("stack.go", PACKAGE.encode(), PACKAGE.replace("return x, nil", "return x, nil)").encode())
    assert not broken.compiles and "syntax error" in broken.error and broken.score == 0.0
    headless = source.check_file("stack.go", PACKAGE.encode(), PACKAGE.replace("package stack\n", "").encode())
    assert not headless.compiles and "package clause" in headless.error


def test_a_new_unused_import_is_a_finding_and_an_old_one_is_not():
    unused = PACKAGE.replace('\t"fmt"\n', '\t"fmt"\n\t"os"\n')
    check = source.check_file("stack.go", PACKAGE.encode(), unused.encode())
    assert check.compiles and check.new_findings == ['UnusedImport: "os" imported and not used']
    assert check.score == 0.5
    again = source.check_file("stack.go", unused.encode(), unused.replace("len(s.items) == 0", "len(s.items) < 1").encode())
    assert again.new_findings == []


@pytest.mark.parametrize("imports,unused", [
    ('"strings"', ['UnusedImport: "strings" imported and not used']),
    ('str "strings"', ['UnusedImport: "strings" imported and not used']),
    ('yaml "gopkg.in/yaml.v2"', ['UnusedImport: "gopkg.in/yaml.v2" imported and not used']),
    ('"github.com/mattn/go-sqlite3"', []),  # its package name need not be its path's: not judged
    ('_ "embed"', []),
    ('. "math"', []),
    ('"net/http"', []),  # used as http below
])
def test_which_imports_are_judged_unused(imports, unused):
    text = f"package x\n\nimport (\n\t{imports}\n)\n\nvar _ = http.StatusOK\n"
    assert source.unused_imports(source.parse(text.encode())) == unused


def test_an_import_named_only_in_a_type_is_used():
    text = b'package x\n\nimport "io"\n\nfunc F(r io.Reader) {}\n'
    assert source.unused_imports(source.parse(text)) == []


@pytest.mark.parametrize("body,unused", [
    ("x := 1\n\treturn", ["UnusedVariable: x declared but not used"]),
    ("var y int\n\treturn", ["UnusedVariable: y declared but not used"]),
    ("for i, v := range []int{1} {\n\t\t_ = i\n\t}", ["UnusedVariable: v declared but not used"]),
    ("switch w := any(1).(type) {\n\tcase int:\n\t}", ["UnusedVariable: w declared but not used"]),
    ("x := 1\n\tfmt.Println(x)", []),
    ("x := 1\n\tfunc() { fmt.Println(x) }()", []),  # read in a closure
    ("_, err := fmt.Println()\n\t_ = err", []),
    ("var i int\n\tfor i = range []int{1} {\n\t}\n\t_ = i", []),  # assigned by range, not declared
])
def test_unused_local_variables(body, unused):
    text = f'package x\n\nimport "fmt"\n\nvar _ = fmt.Sprint\n\nfunc F() {{\n\t{body}\n}}\n'
    tree = source.parse(text.encode())
    assert source.syntax_error(tree) is None, text
    assert source.unused_variables(tree) == unused


def test_a_parameter_or_a_named_result_is_not_a_local_variable():
    text = b"package x\n\nfunc F(a int) (n int) {\n\treturn 0\n}\n"
    assert source.name_findings(source.parse(text)) == []


def test_a_file_grown_past_the_limit_is_not_parsed():
    grown = PACKAGE + "// " + "x" * (source.MAX_SOURCE_BYTES + 1) + "\n"
    check = source.check_file("stack.go", PACKAGE.encode(), grown.encode())
    assert not check.compiles and "too large" in check.error
