"""Git-style unified diffs of file states, computed in-process (difflib): the diff of one path
(`file_diff`), a rename (`renamed_diff`) and a patch of several (`render`)."""
from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field

from code_gym.util.hostfs import Digest, StatKey

@dataclass
class FileDiff:
    """One file's change. `added` holds (new line number, text) of each added line."""
    path: str
    status: str  # "modified", "added", "deleted", "renamed", "mode"
    text: str
    old_path: str | None = None
    binary: bool = False
    added: list[tuple[int, str]] = field(default_factory=list)
    removed: list[tuple[int, str]] = field(default_factory=list)


def _is_binary(data: bytes | Digest) -> bool:
    if isinstance(data, Digest):
        return True
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def git_mode(key: StatKey | None) -> str:
    if key is None:
        return "100644"
    mode = key[3]
    if (mode & 0o170000) == 0o120000:
        return "120000"
    return "100755" if mode & 0o111 else "100644"


def _hunks(old: str, new: str) -> tuple[list[str], list[tuple[int, str]], list[tuple[int, str]]]:
    """Unified-diff hunk lines (without file headers), the added and the removed lines."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out: list[str] = []
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(" ", line) for line in old_lines[a1:a2]]
                continue
            if tag in ("replace", "delete"):
                out += [_line("-", line) for line in old_lines[a1:a2]]
                removed += [(a1 + k + 1, line.rstrip("\n")) for k, line in enumerate(old_lines[a1:a2])]
            if tag in ("replace", "insert"):
                out += [_line("+", line) for line in new_lines[b1:b2]]
                added += [(b1 + k + 1, line.rstrip("\n")) for k, line in enumerate(new_lines[b1:b2])]
    return out, added, removed


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


def _line(tag: str, line: str) -> str:
    if line.endswith("\n"):
        return tag + line
    return f"{tag}{line}\n\\ No newline at end of file\n"


def file_diff(path: str, old: bytes | Digest | None, new: bytes | Digest | None, old_key: StatKey | None = None,
              new_key: StatKey | None = None) -> FileDiff:
    """A git-style diff of one path; `old` None means added, `new` None means deleted."""
    header = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        status, header = "added", header + [f"new file mode {git_mode(new_key)}\n"]
    elif new is None:
        status, header = "deleted", header + [f"deleted file mode {git_mode(old_key)}\n"]
    else:
        status = "modified"
        if git_mode(old_key) != git_mode(new_key) and old_key and new_key:
            header += [f"old mode {git_mode(old_key)}\n", f"new mode {git_mode(new_key)}\n"]
            if old == new:
                return FileDiff(path, "mode", "".join(header))
    old_b, new_b = old or b"", new or b""
    if _is_binary(old_b) or _is_binary(new_b):
        a = "/dev/null" if old is None else f"a/{path}"
        b = "/dev/null" if new is None else f"b/{path}"
        index = f"index {_blob_id(old)}..{_blob_id(new)}\n"
        return FileDiff(path, status, "".join(header) + index + f"Binary files {a} and {b} differ\n", binary=True)
    body, added, removed = _hunks(old_b.decode(), new_b.decode())
    if not body:
        return FileDiff(path, status, "".join(header))
    a = "/dev/null" if old is None else f"a/{path}"
    b = "/dev/null" if new is None else f"b/{path}"
    text = "".join(header + [f"--- {a}\n", f"+++ {b}\n"] + body)
    return FileDiff(path, status, text, added=added, removed=removed)


def _blob_id(data: bytes | Digest | None) -> str:
    """git's object id of a blob (all zeros for none): binary hunks need it for `git apply`."""
    if data is None:
        return "0" * 40
    if isinstance(data, Digest):
        return data.oid
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def renamed_diff(old_path: str, new_path: str) -> FileDiff:
    text = (f"diff --git a/{old_path} b/{new_path}\nsimilarity index 100%\n"
            f"rename from {old_path}\nrename to {new_path}\n")
    return FileDiff(new_path, "renamed", text, old_path=old_path)


def render(diffs: list[FileDiff]) -> str:
    """The patch of several file diffs (their texts in order)."""
    return "".join(d.text for d in diffs)
