"""Red-team attempts on the host side of env.step (issue 31, items 4 and 8): actions that made the
host raise, answer outside its spaces, or work quadratically (or worse) in the size of the action.

Each attempt is played through `env.step` (or the host function a step calls) twice: with the
defence off (a limit raised out of reach, or the code as it was before the fix, copied here) it
wins: an exception out of step, an observation outside the observation space, or host work that
grows with the square of the action; with the defence on it gets an error observation that names
the limit, `info["invalid_action"]`, the episode going on, and host work linear or capped. Work is
counted (steps of a loop, characters read), never timed."""
import dataclasses
import json
import math
import re
import shlex
from collections import deque

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from code_gym.actions import parse, provenance, tools
from code_gym.env import environment
from code_gym.rewards import labelfree
from code_gym.util import linediff
from code_gym.util.linediff import BoundedMatcher


def call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.fixture
def env(tiny_task):
    env = gym.make("CodeRepo-v0", task=tiny_task, max_steps=1000)
    env.reset(seed=0)
    yield env
    env.close()


def refused(env, action, *words):
    """The action is an error observation naming its limit, and the episode goes on."""
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["invalid_action"] and not terminated and not truncated
    assert "error" in obs and all(w in obs for w in words), obs[:2000]
    assert env.observation_space.contains(obs)
    obs, *_ = env.step(call("view", path="calc/ops.py"))
    assert "return a - b" in obs
    return obs


def no_limits(monkeypatch):
    """The parser's bounds as they were before issue 31: none."""
    monkeypatch.setattr(parse, "_depth_error", lambda text: None)
    monkeypatch.setattr(parse, "_value_error", lambda value, what="": None)


# ---------------------------------------------------------------------------------------------
# item 4: parsers of the agent's input, bounded


DEEP_JSON = '<tool_call>{"name": "bash", "arguments": {"command": ' + "[" * 1000 + "]" * 1000 + "}}</tool_call>"


def test_deep_json_tool_call_crashed_step(env, monkeypatch):
    refused(env, DEEP_JSON, "more than 32 levels deep", "flat")
    no_limits(monkeypatch)
    with pytest.raises(RecursionError):
        env.step(DEEP_JSON)


def test_deep_json_in_string_arguments_crashed_step(env, monkeypatch):
    action = {"type": "function", "function": {"name": "bash", "arguments": '{"command": ' + "[" * 100_000 + "]" * 100_000 + "}"}}
    refused(env, action, "more than 32 levels deep")
    no_limits(monkeypatch)
    with pytest.raises(RecursionError):
        env.step(action)


def nested(depth, leaf, key="a"):
    for _ in range(depth):
        leaf = {key: leaf} if key == "a" else {key: [leaf]}
    return leaf


@pytest.mark.parametrize("action, message, raised", [
    ({"name": "bash", "arguments": {"command": nested(5000, "ls")}}, "more than 32 levels deep", RecursionError),
    (nested(5000, {"name": "bash"}, key="tool_calls"), "more than 32 levels deep", RecursionError),
    ({"name": "bash", "arguments": {"command": b"ls"}}, "is a bytes", TypeError),
    ({"name": "bash", "arguments": {"command": {"ls"}}}, "is a set", TypeError),
    ({"name": "insert", "arguments": {"path": "calc/ops.py", "insert_line": 10**5000, "new_str": "x"}},
     "does not fit in 64 bits", ValueError),
], ids=["deep-dict-arguments", "deep-tool-calls", "bytes-argument", "set-argument", "5000-digit-int"])
def test_dict_actions_that_crashed_step(env, monkeypatch, action, message, raised):
    refused(env, action, message)
    no_limits(monkeypatch)
    with pytest.raises(raised):
        env.step(action)


def test_5000_digit_json_number_crashed_step(env):
    """The JSON decoder the parser uses refuses an int of more than 4,300 digits with a ValueError
    that is not a JSONDecodeError; step now answers it as malformed JSON."""
    action = '<tool_call>{"name": "insert", "arguments": {"insert_line": ' + "9" * 5000 + "}}</tool_call>"
    with pytest.raises(ValueError) as raised:
        parse._SpanDecoder().raw_decode(action[len("<tool_call>"):-len("</tool_call>")])
    assert not isinstance(raised.value, json.JSONDecodeError)  # what the parser caught before
    refused(env, action, "not valid JSON", "4300 digits")


def test_many_calls_flood_the_observation_space(env, monkeypatch):
    """10,000 calls in one response: the host ran them all and answered with an observation of
    millions of characters, outside the observation space (a vector env's shared memory refuses it)."""
    action = call("view", path="calc/ops.py") * 10_000
    refused(env, action, "10000 tool calls", "limit is 32")
    monkeypatch.setattr(parse, "MAX_CALLS", 10**9)
    monkeypatch.setattr(environment, "_within", lambda text, limit: text)
    obs, *_, info = env.step(action)
    assert len(info["tool_calls"]) == 10_000 and not env.observation_space.contains(obs)


