"""dashboard: the local Dash app that shows what an air server's tools are doing.

The data layer is importable without Dash: :class:`DashboardData` (async) builds the page's view
model from a store opened read-only with :func:`open_store`; :class:`SyncReader` runs it on a
private event loop for Dash's callbacks. The app itself lives in ``dashboard.app`` and is served
by ``dashboard.server.DashboardServer`` (``air dashboard``).
"""

from dashboard.data import DashboardData, open_store
from dashboard.errors import DashboardError, InvalidRangeError, StoreUnavailableError
from dashboard.ranges import RANGES, resolve_range
from dashboard.reader import SyncReader
from dashboard.types import DashboardView, Filters, TimeRange, ToolDetail

__all__ = [
    "RANGES",
    "DashboardData",
    "DashboardError",
    "DashboardView",
    "Filters",
    "InvalidRangeError",
    "StoreUnavailableError",
    "SyncReader",
    "TimeRange",
    "ToolDetail",
    "open_store",
    "resolve_range",
]
