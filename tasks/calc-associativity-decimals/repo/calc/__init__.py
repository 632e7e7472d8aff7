from .errors import CalcError, LexError, ParseError
from .evaluator import evaluate
from .lexer import tokenize
from .parser import parse

__all__ = ["evaluate", "tokenize", "parse", "CalcError", "LexError", "ParseError"]
