from .errors import ConfigError
from .config import Config, loads

__all__ = ["Config", "ConfigError", "loads"]
