"""How one batch of RedisStore operations becomes a handful of commands in one pipeline.

Consecutive operations of a kind are folded: gets into one ``MGET``, sets into one Lua
``EVAL`` (each ``SET`` keeps its own ``PX``), appends into one ``EVAL`` per stream that runs the
``XADD``s server-side and trims once. So a batch of 10 000 appends is one command whose
reply is one array, instead of 10 000 commands parsed one by one by the client.
Scripts start with ``#!lua`` (Redis 7) so the server refuses them up front on a read-only
replica (``READONLY``) or past ``maxmemory`` (``OOM``), before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from redis import exceptions as rex

from airstore._redis_codec import decode_value, translate
from airstore.errors import (
    AirstoreError,
    CorruptDataError,
    InvalidArgumentError,
    InvalidValueError,
)

__all__ = ["INCR_SCRIPT", "Group", "command", "outcomes", "plan"]

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
local top = 0  -- no id below 0-1 exists: a negative _ts takes '*' even on an empty stream
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


# KEYS[1]: the counter; ARGV: step, store-clock now, expiry head for a new counter ('' none),
# PX for a new counter ('' none), the largest magnitude. A missing or expired counter starts
# at 0 with the new expiry; a live one keeps its head and its TTL (KEEPTTL). Lua numbers are
# doubles: exact for integers within ±2**53, the range every backend keeps counters in.
INCR_SCRIPT = """#!lua
local cur = redis.call('GET', KEYS[1])
local by, now, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[5])
local n, head = 0, nil
if cur then
  local sep = string.find(cur, '|', 1, true)
  if not sep then
    return redis.error_reply('AIRSTORE_NOT_COUNTER value at the key is not a RedisStore value')
  end
  local h = string.sub(cur, 1, sep - 1)
  if h ~= '' and not tonumber(h) then
    return redis.error_reply('AIRSTORE_NOT_COUNTER value at the key is not a RedisStore value')
  end
  if h == '' or tonumber(h) > now then
    head = h
    local body = string.sub(cur, sep + 1)
    if not string.match(body, '^%-?%d+$') or math.abs(tonumber(body)) > limit then
      return redis.error_reply('AIRSTORE_NOT_COUNTER ' .. string.sub(body, 1, 64))
    end
    n = tonumber(body)
  end
end
local r = n + by
if math.abs(r) > limit then
  return redis.error_reply('AIRSTORE_OVERFLOW ' .. string.format('%.0f', n))
end
local text = string.format('%.0f', r)
if r == 0 then text = '0' end
if head then
  redis.call('SET', KEYS[1], head .. '|' .. text, 'KEEPTTL')
elseif ARGV[4] == '' then
  redis.call('SET', KEYS[1], ARGV[3] .. '|' .. text)
else
  redis.call('SET', KEYS[1], ARGV[3] .. '|' .. text, 'PX', ARGV[4])
end
return text
"""


def plan(
    ops: Sequence[tuple[Any, ...]], slot: Callable[[tuple[Any, ...]], str] | None = None
) -> list[Group]:
    """Fold a batch into groups, keeping the order that matters (per key, per stream).

    With ``slot`` (Redis Cluster), gets and sets fold only with neighbours of the same slot,
    so no command spans two slots (CROSSSLOT).
    """
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
        if (
            kind in ("get", "set")
            and groups
            and groups[-1][0] == kind
            and (slot is None or slot(ops[groups[-1][1][-1]]) == slot(op))
        ):
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
    if kind == "incr":
        _, key, by, now, head, px, limit = ops[0]
        return ("EVAL", INCR_SCRIPT, 1, key, by, repr(now), head, px, limit)
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
        if isinstance(reply, AirstoreError):  # already translated (a cluster node's failure)
            for i in members:
                results[i] = reply
        elif kind == "incr":
            results[members[0]] = _counter(ops[members[0]], reply, where)
        elif isinstance(reply, rex.RedisError):
            error = translate(reply, where, kind.upper())
            for i in members:
                results[i] = error
        elif kind == "get":
            for i, payload in zip(members, reply, strict=True):
                results[i] = _decoded(ops[i][1], payload, now, where, want_live=False)
        elif kind == "del":
            results[members[0]] = _decoded(ops[members[0]][1], reply, now, where, want_live=True)
    return results


def _counter(op: tuple[Any, ...], reply: Any, where: str) -> Any:
    """An incr's new value, or the typed error its script reported."""
    if not isinstance(reply, rex.RedisError):
        return int(reply)
    text = str(reply)
    _, key, by, _now, _head, _px, limit = op
    if text.startswith("AIRSTORE_NOT_COUNTER"):
        return InvalidValueError(
            f"cannot incr {key!r} at {where}: it does not hold an integer counter within "
            f"±{limit} ({text.partition(' ')[2]!r})",
            key=key,
        )
    if text.startswith("AIRSTORE_OVERFLOW"):
        return InvalidArgumentError(
            f"incr of {key!r} at {where} by {by} would overflow ±{limit} "
            f"(it holds {text.partition(' ')[2]})",
            key=key,
        )
    return translate(reply, where, "INCR")


def _decoded(key: str, payload: bytes | None, now: float, where: str, *, want_live: bool) -> Any:
    """A get's value, or a delete's "was it live", or the CorruptDataError to raise."""
    if payload is None:
        return False if want_live else None
    try:
        live, value = decode_value(payload, now, f"{where} {key!r}")
    except CorruptDataError as exc:  # a string RedisStore did not write: a delete removed it
        return True if want_live else exc
    return live if want_live else value
