import logging

from airhttp import RepeatFilter
from airhttp.logs import repeat_filter_installed


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(msg: str, name: str = "asyncio") -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, None, None)


def test_a_repeated_message_is_let_through_a_few_times_per_window_then_counted() -> None:
    clock = _Clock()
    flt = RepeatFilter(window=10.0, burst=3, clock=clock)
    passed = [flt.filter(_record("accept failed")) for _ in range(1000)]
    assert passed.count(True) == 3
    assert flt.suppressed == 997
    assert flt.filter(_record("another message"))  # other messages are not held back
    clock.now = 10.0
    summary = _record("accept failed")
    assert flt.filter(summary)
    assert "997 similar messages suppressed" in summary.getMessage()


def test_the_filter_is_installed_on_the_root_handlers_only_while_serving() -> None:
    handler = logging.StreamHandler()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with repeat_filter_installed() as flt:
            assert flt in handler.filters
        assert flt not in handler.filters
    finally:
        root.removeHandler(handler)
