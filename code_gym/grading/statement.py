"""Task statements that read like issue reports, and the check that a statement does not give the
solution away: one composition for every language whose builder makes `Change`s.

A statement describes what a user would see: up to MAX_SYMPTOMS failing tests, each with one
sentence on what it saw, and the file the problem is in. It names the function to change only when
no symptom can be told without it (every sentence names it anyway), when no failure could be told
at all, or when the task is to write a missing body. No language model: templates filled with facts,
phrasing varied by a seed (the task id).

What differs between languages comes in a `Wording`: how a test's id reads, the sentence a
symptom gives (parsed from the language's failure output, in its folder), how the function's
header is shown, and what its documentation is called. A language's statements are its
Wording's `write_statement` and `write_multi_statement`."""
from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from code_gym.grading.builder import Change, Function
from code_gym.grading.gates import MIN_LEAK_CHARS

MAX_VALUE_CHARS = 100  # a value a sentence quotes is cut to this length
MAX_SYMPTOMS = 3  # per region
Symptoms = Mapping[str, Any]  # test id -> the language's symptom of it

_OPENINGS = (
    "Something is wrong in {place}{about}.",
    "Wrong results from {name}{about}.",
    "A bug in `{path}`{about}: some of its behaviour is not what its callers expect.",
    "Since the last change, {name} misbehaves{about}.",
)
_SEEN = ("What I see:", "Observed:", "Steps to reproduce are in the project's tests; what happens:",
         "The failing checks:")
CLOSINGS_SEEN = (  # for failing tests that stay in the repository (Rust's unit tests live in the sources)
    "The tests named here must pass after the fix, and every other test must keep passing. The tests are right; "
    "the code is wrong.",
    "Please fix the code (not the tests): the tests named above must pass and the others must keep passing.",
    "Find the cause and fix it in the source; the tests are correct.",
)
_CLOSINGS = (
    "The tests named here are hidden from you; they must pass after the fix, and every other test must keep "
    "passing. The tests are right; the code is wrong.",
    "Please fix the code (not the tests): the tests named above must pass and the others must keep passing.",
    "Find the cause and fix it in the source; the tests are correct and hidden from you.",
)


def _parts(qualname: str) -> list[str]:
    """The names in a qualified name, whichever separator its language writes ("Type.method", "Type::method")."""
    return re.split(r"::|\.", qualname)


