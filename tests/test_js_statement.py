"""JavaScript task statements: symptoms from the failing tests' messages (node's assert, chai,
jest, thrown errors), the function named only when needed, and no leak of the original code."""
import json
import shutil
import subprocess

import pytest

from code_gym.languages.javascript.builder import mutations, statement

MODULE = """\
/** Prices for the shop. */

/** Adds the tax to a price. */
function withTax(price, rate) {
  if (rate < 0) {
    return price;
  }
  return price + price * rate;
}

module.exports = { withTax };
"""
FN = mutations.functions("lib/tax.js", MODULE)[0]
FLIP = next(c for c in mutations.mutation_sites(FN, MODULE) if c.operator == "flip-comparison")

# assertions as tests write them, and the sentence each failure gives
NODE_ASSERTS = {
    "assert.strictEqual(3, 4)": "the result is `3` instead of `4`",
    "assert.strictEqual('abc', 'abd')": "the result is `'abc'` instead of `'abd'`",
    "assert.strictEqual(3, 4, 'tax of a free item')": "the result is `3` instead of `4` (the test says: tax of a free item)",
    "assert.equal(3, 4)": "the result is `3` instead of `4`",
    "assert.deepStrictEqual([1, 2, 3], [1, 3, 3])": "the result differs from the expected value: `2` where `3` is expected",
    "assert.deepStrictEqual({ a: 1, b: 'x' }, { a: 1, b: 'y' })":
        "the result differs from the expected value: `b: 'x'` where `b: 'y'` is expected",
    "assert.deepEqual([1], [2])": "the result is `[ 1 ]` instead of `[ 2 ]`",
    "assert.throws(() => {})": "no exception is thrown where one is expected",
    "assert.throws(() => {}, TypeError)": "no `TypeError` is thrown where one is expected",
    "null.x": "it fails with `Cannot read properties of null (reading 'x')`",
}
OTHER_LIBRARIES = {  # chai's and jest's messages, as they print them
    "expected 3 to equal 4": "the result is `3` instead of `4`",
    "expected [ 1, 2 ] to deeply equal [ 1, 3 ]": "the result is `[ 1, 2 ]` instead of `[ 1, 3 ]`",
    "expected 'abc' to include 'x'": "it fails with `expected 'abc' to include 'x'`",
    "expect(received).toBe(expected) // Object.is equality\n\nExpected: \x1b[32m4\x1b[39m\nReceived: \x1b[31m3\x1b[39m":
        "the result is `3` instead of `4`",
    "expect(received).toEqual(expected) // deep equality\n\n- Expected  - 1\n+ Received  + 1\n\n  Array [\n    1,\n"
    "-   3,\n+   2,\n  ]": "the result differs from the expected value: `2` where `3` is expected",
    "TypeError: withTax is not a function": "it fails with `TypeError: withTax is not a function`",
}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (scripts/setup.sh installs it)")
def test_node_assert_messages_become_sentences(tmp_path):
    script = "const assert = require('assert');\nconst out = [];\n" + "".join(
        f"try {{ {code}; out.push(null); }} catch (e) {{ out.push(e.message); }}\n" for code in NODE_ASSERTS)
    (tmp_path / "asserts.js").write_text(script + "console.log(JSON.stringify(out));\n")
    run = subprocess.run(["node", "asserts.js"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    messages = json.loads(run.stdout)
    tests = {f"test/a.test.js::case {i}": m for i, m in enumerate(messages)}
    symptoms = statement.parse_failures(tests, tests)
    assert [statement.describe(symptoms[t]) for t in tests] == list(NODE_ASSERTS.values())


@pytest.mark.parametrize("message, sentence", OTHER_LIBRARIES.items(), ids=range(len(OTHER_LIBRARIES)))
def test_chai_jest_and_error_messages_become_sentences(message, sentence):
    (symptom,) = statement.parse_failures({"t.js::x": message}, ["t.js::x"]).values()
    assert statement.describe(symptom) == sentence


def test_failing_tests_without_a_message_have_no_symptom():
    assert statement.parse_failures({"a::x": "", "b::y": "3 == 4"}, ["a::x", "b::y", "c::z"]).keys() == {"b::y"}


def test_a_bugfix_statement_tells_the_symptoms_without_the_function_or_its_code():
    failing = ["test/tax.test.js::withTax > adds the rate", "test/tax.test.js::withTax > keeps free items"]
    messages = {failing[0]: "Expected values to be strictly equal:\n\n100 !== 110\n",
                failing[1]: "Expected values to be strictly equal:\n\n-5 !== 0\n"}
    text = statement.write_statement(FLIP, failing, statement.parse_failures(messages, failing), seed="t1")
    assert "- in `withTax > adds the rate`: the result is `100` instead of `110`" in text
    assert "`lib/tax.js`" in text and "prices for the shop" in text
    assert "function withTax" not in text and statement.leak(text, FLIP) is None
    assert text == statement.write_statement(FLIP, failing, statement.parse_failures(messages, failing), seed="t1")


def test_symptoms_that_all_name_the_function_bring_its_contract():
    failing = ["t.js::x"]
    symptoms = statement.parse_failures({"t.js::x": "TypeError: withTax is not a function"}, failing)
    chosen, named = statement.pick_symptoms(FLIP, failing, symptoms)
    assert named and chosen == [("x", "it fails with `TypeError: withTax is not a function`")]
    text = statement.write_statement(FLIP, failing, symptoms)
    assert "```js\n/**\n * Adds the tax to a price.\n */\nfunction withTax(price, rate) {\n  // ...\n}\n```" in text


def test_a_feature_statement_shows_the_signature_and_not_the_removed_body():
    change = mutations.remove_body(FN, MODULE)
    text = statement.write_statement(change, ["t.js::adds"], {}, seed="f")
    assert text.startswith("`withTax` in `lib/tax.js` is not implemented")
    assert "function withTax(price, rate)" in text and "Adds the tax to a price." in text
    assert statement.leak(text, change) is None
    assert statement.leak(text + "\nHint: price + price * rate", change) == (
        "the statement reveals the original code 'price + price * rate'")


def test_a_statement_without_messages_names_the_function_and_its_tests():
    text = statement.write_statement(FLIP, ["t.js::a > b", "t.js::c"], {})
    assert text.startswith("`withTax` has a bug") and "`a > b`, `c`" in text


def test_a_multi_region_statement_numbers_its_reports():
    off = next(c for c in mutations.mutation_sites(FN, MODULE) if c.operator == "off-by-one")
    symptoms = statement.parse_failures({"t.js::a": "3 == 4", "t.js::b": "expected 1 to equal 2"}, ["t.js::a", "t.js::b"])
    text = statement.write_multi_statement([(FLIP, ["t.js::a"], symptoms), (off, ["t.js::b"], symptoms)], seed="m")
    assert "### Report 1" in text and "### Report 2" in text
    assert "the result is `3` instead of `4`" in text and "the result is `1` instead of `2`" in text
