from .errors import TemplateError, TemplateSyntaxError
from .render import render

__all__ = ["render", "TemplateError", "TemplateSyntaxError"]
