"""What DiDPO compares: normalised code lines, their tokens and stable hashes.

A line is compared without its comment and trailing whitespace; blank and comment-only lines are
not compared (`normalize_line`). Tokens are runs of word characters (ASCII letters, digits, _ and
any non-ASCII character) and single other non-space characters. Hashes are polynomial hashes of
the code points modulo 2^64, finalised with splitmix64: the same in every process, unlike Python's
salted `hash()`. `tokenize` computes tokens and hashes of many lines in a few vectorized passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

_WORD_CHARS = "0-9A-Za-z_\x80-\U0010ffff"
TOKEN = re.compile(f"[{_WORD_CHARS}]+|[^{_WORD_CHARS} \t\r\n\x0b\x0c]")
_SPACE, _WORD, _PUNCT, _NEWLINE = 0, 1, 2, 3
_ASCII_KIND = np.array([_WORD if chr(c).isalnum() or c == ord("_") else _SPACE if chr(c) in " \t\r\x0b\x0c"
                        else _NEWLINE if c == 10 else _PUNCT for c in range(128)], np.int64)
MAX_COPIES = 64  # copies of one token beyond this many in a unit are not counted by the similarity
_POWER = np.uint64(0x100000001B3)
_POWER_INVERSE = np.uint64(pow(0x100000001B3, -1, 1 << 64))
_MIX_LENGTH = np.uint64(0xC2B2AE3D27D4EB4F)
_COMMENT_MARKERS = {
    "#": (".py", ".pyi", ".sh", ".bash", ".rb", ".pl", ".r", ".yaml", ".yml", ".toml", ".cfg", ".jl",
          ".ps1", ".mk", "makefile", "dockerfile", ".cmake", ".txt"),
    "//": (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".java", ".js", ".jsx", ".ts", ".tsx", ".go",
           ".rs", ".swift", ".kt", ".scala", ".cs", ".php", ".dart", ".m"),
    "--": (".sql", ".lua", ".hs"),
}


def comment_marker(path: str) -> Optional[str]:
    """The line-comment marker of a file, from its extension (None when unknown)."""
    name = path.lower()
    for marker, endings in _COMMENT_MARKERS.items():
        if name.endswith(endings):
            return marker
    return None


def normalize_line(line: str, comment: Optional[str] = "#") -> str:
    """The line as compared: comment removed, trailing whitespace stripped, "" when nothing is left.

    A comment is removed only where no quote precedes its marker on the line (a marker inside a
    string literal is kept). For "//" languages, lines that start with "/*", "*" or "*/" are
    block-comment lines.
    """
    if comment is not None and comment in line:
        cut = line.index(comment)
        if "'" not in line[:cut] and '"' not in line[:cut]:
            line = line[:cut]
    stripped = line.strip()
    if not stripped or (comment == "//" and stripped.startswith(("/*", "*"))):
        return ""
    return line.rstrip()


def similarity(a: str, b: str, comment: Optional[str] = "#") -> float:
    """Dice similarity 2|A ∩ B| / (|A| + |B|) of the token multisets of two code texts.

    Comments and blank lines are ignored; a token counts at most MAX_COPIES times.
    """
    ta, tb = _token_counts(a, comment), _token_counts(b, comment)
    total = sum(ta.values()) + sum(tb.values())
    if total == 0:
        return 1.0
    return 2.0 * sum(min(c, tb.get(t, 0)) for t, c in ta.items()) / total


def _token_counts(text: str, comment: Optional[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in text.splitlines():
        for tok in TOKEN.findall(normalize_line(line, comment)):
            counts[tok] = min(counts.get(tok, 0) + 1, MAX_COPIES)
    return counts


class LineVocabulary:
    """Distinct compared-line contents of a batch, each normalised once.

    `lines(texts, comment)` gives each line's content id (-1 for a line that is not compared: blank
    or comment) and its indentation; `arrays()` hashes and tokenises all distinct contents at once.
    """

    def __init__(self) -> None:
        self._codes: dict[Optional[str], dict[str, int]] = {}
        self._contents: dict[str, int] = {}

    def lines(self, texts: Sequence[str], comment: Optional[str]) -> tuple[np.ndarray, np.ndarray]:
        cache = self._codes.setdefault(comment, {})
        codes = [cache.get(t) for t in texts]
        if None in codes:
            for k, code in enumerate(codes):
                if code is None:
                    codes[k] = cache[texts[k]] = self._code(texts[k], comment)
        packed = np.fromiter(codes, np.int64, len(codes))
        return np.where(packed >= 0, packed >> 16, -1), packed & 0xFFFF

    def _code(self, line: str, comment: Optional[str]) -> int:
        """content id * 2^16 + indent, or -1."""
        norm = normalize_line(line, comment)
        if not norm:
            return -1
        content = norm.lstrip()
        cid = self._contents.setdefault(content, len(self._contents))
        return (cid << 16) | min(len(norm) - len(content), 0xFFFF)

    def arrays(self) -> "Contents":
        return tokenize(list(self._contents))


def tokenize(contents: list[str]) -> "Contents":
    """Stable hashes and token ids of many line contents (see the module docstring).

    Args:
      contents: C line contents without line breaks.

    Returns:
      Contents: (C,) hashes, token CSR (C + 1,) / (T,) with ids dense in 0..n_tokens-1.
    """
    if not contents:
        return Contents(np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int64), 1)
    joined = "\n".join(contents)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.uint64)
    n = codes.shape[0]
    kind = np.where(codes < 128, _ASCII_KIND[np.minimum(codes, 127).astype(np.int64)], _WORD)
    word = kind == _WORD
    starts_word = word & ~np.concatenate([[False], word[:-1]])
    ends_word = word & ~np.concatenate([word[1:], [False]])
    starts = np.flatnonzero(starts_word | (kind == _PUNCT))
    ends = np.empty_like(starts)
    is_word = word[starts]
    ends[is_word] = np.flatnonzero(ends_word) + 1
    ends[~is_word] = starts[~is_word] + 1
    line_start = np.concatenate([[0], np.flatnonzero(kind == _NEWLINE) + 1])
    line_end = np.append(line_start[1:] - 1, n)

    prefix, inverse = _prefix_hash(codes)
    token_hash = _span_hash(prefix, inverse, starts, ends)
    uniq, token_ids = np.unique(token_hash, return_inverse=True)
    owner = np.searchsorted(line_start, starts, side="right") - 1
    ptr = np.zeros(len(contents) + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=len(contents)), out=ptr[1:])
    return Contents(_span_hash(prefix, inverse, line_start, line_end), ptr, token_ids.reshape(-1).astype(np.int64),
                    max(int(uniq.shape[0]), 1))


def _prefix_hash(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """H[i] = sum_{j < i} c_j P^j and the powers P^-i, modulo 2^64."""
    powers = np.empty(codes.shape[0] + 1, np.uint64)
    powers[0] = 1
    np.cumprod(np.full(codes.shape[0], _POWER, np.uint64), out=powers[1:])
    inverse = np.empty(codes.shape[0] + 1, np.uint64)
    inverse[0] = 1
    np.cumprod(np.full(codes.shape[0], _POWER_INVERSE, np.uint64), out=inverse[1:])
    prefix = np.zeros(codes.shape[0] + 1, np.uint64)
    np.cumsum(codes * powers[:-1], out=prefix[1:])
    return prefix, inverse


def _span_hash(prefix: np.ndarray, inverse: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Hash of codes[s:e] for each span: (H[e] - H[s]) P^-s, length mixed in, splitmix64-finalised."""
    x = (prefix[ends] - prefix[starts]) * inverse[starts] + (ends - starts).astype(np.uint64) * _MIX_LENGTH
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


@dataclass(frozen=True, eq=False)
class Contents:
    """Distinct line contents: (C,) stable hashes, token CSR (C + 1,) / (T,), vocabulary size."""

    hashes: np.ndarray
    token_ptr: np.ndarray
    tokens: np.ndarray
    n_tokens: int
