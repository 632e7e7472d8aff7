from .errors import ReportError, SpecError
from .report import build_report
from .spec import Metric, ReportSpec, parse_spec

__all__ = ["build_report", "parse_spec", "Metric", "ReportSpec", "ReportError", "SpecError"]
