"""The legacy session table: bounded, and a flood of new sessions never evicts one in use."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aircore.protocol.session import Connection
from aircore.transports.sessions import SessionTable


def _conn() -> Connection:
    return Connection(transport="tcp")


def test_a_flood_of_new_sessions_evicts_only_new_sessions() -> None:
    table = SessionTable(max_sessions=8)
    table.open("busy", _conn())
    assert table.use("busy") is not None  # a second request: established
    for i in range(1024):
        table.open(f"flood-{i}", _conn())
    assert "busy" in table
    assert len(table) == 8
    assert table.evicted == 1024 + 1 - 8


def test_established_sessions_go_least_recently_used_first_when_none_is_new() -> None:
    table = SessionTable(max_sessions=2)
    for sid in ("a", "b"):
        table.open(sid, _conn())
        table.use(sid)
    table.use("a")  # b is now the least recently used
    table.open("c", _conn())  # none on probation: the most idle session makes room
    assert ("a" in table, "b" in table, "c" in table) == (True, False, True)
    table.open("d", _conn())  # c is on probation: it goes, a stays
    assert ("a" in table, "c" in table, "d" in table) == (True, False, True)


@given(st.lists(st.tuples(st.sampled_from(["open", "use", "close"]), st.integers(0, 20))))
def test_the_table_never_exceeds_its_cap(ops: list[tuple[str, int]]) -> None:
    table = SessionTable(max_sessions=5)
    for op, n in ops:
        sid = f"s{n}"
        if op == "open" and sid not in table:
            table.open(sid, _conn())
        elif op == "use":
            table.use(sid)
        else:
            table.close(sid)
        assert len(table) <= 5
        assert len(list(table.values())) == len(table)
