class ReportError(ValueError):
    """Problems with the input data."""


class SpecError(ValueError):
    """Problems with the report specification."""
