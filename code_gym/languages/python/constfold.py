"""Constant folding for the integrity audit: the value an expression has when it is built only
from constants, computed the way the interpreter would, without running any of the code.

`Folder(names, resolve).fold(node)` returns the str, bytes or int an expression evaluates to, or
None when it depends on anything else. It folds string concatenation and repetition, f-strings,
`%` and `str.format`, `str.join` (of constants, `reversed`, `map(chr, ...)` and comprehensions
over constants), slicing and indexing, pure str/bytes methods, `chr`/`ord`/`str`/`bytes`, and the
standard library's decoders (base64, binascii, codecs' rot13/hex, zlib/bz2/lzma/gzip). `names`
maps a variable to its folded value (the audit keeps simple assignments); `resolve` gives a call's
dotted name (`b64decode` imported from base64 -> "base64.b64decode"). Results are capped in size,
so a patch cannot make the audit build huge values.
"""
from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import gzip
import lzma
import operator
import zlib
from typing import Callable

Value = str | bytes | int
MAX_SIZE = 1 << 20  # longest folded string or bytes; larger values are "not constant"

_STR_METHODS = frozenset({"upper", "lower", "replace", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix",
                          "capitalize", "title", "swapcase", "casefold", "decode", "encode", "zfill", "center",
                          "ljust", "rjust", "expandtabs"})
_DECODERS: dict[str, Callable] = {
    "base64.b64decode": base64.b64decode, "base64.standard_b64decode": base64.standard_b64decode,
    "base64.urlsafe_b64decode": base64.urlsafe_b64decode, "base64.b32decode": base64.b32decode,
    "base64.b16decode": base64.b16decode, "base64.a85decode": base64.a85decode, "base64.b85decode": base64.b85decode,
    "base64.decodebytes": base64.decodebytes, "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex, "binascii.a2b_base64": binascii.a2b_base64,
    "zlib.decompress": zlib.decompress, "bz2.decompress": bz2.decompress, "lzma.decompress": lzma.decompress,
    "gzip.decompress": gzip.decompress, "codecs.decode": codecs.decode, "codecs.encode": codecs.encode,
    "builtins.bytes.fromhex": bytes.fromhex, "builtins.bytearray.fromhex": bytes.fromhex,
}
_INT_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
            ast.Mod: operator.mod, ast.BitXor: operator.xor, ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
            ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_MAX_INT = 1 << 64


