from __future__ import annotations

import pytest

from airmeter import CallRecord


class ListRecorder:
    """A Recorder that keeps what it is given."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def record(self, record: CallRecord) -> None:
        self.records.append(record)

    def by_tool(self) -> dict[str, list[CallRecord]]:
        out: dict[str, list[CallRecord]] = {}
        for rec in self.records:
            out.setdefault(rec.tool, []).append(rec)
        return out


@pytest.fixture
def recorder() -> ListRecorder:
    return ListRecorder()
