from .errors import InsufficientStock, StockError, UnknownSku
from .models import Item
from .inventory import Inventory
from .reports import stock_report, total_value

__all__ = ["Inventory", "Item", "stock_report", "total_value", "StockError", "UnknownSku", "InsufficientStock"]