def _sized(value: object) -> Value | None:
    if isinstance(value, bytearray):
        value = bytes(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -_MAX_INT < value < _MAX_INT else None
    if isinstance(value, (str, bytes)):
        return value if len(value) <= MAX_SIZE else None
    return None


class Folder:
    def __init__(self, names: Callable[[str], Value | None], resolve: Callable[[ast.AST], str | None]):
        self.names = names
        self.resolve = resolve

    def fold(self, node: ast.AST | None) -> Value | None:
        try:
            return _sized(self._fold(node)) if node is not None else None
        except Exception:  # whatever a constant operation raises at run time, it is not a constant
            return None

    def text(self, node: ast.AST | None) -> str | None:
        value = self.fold(node)
        return value if isinstance(value, str) else None

    def _fold(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (str, bytes, int)) else None
        if isinstance(node, ast.Name):
            return self.names(node.id)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Invert)):
            value = self.fold(node.operand)
            return (-value if isinstance(node.op, ast.USub) else ~value) if isinstance(value, int) else None
        if isinstance(node, ast.JoinedStr):
            return self._fstring(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _binop(self, node: ast.BinOp) -> object:
        left, right = self.fold(node.left), self.fold(node.right)
        if left is None:
            return None
        if isinstance(node.op, ast.Mod) and isinstance(left, (str, bytes)):
            args = self._items(node.right) if isinstance(node.right, ast.Tuple) else None
            if args is None:
                args = right
            return None if args is None else left % (tuple(args) if isinstance(node.right, ast.Tuple) else args)
        if right is None:
            return None
        if isinstance(node.op, ast.Add) and type(left) is type(right):
            return left + right
        if isinstance(node.op, ast.Mult):
            if isinstance(left, int) and isinstance(right, int):
                return left * right
            text, count = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(count, int) and isinstance(text, (str, bytes)) and count * len(text) <= MAX_SIZE:
                return text * count
            return None
        op = _INT_OPS.get(type(node.op))
        if op is not None and isinstance(left, int) and isinstance(right, int):
            if isinstance(node.op, ast.LShift) and right > 64:
                return None
            return op(left, right)
        return None

    def _fstring(self, node: ast.JoinedStr) -> str | None:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            if not isinstance(value, ast.FormattedValue):
                return None
            inner = self.fold(value.value)
            if inner is None:
                return None
            inner = {115: str, 114: repr, 97: ascii}.get(value.conversion, lambda v: v)(inner)
            spec = self._fstring(value.format_spec) if value.format_spec is not None else ""
            if spec is None:
                return None
            parts.append(format(inner, spec))
        return "".join(parts)

    def _subscript(self, node: ast.Subscript) -> object:
        base = self.fold(node.value)
        if not isinstance(base, (str, bytes)):
            return None
        if isinstance(node.slice, ast.Slice):
            bounds = [self.fold(b) if b is not None else None for b in (node.slice.lower, node.slice.upper, node.slice.step)]
            given = [b for b in (node.slice.lower, node.slice.upper, node.slice.step) if b is not None]
            if any(not isinstance(self.fold(b), int) for b in given):
                return None
            return base[slice(*bounds)]
        index = self.fold(node.slice)
        return base[index] if isinstance(index, int) else None

    def _items(self, node: ast.AST) -> list | None:
        """The elements of a sequence built from constants, or None."""
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.fold(e) for e in node.elts]
            return None if any(i is None for i in items) else items
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
            comp = node.generators[0]
            source = self._items(comp.iter)
            if source is None or comp.ifs or comp.is_async or not isinstance(comp.target, ast.Name):
                return None
            name = comp.target.id
            outer = self.names
            results = []
            for item in source:
                self.names = lambda n, item=item: item if n == name else outer(n)
                try:
                    value = self.fold(node.elt)
                finally:
                    self.names = outer
                if value is None:
                    return None
                results.append(value)
            return results
        if isinstance(node, ast.Call) and not node.keywords:
            func = self.resolve(node.func)
            if func == "builtins.reversed" and len(node.args) == 1:
                items = self._items(node.args[0])
                return None if items is None else items[::-1]
            if func == "builtins.map" and len(node.args) == 2 and self.resolve(node.args[0]) == "builtins.chr":
                items = self._items(node.args[1])
                return None if items is None or not all(isinstance(i, int) for i in items) else [chr(i) for i in items]
            if func in ("builtins.list", "builtins.tuple") and len(node.args) == 1:
                return self._items(node.args[0])
        value = self.fold(node)
        if isinstance(value, str):
            return list(value)
        if isinstance(value, bytes):
            return list(value)
        return None

    def _call(self, node: ast.Call) -> object:
        func = self.resolve(node.func)
        if isinstance(node.func, ast.Attribute) and func is None:
            return self._method(node)
        args = [self.fold(a) for a in node.args]
        if any(a is None for a in args) or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        kwargs = {k.arg: self.fold(k.value) for k in node.keywords}
        if None in kwargs or any(v is None for v in kwargs.values()):
            return None
        if func in _DECODERS:
            return _DECODERS[func](*args, **kwargs)
        if func == "builtins.chr" and len(args) == 1:
            return chr(args[0])
        if func == "builtins.ord" and len(args) == 1:
            return ord(args[0])
        if func == "builtins.str" and len(args) == 1 and not kwargs:
            return str(args[0]) if isinstance(args[0], (str, int)) else None
        if func == "builtins.str" and len(args) in (2, 3) and isinstance(args[0], bytes):
            return str(*args)
        if func in ("builtins.bytes", "builtins.bytearray"):
            if len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
                items = self._items(node.args[0])
                return bytes(items) if items is not None else None
            return bytes(*args, **kwargs) if args and isinstance(args[0], (str, bytes)) and len(args) <= 3 else None
        if func == "builtins.int" and args and isinstance(args[0], (str, bytes)):
            return int(*args)
        if func == "builtins.len" and len(args) == 1:
            return len(args[0]) if isinstance(args[0], (str, bytes)) else None
        return None

    def _method(self, node: ast.Call) -> object:
        owner = self.fold(node.func.value)
        name = node.func.attr
        if not isinstance(owner, (str, bytes)):
            return None
        if name == "join" and len(node.args) == 1 and not node.keywords:
            items = self._items(node.args[0])
            return owner.join(items) if items is not None else None
        args = [self.fold(a) for a in node.args]
        kwargs = {k.arg: self.fold(k.value) for k in node.keywords}
        if any(a is None for a in args) or None in kwargs or any(v is None for v in kwargs.values()):
            return None
        if name == "format" and isinstance(owner, str):
            return owner.format(*args, **kwargs)
        if name in _STR_METHODS:
            return getattr(owner, name)(*args, **kwargs)
        return None