def test_output_flood_within_the_call_limit_is_cut_to_the_space(env, monkeypatch):
    """32 calls of 64 KB of output each: 2 MB of observation without the cut."""
    action = "".join(call("bash", command=f"head -c 65536 /dev/zero | tr '\\0' '{k % 10}'") for k in range(32))
    obs, *_ = env.step(action)
    assert env.observation_space.contains(obs) and "left out" in obs and "1,000,000" in obs
    monkeypatch.setattr(environment, "_within", lambda text, limit: text)
    obs, *_ = env.step(action)
    assert not env.observation_space.contains(obs)


def test_response_past_the_action_space_ran(env, monkeypatch):
    action = call("create", path="huge.txt", file_text="x" * parse.MAX_ACTION_CHARS)
    assert not env.action_space.contains(action)
    refused(env, action, "limit is 1,000,000", "in parts")
    monkeypatch.setattr(parse, "MAX_ACTION_CHARS", 10**9)
    *_, info = env.step(action)
    assert not info["invalid_action"] and info["changed_files"] == ["huge.txt"]  # ran outside the action space


def test_echoed_tool_name_amplifies_the_observation(env, monkeypatch):
    """An unknown tool's name, or an unknown argument, was echoed whole: a 900 KB name made an
    observation as large from a response of that size, 32 of them one of 29 MB."""
    action = call("x" * 30_000) * 32
    obs = refused(env, action, "unknown tool", "30,000 characters")
    assert len(obs) < 20_000
    monkeypatch.setattr(tools, "shown_text", lambda text: text)
    monkeypatch.setattr(environment, "_within", lambda text, limit: text)
    obs, *_ = env.step(action)
    assert len(obs) > 32 * 30_000


def test_error_listing_every_occurrence_grows_with_the_file(env, monkeypatch):
    """str_replace of a line that occurs 10,000 times: the error listed every line number, each
    counted by rereading the file up to it (quadratic)."""
    n = 10_000
    env.step(call("create", path="rep.py", file_text="x = 1\n" * n))
    action = call("str_replace", path="rep.py", old_str="x = 1", new_str="y")
    obs = refused(env, action, "occurs 10000 times", "and 9980 more")
    assert len(obs) < 2_000
    scanned = []

    def lines_before(text, sub, limit):  # tools.py before the fix, the characters it reads counted
        out, i = [], text.find(sub)
        while i >= 0:
            scanned.append(i)
            out.append(text[:i].count("\n") + 1)
            i = text.find(sub, i + 1)
        return out
    monkeypatch.setattr(tools, "_lines_of", lines_before)
    *_, info = env.step(action)
    assert len(info["tool_results"][0]["output"]) > 50_000
    assert sum(scanned) > n * n / 2 * len("x = 1\n") * 0.9  # the characters reread


def test_directory_view_grows_with_the_workspace(env, monkeypatch):
    env.step("```bash\nmkdir many && cd many && seq -f 'file_with_a_long_name_%06g.py' 20000 | xargs touch\n```")
    obs, *_ = env.step(call("view", path="many"))
    assert "listing truncated" in obs and len(obs) < 17_000
    monkeypatch.setattr(tools, "MAX_VIEW_CHARS", 10**9)
    obs, *_ = env.step(call("view", path="many"))
    assert len(obs) > 500_000


def test_invalid_search_regex_was_not_flagged(env, monkeypatch):
    obs, *_, info = env.step(call("search", pattern="(unclosed"))
    assert info["invalid_action"] and "not a valid extended regular expression" in obs and "backslash" in obs

    def search_before(ctx, c):  # tools.py before the fix
        command = (f"grep -rnIE --exclude-dir=.git --exclude-dir=__pycache__ -e {shlex.quote(c.arguments['pattern'])} "
                   f"-- . | head -n 200")
        result = ctx.sandbox.exec(command, timeout=ctx.command_timeout)
        return tools.ToolResult(result.output or "no matches", error=result.timed_out)
    monkeypatch.setitem(tools.REGISTRY, "search", dataclasses.replace(tools.REGISTRY["search"], run=search_before))
    obs, *_, info = env.step(call("search", pattern="(unclosed"))
    assert not info["invalid_action"] and "Unmatched" in obs


