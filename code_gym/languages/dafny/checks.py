"""What code-gym reads from one Dafny file without running the verifier: the enclosing member of
some lines (hints, credit) and the `static` reward's check, which is structural (the file
tokenizes and its brackets balance; the verifier's own parse runs in the sandbox with the tests)."""
from __future__ import annotations

from code_gym.languages.base import FileCheck
from code_gym.languages.dafny import source


def enclosing_definition(data: bytes | None, lines: list[int]) -> str:
    """The qualified name of the innermost member spanning every line of `lines` ("" when none)."""
    if data is None or not lines:
        return ""
    try:
        program = source.parse(data.decode("utf-8", "replace"))
    except source.SourceError:
        return ""
    spanning = [m for m in program.members if m.line <= min(lines) and max(lines) <= m.end_line]
    return max(spanning, key=lambda m: m.line).qualified if spanning else ""


def check_file(path: str, old: bytes | None, new: bytes) -> FileCheck:
    """Whether `new` reads as Dafny (tokens, balanced brackets); no findings of its own: the audit
    judges what a change adds."""
    try:
        source.parse(new.decode("utf-8", "replace"))
    except source.SourceError as error:
        return FileCheck(path, False, str(error))
    return FileCheck(path, True)
