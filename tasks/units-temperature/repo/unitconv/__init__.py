from .errors import IncompatibleUnits, UnitError, UnknownUnit
from .registry import Unit, lookup, units_of
from .convert import convert
from .parse import parse_quantity
from .format import convert_text, format_quantity

__all__ = ["convert", "convert_text", "format_quantity", "parse_quantity", "lookup", "units_of", "Unit",
           "UnitError", "UnknownUnit", "IncompatibleUnits"]