@pytest.mark.parametrize("arguments, message", [
    ({"command": "echo a\0b"}, "NUL character"),
    ({"command": "echo \ud800"}, "lone surrogate"),
], ids=["nul-in-command", "surrogate-in-command"])
def test_text_the_host_cannot_pass_on_is_named(env, arguments, message):
    """These were error observations before too, but said only what Python raised ('embedded null
    byte', "'utf-8' codec can't encode"); now they say what to send instead."""
    refused(env, {"name": "bash", "arguments": arguments}, message, "send" if "surrogate" in message else "printf")


# ---------------------------------------------------------------------------------------------
# item 8: host time linear in the action


def matcher_work(monkeypatch):
    """The steps of SequenceMatcher's inner loop every BoundedMatcher of a step takes, counted."""
    spent = []
    find = BoundedMatcher.find_longest_match

    def counted(self, alo=0, ahi=None, blo=0, bhi=None):
        spent.append(self._cost(alo, ahi))
        return find(self, alo, ahi, blo, bhi)
    monkeypatch.setattr(BoundedMatcher, "find_longest_match", counted)
    return spent


def test_alternating_rewrite_of_repeated_lines_is_capped(env, monkeypatch):
    """A file of n identical lines rewritten with every other line changed: SequenceMatcher's work
    grows with n^2 and worse (2,000 lines: 89 s measured); the matcher's budget caps it, and the
    diff stays correct."""
    spent = matcher_work(monkeypatch)
    work = {}
    for n in (300, 600):
        env.step(call("create", path=f"alt{n}.py", file_text="x = 1\n" * n))
        spent.clear()
        *_, info = env.step(f"```bash\nsed -i '1~2s/.*/y = 2/' alt{n}.py\n```")
        assert "+y = 2" in info["diff"] and info["diff"].count("\n+y = 2") == n // 2
        work[n] = sum(spent)
    budget = linediff.MAX_MATCH_WORK
    assert all(w <= 3 * budget for w in work.values())  # the step diff, the patch, the attribution
    monkeypatch.setattr(linediff, "MAX_MATCH_WORK", 10**18)  # SequenceMatcher as it was
    for n in (300, 600):
        env.step(call("create", path=f"off{n}.py", file_text="x = 1\n" * n))
        spent.clear()
        env.step(f"```bash\nsed -i '1~2s/.*/y = 2/' off{n}.py\n```")
        work[n] = sum(spent)
    assert work[600] > 6 * work[300] and work[600] > 10 * budget  # 5 and 41 million measured


def test_repeated_lines_queue_their_spans_in_linear_work(monkeypatch):
    """A create of n identical lines: each line's span was checked against every span queued for
    that text before it (n^2 / 2 comparisons: 28.5 s at 40,000 lines)."""
    compared = []

    class CountingDeque(deque):
        def __contains__(self, item):
            compared.append(len(self))
            return deque.__contains__(self, item)
    monkeypatch.setattr(provenance, "deque", CountingDeque)
    n = 4000
    text = "x = 1\n" * n
    c = parse.parse_action(call("create", path="r.py", file_text=text)).calls[0]
    provenance._CallText(c, 0)
    assert sum(compared) == 0

    def add_lines_before(self, text, span_of, outer):  # provenance.py before the fix
        pos = 0
        for line in text.split("\n"):
            span = span_of(pos, pos + len(line.rstrip()))
            pos += len(line) + 1
            if span is None or not line.strip():
                continue
            for table, key in ((self.exact, line.rstrip()), (self.stripped, line.strip())):
                if span not in table[key]:
                    table[key].append(span)
            self.body_of.setdefault(span, outer)
    monkeypatch.setattr(provenance._CallText, "_add_lines", add_lines_before)
    provenance._CallText(c, 0)
    assert sum(compared) >= n * (n - 1)  # two tables, n^2 / 2 each


def test_unclosed_python_quotes_are_read_once(monkeypatch):
    """A heredoc line of n escaped quotes after an opening one ("'\\'\\'\\'...\\n"): each quote was
    read as a literal's start up to the end of the line (n^2 / 2 characters)."""
    read = []
    decode = provenance._decode

    def counted(s, i, quote, shell=False):
        body, nxt = decode(s, i, quote, shell)
        read.append(nxt - i)
        return body, nxt
    monkeypatch.setattr(provenance, "_decode", counted)
    n = 3000
    command = "cat > q.py <<'EOF'\n'" + "\\'" * n + "\nEOF\n"
    on = provenance.bash_bodies(command)
    assert sum(read) < 20 * n
    read.clear()
    monkeypatch.setattr(provenance, "_python_strings", python_strings_before)
    assert [(b.text, list(b.offsets)) for b in provenance.bash_bodies(command)] == [(b.text, list(b.offsets)) for b in on]
    assert sum(read) > n * n / 2  # the same bodies, read n times over


