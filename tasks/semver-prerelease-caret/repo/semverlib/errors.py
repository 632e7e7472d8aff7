class InvalidVersion(ValueError):
    """Raised for strings that are not semantic versions."""


class InvalidRange(ValueError):
    """Raised for malformed range expressions."""
