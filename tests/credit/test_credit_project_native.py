"""The block search in C (`credit._native.search_blocks`) against the Python loop it replaces
(`credit.project._search_blocks`); tests/credit/test_credit_project.py runs every case of its own
through both."""
import json

import numpy as np
import pytest
from credit_testlib import load_bench, need_native

import credit
import credit.project as project_module
from credit.project import locate_blocks

_C_SEARCH = project_module.c_search_blocks


def _random_action(rng, lines: list[str]) -> str:
    """Some of `lines` written into a text in the ways a response writes code: raw, JSON-escaped
    (ASCII-only or not, / escaped or HTML-safe), in a tag or quotes, inside a longer line, with
    other text around and in between."""
    parts = []
    for line in lines:
        u = rng.random()
        if u < 0.2:
            continue
        if u < 0.4:  # JSON as most encoders write it, or with / escaped, or HTML-safe
            escaped = json.dumps(line, ensure_ascii=rng.random() < 0.5)[1:-1]
            if rng.random() < 0.3:
                escaped = escaped.replace("/", "\\/")
            elif rng.random() < 0.3:
                escaped = escaped.translate(str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                                           "'": "\\u0027"}))
            parts.append(escaped + "\\n")
        elif u < 0.5:
            parts.append("<code>" + line + "</code>")
        elif u < 0.6:
            parts.append("x" + line + " + 1\n")
        elif u < 0.7:
            parts.append("'" + line + "'  ")
        else:
            parts.append(line + str(rng.choice(["\n", "  \n", " \t\n", "\t\\n"])))
        if rng.random() < 0.2:
            parts.append("some words é\n")
    order = rng.permutation(len(parts)) if rng.random() < 0.3 else np.arange(len(parts))
    return "".join(parts[k] for k in order)


_POOL = ["res = len(words)", "res = len(words) + 1", '    s = "a\\tb"', "\tx = 'é'", "return x",
         "    return x", "y = {'a': 1}", "print(\"hi\")", "z = 2  ", "if a:", "    pass", "café = 1",
         "w = a / b", "    v = a & b", "u = a > b"]
# what JSON writes in other ways: control characters, DEL, characters of two and four bytes (one
# a surrogate pair in ASCII-only JSON), quotes, backslashes, HTML's characters, slashes; and
# trailing or leading whitespace that is not ASCII
_HARD = ["a = '\x01' + \"\x7f\"", "\x0b  b = 1\x0c", "  c = '✓' # ok  ", "d = '😀' / 2", "\u2003e = f\u00a0",
         "    g = h\\i  ", "j = '<&>' \t", "k = 'ß' + \"/\"", "l\r", " ", "m = 1", "    n = '\x1f'", "é",
         "o = '\ud800'", "  p = \"q\"\u3000"]


@pytest.mark.parametrize("seed, pool", [(s, "plain") for s in range(6)] + [(s, "hard") for s in range(6)])
def test_the_c_search_finds_what_the_python_loop_finds(seed, pool, monkeypatch):
    """Random lines (escapes, quotes, non-ASCII, prefixes of each other) in random texts, two
    kinds, windows or none: the C search and the Python loop give the same spans and blocks."""
    need_native(_C_SEARCH)
    rng = np.random.default_rng(seed)
    pool = _POOL if pool == "plain" else _POOL[:5] + _HARD
    for _ in range(60):
        n_steps = int(rng.integers(1, 5))
        texts = [("+" if rng.random() < 0.5 else "-") + str(rng.choice(pool)) for _ in range(int(rng.integers(2, 30)))]
        line = rng.integers(0, len(texts), size=int(rng.integers(1, 40)))
        line.sort()
        step = np.sort(rng.integers(0, n_steps, size=line.shape[0]))
        actions = [_random_action(rng, [texts[k][1:] for k in line[step == s].tolist()]) for s in range(n_steps)]
        new_block = rng.random(line.shape[0]) < 0.3
        kind = rng.integers(0, 2, size=line.shape[0])
        window = None
        if rng.random() < 0.4:
            a = np.array([int(rng.integers(0, len(actions[s]) + 1)) for s in step.tolist()])
            b = np.array([int(rng.integers(x, len(actions[s]) + 1)) for x, s in zip(a.tolist(), step.tolist())])
            window = np.stack([a, b], axis=1)
        got = []
        for native in (_C_SEARCH, None):
            monkeypatch.setattr(project_module, "c_search_blocks", native)
            got.append(locate_blocks(actions, texts, line, step, new_block, skip=1, kind=kind, window=window))
        for c, py in zip(*got):
            np.testing.assert_array_equal(c, py)


def test_didpo_gives_the_same_tokens_with_the_c_search(monkeypatch):
    need_native(_C_SEARCH)
    bench = load_bench()
    batch = [t.to_dict() for t in bench.rollouts(3, 8, 4, seed=5)]
    with_c = credit.didpo(batch)
    monkeypatch.setattr(project_module, "c_search_blocks", None)
    without = credit.didpo(batch)
    assert with_c.stats["coverage"] == without.stats["coverage"] and with_c.stats["coverage"]["lines"] > 0.3
    for a, b in zip(with_c.tokens, without.tokens):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
