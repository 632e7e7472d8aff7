from .table import Table
from .render import render

__all__ = ["Table", "render"]
