"""Filtered log queries on Redis: the stream is scanned server-side by a read-only script.

Only entries whose raw JSON holds every needle (``"field":"value"`` for string and null
filter values) cross the network; the client then checks each candidate exactly.
"""

from __future__ import annotations

from typing import Any

import orjson
from redis import exceptions as rex

from airstore._redis_codec import translate
from airstore._validate import matches
from airstore.errors import CorruptDataError
from airstore.types import Entry, JSONValue

__all__ = ["FILTER_SCRIPT", "SCAN_BUDGET", "scan_filtered"]

SCAN_BUDGET = 20_000
"""Stream entries one script call looks at, at most: bounds how long it blocks the server."""

# A read-only scan of a stream, newest first, that returns only the entries whose body holds
# every needle (plain substring search), so non-matching entries never cross the network.
# KEYS[1]: stream; ARGV: upper bound, lower bound, most entries to scan, most candidates to
# return, then the needles. Returns {cursor, body, body, ...}: the cursor is the id of the last
# entry looked at ('' once the range is exhausted), so the client can continue from "(cursor".
# The scan budget bounds how long one call blocks the server.
FILTER_SCRIPT = """#!lua flags=no-writes
local key = KEYS[1]
local upper, lower = ARGV[1], ARGV[2]
local budget, want = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {''}
local scanned = 0
while true do
  local count = math.min(1000, budget - scanned)
  local rows = redis.call('XREVRANGE', key, upper, lower, 'COUNT', count)
  for i = 1, #rows do
    local id, fields = rows[i][1], rows[i][2]
    local body = nil
    for f = 1, #fields, 2 do
      if fields[f] == 'd' then body = fields[f + 1] end
    end
    local hit = body ~= nil
    if hit then
      for j = 5, #ARGV do
        if not string.find(body, ARGV[j], 1, true) then
          hit = false
          break
        end
      end
    end
    if hit then
      out[#out + 1] = body
    end
    if body == nil then
      out[#out + 1] = '!' .. id  -- not ours: the client reports it as corrupt
    end
    scanned = scanned + 1
    if #out - 1 >= want or scanned >= budget then
      out[1] = id
      return out
    end
  end
  if #rows < count then
    return out
  end
  upper = '(' .. rows[#rows][1]
end
"""


async def scan_filtered(
    client: Any,
    key: str,
    bounds: tuple[str, str],
    window: tuple[int, int],
    flt: dict[str, JSONValue],
    needles: list[bytes],
    where: str,
    ns: str,
) -> list[Entry]:
    """Entries of stream ``key`` newest first within ``bounds`` (XREVRANGE end, start) that
    match ``flt``, after skipping ``offset`` of them.

    Args:
        client: a ``redis.asyncio.Redis``.
        key: the stream.
        bounds: ``(upper, lower)`` stream ids as XREVRANGE takes them.
        window: ``(limit, offset)``.
        flt: the field-equality filter, checked exactly on every candidate.
        needles: byte strings every matching entry's JSON contains.
        where: the server, for messages.
        ns: the namespace, for messages.

    Returns:
        At most ``limit`` entries.

    Raises:
        StorageIOError: Redis failed. CorruptDataError: an entry RedisStore did not write.
    """
    upper, lower = bounds
    limit, offset = window
    out: list[Entry] = []
    skipped = 0
    try:
        while True:
            want = offset - skipped + limit - len(out)
            reply = await client.execute_command(
                "EVAL", FILTER_SCRIPT, 1, key, upper, lower, SCAN_BUDGET, want, *needles
            )
            for raw in reply[1:]:
                if raw[:1] == b"!":
                    raise CorruptDataError(
                        f"stream {key!r} at {where} holds an entry RedisStore did not write "
                        f"(id {raw[1:].decode()})",
                        path=where,
                        namespace=ns,
                    )
                entry = orjson.loads(raw)
                if not matches(entry, flt):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                out.append(entry)
                if len(out) >= limit:
                    return out
            if not reply[0]:
                return out
            upper = "(" + reply[0].decode()
    except rex.RedisError as exc:
        raise translate(exc, where, "filter scan") from exc
    except orjson.JSONDecodeError as exc:
        raise CorruptDataError(
            f"stream {key!r} at {where} holds an entry RedisStore did not write: {exc!r}",
            path=where,
            namespace=ns,
        ) from exc
