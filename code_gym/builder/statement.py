"""Task statements written from the changed function's signature, docstring and module context, and
the check that a statement does not give the solution away."""
from __future__ import annotations

import textwrap

from code_gym.builder.mutations import Change

# code fragments shorter than this (spaces ignored) are too generic to count as a leak ("return x")
MIN_LEAK_CHARS = 10


def _first_paragraph(text: str | None) -> str | None:
    """The first paragraph as one line, without its final period (the caller punctuates)."""
    if not text or not text.strip():
        return None
    return " ".join(text.strip().split("\n\n")[0].split()).rstrip(".")


def _context(change: Change) -> str:
    fn = change.function
    module = fn.path[:-3].replace("/", ".").removeprefix("src.")
    module_doc, class_doc = _first_paragraph(fn.module_doc), _first_paragraph(fn.class_doc)
    sentences = [f"It lives in module `{module}` (`{fn.path}`)" + (f", described as: {module_doc}." if module_doc else ".")]
    if "." in fn.qualname and class_doc:
        sentences.append(f"It is a method of `{fn.qualname.split('.')[0]}`, described as: {class_doc}.")
    return " ".join(sentences)


def _header(change: Change) -> str:
    fn = change.function
    doc = textwrap.indent(f'"""{fn.docstring}"""', "    ") if fn.docstring else "    ..."
    return f"```python\n{fn.signature}:\n{doc}\n```"


def write_statement(change: Change, failing_tests: list[str]) -> str:
    """What the agent is told. A body-removal task asks for the function; a mutation task reports
    a bug in it and the tests that fail because of it (by name: the tests themselves are hidden)."""
    fn = change.function
    if change.kind == "feature":
        return (f"Implement `{fn.qualname}`: its body is missing, only the signature and the docstring are "
                f"left. Write the body so it does what the docstring says and what the rest of the "
                f"project expects of it.\n\n{_header(change)}\n\n{_context(change)}")
    names = sorted({t.split("::")[-1] for t in failing_tests})
    shown = ", ".join(f"`{n}`" for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return (f"`{fn.qualname}` has a bug: it does not do what its documentation and its callers expect.\n\n"
            f"{_header(change)}\n\n{_context(change)}\n\nThese tests of the project fail because of it: {shown}. "
            f"Find the bug and fix it; the rest of the code is correct.")


def _squash(text: str) -> str:
    return "".join(text.split())


def leak(statement: str, change: Change) -> str | None:
    """The reason the statement reveals the fix (a fragment of the removed or original code appears
    in it, spaces ignored, unless the signature holds it too), or None."""
    squashed, signature = _squash(statement), _squash(change.function.signature)
    for fragment in change.removed:
        code = _squash(fragment)
        if len(code) >= MIN_LEAK_CHARS and code in squashed and code not in signature:
            return f"the statement reveals the original code {fragment!r}"
    return None