def python_strings_before(body):  # provenance.py before the fix
    out, text, pos = [], body.text, 0
    while True:
        m = provenance._PY_STRING_RE.search(text, pos)
        if m is None:
            return out
        quote = m.group(1)
        raw = "r" in m.group(0)[:-len(quote)].lower()
        start = m.end()
        if raw:
            end = text.find(quote, start)
            end = len(text) if end < 0 else end
            inner = provenance.Body(text[start:end], list(range(start, end + 1)), (start, end))
            nxt = end + len(quote)
        else:
            inner, nxt = provenance._decode(text, start, quote)
        if len(quote) == 1 and "\n" in text[start:min(nxt, len(text))]:
            pos = start
            continue
        out.append(provenance.Body(inner.text, [body.offsets[min(k, len(body.offsets) - 1)] for k in inner.offsets],
                                   body.outer))
        pos = max(nxt, start + 1)


SED_BEFORE = re.compile(r"s([/|#,:@!])((?:\\.|(?!\1).)*)\1((?:\\.|(?!\1).)*)\1[gIip0-9]*;?$", re.S)


def test_sed_expression_regex_has_one_parse():
    """`'s/\\\\\\\\...` in a bash command: the sed reader's pattern let a backslash be read alone
    or as an escape's start, so a failing match tried every split (exponential: 40 backslashes did
    not finish). Its alternatives no longer overlap: a backslash always starts an escape. The
    witness: a text only the overlapping reading matches."""
    ambiguous = "s/a\\/b/"  # old text 'a\' by reading the backslash alone; sed reads '\/' as an escape
    assert SED_BEFORE.fullmatch(ambiguous) and not provenance._SED_RE.fullmatch(ambiguous)
    assert provenance._SED_RE.fullmatch("s/" + "\\" * 100_000 + "x") is None  # decided at once
    body = provenance.Body("s/a\\/b/c/", range(9), (0, 9))
    assert [p.text for p in provenance._sed_parts(body)] == ["a/b", "c"]


def test_heredoc_of_closing_braces_is_linear(env):
    """The issue's 36 KB action (18,000 lines of '}' in a heredoc, 5.2 s of host time): the
    provenance of the step still points every line at its characters in the heredoc."""
    body = "}\n" * 18_000
    action = f"```bash\ncat > braces.txt <<'EOF'\n{body}EOF\n```"
    *_, info = env.step(action)
    assert info["changed_files"] == ["braces.txt"] and len(info["provenance"]) == 18_000
    starts = [p["start"] for p in info["provenance"]]
    assert all(action[s] == "}" for s in starts) and len(set(starts)) == 18_000


def test_arguments_of_the_same_text_keep_their_own_spans():
    """The one-pass matching of strings to arguments gives each argument its own string, in order."""
    action = call("str_replace", path="p", old_str="same", new_str="same")
    c = parse.parse_action(action).calls[0]
    spans = [(c.offsets[k][0], c.offsets[k][-1]) for k in ("old_str", "new_str")]
    assert [action[a:b] for a, b in spans] == ["same", "same"] and spans[0] < spans[1]


@settings(max_examples=300, derandomize=True, database=None)
@given(st.lists(st.sampled_from(["'", '"', "\\", "\n", "'''", "r'", "b", "x", " ", "("]), max_size=40))
def test_python_strings_read_once_find_what_they_found_before(parts):
    text = "".join(parts)
    body = provenance.Body(text, range(len(text) + 1), (0, len(text)))
    assert [(b.text, list(b.offsets)) for b in provenance._python_strings(body)] == \
        [(b.text, list(b.offsets)) for b in python_strings_before(body)]


def deep_list(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def number_before(x, i, allow_nan=False):  # rewards/labelfree.py before the fix
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"logprobs token {i}: a log-prob must be a number, got {x!r}")
    x = float(x)
    if math.isnan(x) and allow_nan:
        return x
    if not (math.isfinite(x) and x <= 1e-6):
        raise ValueError(f"logprobs token {i}: {x} is not a finite log-probability (need <= 0)")
    return x


@pytest.mark.parametrize("logprobs, message, raised", [
    ([10**400], "1329 bits", OverflowError),
    ([deep_list(5000)], "got list", RecursionError),
], ids=["huge-int-logprob", "deep-logprob"])
def test_sampled_response_logprobs_crashed_step(env, monkeypatch, logprobs, message, raised):
    """A sampled-response action {"text", "logprobs"}: its log-probs are read on the host too."""
    action = {"text": call("view", path="calc/ops.py"), "logprobs": logprobs}
    obs, *_, info = env.step(action)
    assert "return a - b" in obs and message in info["logprobs_error"]
    monkeypatch.setattr(labelfree, "_number", number_before)
    with pytest.raises(raised):
        env.step(action)
