"""How one batch of RedisStore operations becomes a handful of commands in one pipeline.

Consecutive operations of a kind are folded: gets into one ``MGET``, sets into one Lua
``EVAL`` (each ``SET`` keeps its own ``PX``), appends into one ``EVAL`` per stream that runs the
``XADD``s server-side and trims once. So a batch of 10 000 appends is one command whose
reply is one array, instead of 10 000 commands parsed one by one by the client.
Scripts start with ``#!lua`` (Redis 7) so the server refuses them up front on a read-only
replica (``READONLY``) or past ``maxmemory`` (``OOM``), before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Group", "plan", "queue"]

Group = tuple[str, list[int]]
"""(kind, indices of the batch's operations it carries)."""

SET_SCRIPT = """#!lua
for i = 1, #KEYS do
  local px = ARGV[2 * i]
  if px == '' then
    redis.call('SET', KEYS[i], ARGV[2 * i - 1])
  else
    redis.call('SET', KEYS[i], ARGV[2 * i - 1], 'PX', px)
  end
end
return #KEYS
"""

# ARGV: maxlen ('' keeps all), then (ts, body) pairs. An id "<ts>-*" that is not above the
# stream's newest id (a back-dated or odd _ts) falls back to "*", the next free id.
XADD_SCRIPT = """#!lua
local key = KEYS[1]
local n = 0
for i = 2, #ARGV, 2 do
  local ok = redis.pcall('XADD', key, ARGV[i] .. '-*', 'd', ARGV[i + 1])
  if type(ok) == 'table' and ok.err then
    redis.call('XADD', key, '*', 'd', ARGV[i + 1])
  end
  n = n + 1
end
if ARGV[1] ~= '' then
  redis.call('XTRIM', key, 'MAXLEN', '~', ARGV[1])
end
return n
"""


def plan(ops: Sequence[tuple[Any, ...]]) -> list[Group]:
    """Fold a batch into groups, keeping the order that matters (per key, per stream)."""
    groups: list[Group] = []
    streams: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        kind = op[0]
        if kind == "app":
            members = streams.get(op[1])
            if members is None:
                members = streams[op[1]] = []
                groups.append(("app", members))
            members.append(i)
            continue
        streams = {}  # a non-append ends the run of appends
        if kind != "del" and groups and groups[-1][0] == kind:
            groups[-1][1].append(i)
        else:
            groups.append((kind, [i]))
    return groups


def queue(pipe: Any, kind: str, ops: list[tuple[Any, ...]], max_log: int | None) -> None:
    """Add the one command that carries ``ops`` (all of ``kind``) to ``pipe``."""
    if kind == "get":
        pipe.execute_command("MGET", *(op[1] for op in ops))
    elif kind == "del":
        pipe.execute_command("GETDEL", ops[0][1])
    elif kind == "set":
        args: list[Any] = []
        for op in ops:
            args += (op[2], b"" if op[3] is None else op[3])
        pipe.execute_command("EVAL", SET_SCRIPT, len(ops), *(op[1] for op in ops), *args)
    else:
        args = [b"" if max_log is None else max_log]
        for op in ops:
            args += (op[2], op[3])
        pipe.execute_command("EVAL", XADD_SCRIPT, 1, ops[0][1], *args)
