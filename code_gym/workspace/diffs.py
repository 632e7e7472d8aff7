"""Git-style diffs of file states, computed in-process (difflib): the diff of one path
(`file_diff`), a rename (`renamed_diff`) and a patch of several (`render`).

What they write is what `git diff --binary` writes, so that `git apply` takes it: names quoted as
git quotes them (`quote_path`), binary content as git's binary patch (base85 of zlib data), a
change of file type (a file made a link) as a deletion and an addition. A name is never written
raw: one holding a newline could otherwise start lines that read as another file's hunks."""
from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from code_gym.util.hostfs import Digest, StatKey, fs_bytes
from code_gym.util.linediff import BoundedMatcher


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

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths this change touches: a rename's old path (now gone) and its new one."""
        return (self.old_path, self.path) if self.old_path else (self.path,)


# git's quote_c_style with core.quotePath on: control bytes, '"', '\' and bytes >= 0x7f
_MUST_QUOTE = re.compile(rb'[\x00-\x1f"\\\x7f-\xff]')
_C_ESCAPES = {0x07: b"\\a", 0x08: b"\\b", 0x09: b"\\t", 0x0a: b"\\n", 0x0b: b"\\v", 0x0c: b"\\f", 0x0d: b"\\r",
              0x22: b'\\"', 0x5c: b"\\\\"}


def quote_path(path: str, prefix: str = "") -> str:
    """`prefix + path` as git writes a file name in diffs and listings (`core.quotePath`, the
    default): unchanged when it holds only printable ASCII, else between double quotes with C
    escapes (\\n, \\t, \\", \\\\ ...) and each other control or non-ASCII byte as a 3-digit octal
    escape of its UTF-8 (or raw, for a name that is not UTF-8) bytes. Always printable ASCII."""
    raw = fs_bytes(prefix + path)
    if not _MUST_QUOTE.search(raw):
        return prefix + path
    body = _MUST_QUOTE.sub(lambda m: _C_ESCAPES.get(m[0][0]) or b"\\%03o" % m[0][0], raw)
    return '"' + body.decode("ascii") + '"'


def text_lines(text: str) -> list[str]:
    """The lines of `text` as diffs count them: split after each "\\n" only (str.splitlines also
    splits at \\r, \\f, \\x1c, \\u2028 ..., which would put line breaks into a patch that no file has)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def _is_binary(data: bytes | Digest) -> bool:
    if isinstance(data, Digest) or b"\0" in data:
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
    old_lines, new_lines = text_lines(old), text_lines(new)
    out: list[str] = []
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    matcher = BoundedMatcher(old_lines, new_lines)
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


def is_link(key: StatKey | None) -> bool:
    return git_mode(key) == "120000"


def file_diff(path: str, old: bytes | Digest | None, new: bytes | Digest | None, old_key: StatKey | None = None,
              new_key: StatKey | None = None, binary_patch: bool = True) -> FileDiff:
    """A git-style diff of one path; `old` None means added, `new` None means deleted. Binary
    content is written as git's binary patch, or with `binary_patch=False` (for a reader, not
    `git apply`) as git's "Binary files ... differ" line."""
    if old is not None and new is not None and old_key and new_key and is_link(old_key) != is_link(new_key):
        gone = file_diff(path, old, None, old_key, binary_patch=binary_patch)
        born = file_diff(path, None, new, None, new_key, binary_patch=binary_patch)
        return FileDiff(path, "modified", gone.text + born.text, binary=gone.binary or born.binary,
                        added=born.added, removed=gone.removed)
    a_name, b_name = quote_path(path, "a/"), quote_path(path, "b/")
    old_mode, new_mode = git_mode(old_key), git_mode(new_key)
    header = [f"diff --git {a_name} {b_name}\n"]
    mode_suffix = ""
    if old is None:
        status, header = "added", header + [f"new file mode {new_mode}\n"]
    elif new is None:
        status, header = "deleted", header + [f"deleted file mode {old_mode}\n"]
    else:
        status = "modified"
        if old_mode != new_mode and old_key and new_key:
            header += [f"old mode {old_mode}\n", f"new mode {new_mode}\n"]
            if old == new:
                return FileDiff(path, "mode", "".join(header))
        else:
            mode_suffix = f" {old_mode}"
    a = "/dev/null" if old is None else a_name
    b = "/dev/null" if new is None else b_name
    old_b, new_b = old or b"", new or b""
    if _is_binary(old_b) or _is_binary(new_b):
        header.append(f"index {_blob_id(old)}..{_blob_id(new)}{mode_suffix}\n")
        if not binary_patch or isinstance(new_b, Digest):
            body = f"Binary files {a} and {b} differ\n"  # new content too large to hold: no patch data
        else:  # the reverse hunk (for `git apply -R`) is optional: none when the old side is too large
            body = "GIT binary patch\n" + _literal(new_b) + ("" if isinstance(old_b, Digest) else _literal(old_b))
        return FileDiff(path, status, "".join(header) + body, binary=True)
    body, added, removed = _hunks(old_b.decode(), new_b.decode())
    if not body:
        return FileDiff(path, status, "".join(header))
    tab = "\t" if " " in path else ""  # git ends a name with a space with a tab on these lines
    header += [f"--- {a}{tab if old is not None else ''}\n", f"+++ {b}{tab if new is not None else ''}\n"]
    return FileDiff(path, status, "".join(header + body), added=added, removed=removed)


