"""The statements `code_gym.grading.statement` composes, in each language's wording, as they read
to the letter: a bug told by its symptoms, the function's contract shown when every symptom names
it, a missing body, no symptom at all, several regions. (These strings are what the statements
read before the composition moved out of the languages' folders.)"""
import pytest

from code_gym.grading.statement import leak
from code_gym.languages.javascript.builder import mutations as js_mutations, statement as js_statement
from code_gym.languages.python.builder import mutations as py_mutations, statement as py_statement

PY = '''"""Prices and carts."""


class Cart:
    """A shopping cart."""

    def total(self, tax):
        """The total with `tax`."""
        return sum(i * (1 + tax) for i in self.items if i > 0)
'''
JS = """/** Prices for the shop. */

/** Adds the tax to a price. */
function withTax(price, rate) {
  if (rate < 0) {
    return price;
  }
  return price + price * rate;
}
"""
PY_FN = py_mutations.functions("src/shop/cart.py", PY)[0]
PY_FLIP = next(c for c in py_mutations.mutation_sites(PY_FN, PY) if c.operator == "flip-comparison")
PY_BODY = py_mutations.remove_body(PY_FN, PY)
TOTAL, SUM = "tests/test_cart.py::TestCart::test_total", "tests/test_cart.py::test_sum"
PY_SYMPTOMS = {
    TOTAL: py_statement.Symptom(TOTAL, "assert cart_sum == 3", ("assert 0 == 3",)),
    SUM: py_statement.Symptom(SUM, "assert Cart([1, 2]).total(0) == 3",
                              ("assert 0 == 3", " +  where 0 = Cart([1, 2]).total(0)")),
}
JS_FN = js_mutations.functions("lib/tax.js", JS)[0]
JS_FLIP = next(c for c in js_mutations.mutation_sites(JS_FN, JS) if c.operator == "flip-comparison")
JS_BODY = js_mutations.remove_body(JS_FN, JS)
ADDS, KEEPS = "test/tax.test.js::withTax > adds the tax", "test/tax.test.js::withTax > keeps a negative rate"
JS_SYMPTOMS = {
    ADDS: js_statement.Symptom(ADDS, "Expected values to be strictly equal:\n\n3 !== 4\n"),
    KEEPS: js_statement.Symptom(KEEPS, "TypeError: withTax is not a function"),
}
PY_HEADER = '''```python
def total(self, tax):
    """The total with `tax`."""
```'''
JS_HEADER = """```js
/**
 * Adds the tax to a price.
 */
function withTax(price, rate) {
  // ...
}
```"""
FIX_THE_CODE = "Please fix the code (not the tests): the tests named above must pass and the others must keep passing."
HIDDEN = ("The tests named here are hidden from you; they must pass after the fix, and every other test must keep "
          "passing. The tests are right; the code is wrong.")

CASES = {
    "python, a bug by its symptom": (
        lambda: py_statement.write_statement(PY_FLIP, [TOTAL], PY_SYMPTOMS, seed="3"),
        f"""Something is wrong in `shop.cart` (`src/shop/cart.py`) (prices and carts).

Observed:
- in `test_total`: `cart_sum` gives `0` instead of `3`

{FIX_THE_CODE}"""),
    "python, every symptom names the function": (
        lambda: py_statement.write_statement(PY_FLIP, [SUM], PY_SYMPTOMS, seed="6"),
        f"""Wrong results from `shop.cart` (prices and carts).

Steps to reproduce are in the project's tests; what happens:
- in `test_sum`: `Cart([1, 2]).total(0)` gives `0` instead of `3`

The documented behaviour:

{PY_HEADER}

{HIDDEN}"""),
    "python, a missing body": (
        lambda: py_statement.write_statement(PY_BODY, [TOTAL], {}, seed="x"),
        f"""`Cart.total` in `src/shop/cart.py` is not implemented: its body is missing, only the signature \
and the docstring are left, so its callers fail.

It should do what its docstring says and what the rest of the project expects of it:

{PY_HEADER}

It lives in module `shop.cart` (`src/shop/cart.py`), described as: Prices and carts. It is a method of \
`Cart`, described as: A shopping cart.

Find the cause and fix it in the source; the tests are correct and hidden from you."""),
    "python, no symptom": (
        lambda: py_statement.write_statement(PY_FLIP, [TOTAL, SUM], {}, seed="1"),
        f"""`Cart.total` has a bug: it does not do what its documentation and its callers expect.

{PY_HEADER}

It lives in module `shop.cart` (`src/shop/cart.py`), described as: Prices and carts. It is a method of \
`Cart`, described as: A shopping cart.

These tests of the project fail because of it: `test_sum`, `test_total`.

{FIX_THE_CODE}"""),
    "javascript, a bug by its symptom": (
        lambda: js_statement.write_statement(JS_FLIP, [ADDS], JS_SYMPTOMS, seed="6"),
        f"""Wrong results from `lib/tax.js` (prices for the shop).

Steps to reproduce are in the project's tests; what happens:
- in `withTax > adds the tax`: the result is `3` instead of `4`

{HIDDEN}"""),
    "javascript, two regions (a symptom that names the function left out)": (
        lambda: js_statement.write_multi_statement(
            [(JS_FLIP, [ADDS], JS_SYMPTOMS), (JS_BODY, [ADDS, KEEPS], JS_SYMPTOMS)], seed="m"),
        f"""There are 2 independent bugs to fix here.

### Report 1

Wrong results from `lib/tax.js` (prices for the shop).

Steps to reproduce are in the project's tests; what happens:
- in `withTax > adds the tax`: the result is `3` instead of `4`

### Report 2

`withTax` in `lib/tax.js` is not implemented: its body is missing, only the signature and its comment \
are left, so its callers fail.

Observed:
- in `withTax > adds the tax`: the result is `3` instead of `4`

It should do what its comment says and what the rest of the project expects of it:

{JS_HEADER}

It lives in `lib/tax.js`, described as: Prices for the shop.

{FIX_THE_CODE}"""),
}


@pytest.mark.parametrize("case", CASES)
def test_statements_read_to_the_letter(case):
    write, expected = CASES[case]
    assert write() == expected


def test_a_statement_that_quotes_the_original_code_leaks_it():
    quoted = f"It used to read `{JS_FLIP.removed[1]}`."
    assert leak(quoted, JS_FLIP) == "the statement reveals the original code 'if (rate < 0) {'"
    assert leak(quoted.replace(" ", ""), JS_FLIP) is not None  # spaces do not hide it
    assert all(leak(write(), change) is None for write, _ in CASES.values()
               for change in (PY_FLIP, PY_BODY, JS_FLIP, JS_BODY))
