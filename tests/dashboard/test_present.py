"""How the page words errors: JSON-RPC codes by name, a per-type summary, full messages."""

from __future__ import annotations

from airmeter import Layer
from airmeter.aggregate import aggregate
from dashboard.present import error_label, error_rows, error_summary
from dashboard.ranges import resolve_range
from dashboard.types import DashboardView, ErrorRow, Filters


def _view(errors_by_type: tuple[tuple[str, int], ...], rows: tuple[ErrorRow, ...]) -> DashboardView:
    return DashboardView(
        range=resolve_range("1h", now_ms=1_790_000_000_000),
        filters=Filters(),
        snapshot=aggregate((), now_ms=1_790_000_000_000),
        recent_errors=rows,
        tool_names=(),
        store_empty=False,
        errors_by_type=errors_by_type,
    )


def test_jsonrpc_codes_are_named_and_exception_names_kept() -> None:
    assert error_label("-32602") == "invalid params (-32602)"
    assert error_label("-32603") == "internal error (-32603)"
    assert error_label("RuntimeError") == "RuntimeError"
    assert error_label("-32001") == "-32001"  # a server's own code stays as recorded
    assert error_label("cancelled") == "cancelled"
    assert error_label("budget_exceeded") == "budget exceeded"


def test_error_rows_name_the_type_and_keep_the_whole_message() -> None:
    message = "Invalid arguments for tool 'get_user': user_id: required field is missing " * 3
    row = ErrorRow(
        ts_ms=1_790_000_000_000, tool="get_user", layer=Layer.L2, server="demo",
        error_type="-32602", message=message, request_id="42",
    )  # fmt: skip
    (shown,) = error_rows(_view((("-32602", 1),), (row,)))
    assert shown["error_type"] == "invalid params (-32602)"
    assert shown["message"] == message
    assert (shown["tool"], shown["layer"], shown["request_id"]) == ("get_user", "L2", "42")


def test_summary_counts_failures_by_type() -> None:
    view = _view((("-32602", 1_280), ("RuntimeError", 15), ("cancelled", 3)), ())
    assert error_summary(view) == (
        "1,298 failed calls in this range: invalid params (-32602) 1,280 · RuntimeError 15"
        " · cancelled 3"
    )
    assert error_summary(_view((), ())) == "no failed calls in this range"