_BASE85 = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
                        np.uint8)  # git's alphabet (base85.c), the same as base64.b85encode's


def _literal(data: bytes) -> str:
    """One hunk of git's binary patch: "literal SIZE", then the zlib data (git's level, 1) in base85,
    four bytes to five characters, on lines of 52 bytes each led by their count (A-Z: 1-26, a-z:
    27-52), the last one zero-padded. Vectorized: base64.b85encode took 0.25 s a MiB here."""
    packed = zlib.compress(data, 1)
    words = np.frombuffer(packed + b"\0" * (-len(packed) % 4), ">u4").astype(np.uint32)
    digits = np.empty((len(words), 5), np.uint8)
    for k in range(4, -1, -1):
        words, digits[:, k] = np.divmod(words, np.uint32(85))
    chars = _BASE85[digits].reshape(-1)
    full = len(packed) // 52
    lines = np.empty((full, 67), np.uint8)
    lines[:, 0], lines[:, 1:66], lines[:, 66] = ord("z"), chars[:full * 65].reshape(full, 65), ord("\n")
    text = lines.tobytes().decode("ascii")
    rest = len(packed) - full * 52
    if rest:
        count = chr(ord("A") + rest - 1) if rest <= 26 else chr(ord("a") + rest - 27)
        text += count + chars[full * 65:].tobytes().decode("ascii") + "\n"
    return f"literal {len(data)}\n{text}\n"


def _blob_id(data: bytes | Digest | None) -> str:
    """git's object id of a blob (all zeros for none): binary hunks need it for `git apply`."""
    if data is None:
        return "0" * 40
    if isinstance(data, Digest):
        return data.oid
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def renamed_diff(old_path: str, new_path: str, old_key: StatKey | None = None,
                 new_key: StatKey | None = None) -> FileDiff:
    """A file moved with its content unchanged (its mode may change)."""
    modes = ""
    if old_key and new_key and git_mode(old_key) != git_mode(new_key):
        modes = f"old mode {git_mode(old_key)}\nnew mode {git_mode(new_key)}\n"
    text = (f"diff --git {quote_path(old_path, 'a/')} {quote_path(new_path, 'b/')}\n{modes}similarity index 100%\n"
            f"rename from {quote_path(old_path)}\nrename to {quote_path(new_path)}\n")
    return FileDiff(new_path, "renamed", text, old_path=old_path)


def render(diffs: list[FileDiff]) -> str:
    """The patch of several file diffs (their texts in order)."""
    return "".join(d.text for d in diffs)
