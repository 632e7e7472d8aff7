class TemplateError(Exception):
    """Any problem while rendering a template."""


class TemplateSyntaxError(TemplateError):
    """The template text itself is malformed."""
