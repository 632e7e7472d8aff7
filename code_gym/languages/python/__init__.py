"""Python: everything code-gym knows about Python projects, behind the `Language` protocol."""
