"""Languages: everything one language needs, behind one protocol (`base.Language`)."""