def cut(text: str) -> str:
    """`text` on one line, cut to MAX_VALUE_CHARS."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _first_paragraph(text: str | None) -> str | None:
    """The first paragraph as one line, without its final period (the caller punctuates)."""
    if not text or not text.strip():
        return None
    return " ".join(text.strip().split("\n\n")[0].split()).rstrip(".")


def _about(fn: Function) -> str:
    doc = _first_paragraph(fn.module_doc)
    return f" ({doc[0].lower() + doc[1:]})" if doc else ""


def _bullets(chosen: list[tuple[str, str]]) -> str:
    return "\n".join(f"- in `{name}`: {sentence}" for name, sentence in chosen)


@dataclass(frozen=True)
class Wording:
    """How one language's statements tell their facts, and the statements told so."""
    test_name: Callable[[str], str]  # a test id -> the name a statement gives the test
    describe: Callable[[Any], str]  # a failing test's symptom -> one sentence: what the test saw
    header: Callable[[Function], str]  # the function's header and documentation, its body elided, as a code block
    module: Callable[[str], str | None]  # a file's path -> the module name it is imported by, where there is one
    not_names: frozenset[str]  # parts of a qualname that a symptom would not show (a constructor's name)
    name_chars: str  # a regex of one character a name can hold: a mention of a name is not inside a longer one
    doc: str  # what the documentation above or in a function is called
    kept_doc: str  # the same, as the thing a removed body leaves behind
    # the last paragraph; a language whose failing tests the agent may see says nothing of hidden tests
    closings: tuple[str, ...] = _CLOSINGS

    def pick_symptoms(self, change: Change, failing_tests: Iterable[str],
                      symptoms: Symptoms) -> tuple[list[tuple[str, str]], bool]:
        """Up to MAX_SYMPTOMS (test name, sentence) pairs, and whether they name the changed function:
        sentences that do not name it are preferred; when every one does, those are used."""
        # one bullet per (name, sentence): a test inherited by several classes fails the same way in each
        described = list(dict.fromkeys((self.test_name(t), self.describe(symptoms[t]))
                                       for t in sorted(failing_tests) if t in symptoms))
        names = {part for part in _parts(change.function.qualname) if part not in self.not_names}
        silent = [d for d in described if not self._mentions(d[1], names)]
        chosen = silent or described
        return chosen[:MAX_SYMPTOMS], bool(chosen) and not silent

    def write_statement(self, change: Change, failing_tests: Sequence[str], symptoms: Symptoms | None = None,
                        seed: str = "") -> str:
        """What the agent is told about a one-region task: see the module docstring."""
        rng = random.Random(f"statement:{seed}")
        return f"{self._region(change, failing_tests, symptoms or {}, rng)}\n\n{rng.choice(self.closings)}"

    def write_multi_statement(self, parts: Sequence[tuple[Change, Sequence[str], Symptoms]], seed: str = "") -> str:
        """A statement for a task with several changed regions: one numbered report per region, each
        from (its change, the tests it fails, their symptoms)."""
        rng = random.Random(f"statement:{seed}")
        intro = rng.choice((f"{len(parts)} separate problems were reported against this project.",
                            f"Several users reported problems; they look unrelated ({len(parts)} reports).",
                            f"There are {len(parts)} independent bugs to fix here."))
        reports = [f"### Report {i}\n\n{self._region(change, tests, symptoms, rng)}"
                   for i, (change, tests, symptoms) in enumerate(parts, 1)]
        return "\n\n".join([intro, *reports, rng.choice(self.closings)])

    def _mentions(self, text: str, names: set[str]) -> bool:
        return any(re.search(rf"(?<!{self.name_chars}){re.escape(n)}(?!{self.name_chars})", text) for n in names)

    def _places(self, fn: Function) -> tuple[str, str]:
        """The function's file named at length (with its module, where it has one) and briefly."""
        module = self.module(fn.path)
        return (f"`{module}` (`{fn.path}`)", f"`{module}`") if module else (f"`{fn.path}`", f"`{fn.path}`")

    def _context(self, fn: Function) -> str:
        module_doc, class_doc = _first_paragraph(fn.module_doc), _first_paragraph(fn.class_doc)
        place = self._places(fn)[0]
        where = f"module {place}" if self.module(fn.path) else place
        sentences = [f"It lives in {where}" + (f", described as: {module_doc}." if module_doc else ".")]
        owner = re.match(r"(.+)(?:::|\.)[^.:]+$", fn.qualname)
        if owner and class_doc:
            sentences.append(f"It is a method of `{owner.group(1)}`, described as: {class_doc}.")
        return " ".join(sentences)

    def _region(self, change: Change, failing_tests: Sequence[str], symptoms: Symptoms, rng: random.Random) -> str:
        """The part of a statement about one changed region, without the closing."""
        fn = change.function
        chosen, named = self.pick_symptoms(change, failing_tests, symptoms)
        if change.kind == "feature":
            seen = f"\n\n{rng.choice(_SEEN)}\n{_bullets(chosen)}" if chosen else ""
            return (f"`{fn.qualname}` in `{fn.path}` is not implemented: its body is missing, only the signature "
                    f"and {self.kept_doc} are left, so its callers fail.{seen}\n\nIt should do what its {self.doc} "
                    f"says and what the rest of the project expects of it:\n\n{self.header(fn)}\n\n"
                    f"{self._context(fn)}")
        if not chosen:  # no symptom to tell: the function and its failing tests by name
            names = sorted({self.test_name(t) for t in failing_tests})
            shown = ", ".join(f"`{n}`" for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            return (f"`{fn.qualname}` has a bug: it does not do what its documentation and its callers expect.\n\n"
                    f"{self.header(fn)}\n\n{self._context(fn)}\n\nThese tests of the project fail because of it: "
                    f"{shown}.")
        place, name = self._places(fn)
        opening = rng.choice(_OPENINGS).format(place=place, name=name, path=fn.path, about=_about(fn))
        text = f"{opening}\n\n{rng.choice(_SEEN)}\n{_bullets(chosen)}"
        if named:  # the symptoms name the function anyway: show its contract too
            text += f"\n\nThe documented behaviour:\n\n{self.header(fn)}"
        return text


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
