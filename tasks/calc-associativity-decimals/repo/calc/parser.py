"""Recursive-descent parser producing an expression tree."""
from __future__ import annotations

from .errors import ParseError
from .lexer import Token, tokenize
from .nodes import BinOp, Neg, Node, Num


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.current
        self.index += 1
        return token

    def at_op(self, ops: str) -> bool:
        return self.current.kind == "op" and self.current.value in ops

    # expr := term (("+" | "-") term)*
    def expr(self) -> Node:
        """Parse a sum or difference; the entry point of the grammar."""
        left = self.term()
        if self.at_op("+-"):
            op = self.advance().value
            return BinOp(op, left, self.expr())
        return left

    # term := unary (("*" | "/") unary)*
    def term(self) -> Node:
        """Parse a product or quotient of unary expressions.

        Operands are unary expressions, so ``2 * -3`` is accepted.
        """
        left = self.unary()
        if self.at_op("*/"):
            op = self.advance().value
            return BinOp(op, left, self.term())
        return left

    # unary := "-" unary | power
    def unary(self) -> Node:
        if self.at_op("-"):
            self.advance()
            return Neg(self.unary())
        return self.power()

    # power := atom ("^" unary)?
    def power(self) -> Node:
        base = self.atom()
        if self.at_op("^"):
            self.advance()
            return BinOp("^", base, self.unary())
        return base

    def atom(self) -> Node:
        token = self.current
        if token.kind == "num":
            self.advance()
            return Num(token.value)  # type: ignore[arg-type]
        if token.kind == "(":
            self.advance()
            node = self.expr()
            if self.current.kind != ")":
                raise ParseError(f"expected ')' at position {self.current.pos}")
            self.advance()
            return node
        raise ParseError(f"unexpected {token.kind} at position {token.pos}")


def parse(src: str) -> Node:
    parser = _Parser(tokenize(src))
    node = parser.expr()
    if parser.current.kind != "eof":
        raise ParseError(f"unexpected input at position {parser.current.pos}")
    return node
