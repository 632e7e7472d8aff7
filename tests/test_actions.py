import json

from code_gym.actions.parse import parse_action


def test_hermes_calls_with_offsets_into_escaped_json():
    code = 'def f():\n    return "caf\u00e9"\n'
    call = {"name": "create", "arguments": {"path": "a.py", "file_text": code}}
    text = "I will create it.\n<tool_call>\n" + json.dumps(call) + "\n</tool_call>"
    parsed = parse_action(text)
    assert parsed.errors == []
    [c] = parsed.calls
    assert c.arguments["file_text"] == code
    start = code.index("return")
    stop = code.index("\n", start)
    span = c.action_span("file_text", start, stop)
    assert text[span[0]:span[1]] == json.dumps(code[start:stop])[1:-1]


def test_several_hermes_calls_in_order():
    text = ('<tool_call>{"name": "view", "arguments": {"path": "a"}}</tool_call> then '
            '<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
    assert [c.name for c in parse_action(text).calls] == ["view", "submit"]


def test_openai_dict_forms():
    fn = {"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    assert parse_action(fn).calls[0].arguments == {"command": "ls"}
    msg = {"role": "assistant", "tool_calls": [fn, {"name": "submit", "arguments": {}}]}
    assert [c.name for c in parse_action(msg).calls] == ["bash", "submit"]


def test_fenced_bash_block():
    parsed = parse_action("Let me look.\n```bash\nls -la\n```\n")
    assert parsed.calls[0].name == "bash"
    assert parsed.calls[0].arguments["command"] == "ls -la\n"


def test_errors_are_reported_not_raised():
    assert parse_action("just thinking").errors
    assert "not valid JSON" in parse_action("<tool_call>{oops</tool_call>").errors[0]
    assert "no 'name'" in parse_action('<tool_call>{"arguments": {}}</tool_call>').errors[0]
    assert "must be a JSON object" in parse_action('<tool_call>{"name": "bash", "arguments": [1]}</tool_call>').errors[0]
    assert parse_action(42).errors
    assert parse_action({"function": "x"}).errors
