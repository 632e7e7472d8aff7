"""Evaluates expression trees exactly."""
from __future__ import annotations

from fractions import Fraction

from .errors import CalcError
from .nodes import BinOp, Neg, Node, Num
from .parser import parse


def _eval(node: Node) -> Fraction:
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Neg):
        return -_eval(node.operand)
    left, right = _eval(node.left), _eval(node.right)
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left - right
    if node.op == "*":
        return left * right
    if node.op == "/":
        if right == 0:
            raise CalcError("division by zero")
        return left / right
    if node.op == "^":
        if right.denominator != 1:
            raise CalcError("only integer exponents are supported")
        if left == 0 and right < 0:
            raise CalcError("division by zero")
        return left ** int(right)
    raise CalcError(f"unknown operator {node.op!r}")


def evaluate(src: str) -> Fraction:
    return _eval(parse(src))
