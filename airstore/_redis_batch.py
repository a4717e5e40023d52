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

from redis import exceptions as rex

from airstore._redis_codec import decode_value, translate
from airstore.errors import CorruptDataError

__all__ = ["Group", "command", "outcomes", "plan"]

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

# ARGV[1]: maxlen ('' keeps all); ARGV[2]: the entries as "<ts> <json>" lines (orjson never
# writes a raw newline), so the client packs two arguments instead of two per entry. An id
# "<ts>-*" below the stream's last generated id (a back-dated or odd _ts) would be refused,
# so the script tracks that id and uses "*", the next free id, for those.
XADD_SCRIPT = """#!lua
local key = KEYS[1]
local top = -1
local info = redis.pcall('XINFO', 'STREAM', key)
if type(info) == 'table' and not info.err then
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      top = tonumber(string.match(info[i + 1], '^(%d+)'))
    end
  end
end
local n = 0
for ts, body in string.gmatch(ARGV[2], '([^ \\n]+) ([^\\n]+)') do
  local ms = tonumber(ts)
  if ms and ms >= top and ms < 9007199254740992 and ms == math.floor(ms) then
    redis.call('XADD', key, ts .. '-*', 'd', body)
    top = ms
  else
    local id = redis.call('XADD', key, '*', 'd', body)
    top = tonumber(string.match(id, '^(%d+)'))
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


def command(kind: str, ops: list[tuple[Any, ...]], max_log: int | None) -> tuple[Any, ...]:
    """The one command that carries ``ops`` (all of ``kind``)."""
    if kind == "get":
        return ("MGET", *(op[1] for op in ops))
    if kind == "del":
        return ("GETDEL", ops[0][1])
    if kind == "set":
        rows = [row for op in ops for row in op[1]]
        args: list[Any] = []
        for _key, payload, px in rows:
            args += (payload, b"" if px is None else px)
        return ("EVAL", SET_SCRIPT, len(rows), *(row[0] for row in rows), *args)
    lines = b"\n".join(b"%d %s" % row for op in ops for row in op[2])
    trim = b"" if max_log is None else max_log
    return ("EVAL", XADD_SCRIPT, 1, ops[0][1], trim, lines)


def outcomes(
    ops: Sequence[tuple[Any, ...]], groups: list[Group], replies: list[Any], now: float, where: str
) -> list[Any]:
    """One result per operation (an exception instance fails just that operation)."""
    results: list[Any] = [None] * len(ops)
    for (kind, members), reply in zip(groups, replies, strict=True):
        if isinstance(reply, rex.RedisError):
            error = translate(reply, where, kind.upper())
            for i in members:
                results[i] = error
        elif kind == "get":
            for i, payload in zip(members, reply, strict=True):
                results[i] = _decoded(ops[i][1], payload, now, where, want_live=False)
        elif kind == "del":
            results[members[0]] = _decoded(ops[members[0]][1], reply, now, where, want_live=True)
    return results


def _decoded(key: str, payload: bytes | None, now: float, where: str, *, want_live: bool) -> Any:
    """A get's value, or a delete's "was it live", or the CorruptDataError to raise."""
    if payload is None:
        return False if want_live else None
    try:
        live, value = decode_value(payload, now, f"{where} {key!r}")
    except CorruptDataError as exc:
        return exc
    return live if want_live else value
