"""Key layout, value framing and error mapping of :class:`airstore.redis_store.RedisStore`.

Layout under a prefix ``P`` (default ``air:``)::

    P kv: ns : key     string   b"<expires_at>|<json>"  (expires_at: store-clock seconds, or empty)
    P log: ns          stream   one field ``d`` = the entry as JSON, id ``<_ts>-<seq>``
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
from redis import exceptions as rex

from airstore.errors import (
    AirstoreError,
    CorruptDataError,
    InvalidArgumentError,
    StorageIOError,
)

__all__ = [
    "check_db_path",
    "decode_value",
    "encode_value_payload",
    "escape_glob",
    "split_params",
    "split_prefix",
    "translate",
]

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def escape_glob(text: str) -> str:
    """Escape ``text`` for a Redis ``MATCH`` pattern (``* ? [ ] \\`` become literal)."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def encode_value_payload(json: bytes, expires_at: float | None) -> bytes:
    """Frame a JSON value with its store-clock expiry (``repr`` round-trips the float)."""
    head = b"" if expires_at is None else repr(expires_at).encode()
    return head + b"|" + json


def decode_value(payload: bytes, now: float, where: str) -> tuple[bool, Any]:
    """Return ``(live, value)`` of a framed payload at store-clock time ``now``.

    Raises:
        CorruptDataError: the payload was not written by RedisStore.
    """
    head, sep, body = payload.partition(b"|")
    try:
        if not sep:
            raise ValueError("no expiry separator")
        if head and float(head) <= now:
            return False, None
        return True, orjson.loads(body)
    except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
        raise CorruptDataError(f"value at {where} is not a RedisStore value: {exc}") from exc


def translate(exc: rex.RedisError, where: str, action: str) -> AirstoreError:
    """Map a redis-py error to a :class:`StorageIOError` with a message that says what failed
    (:class:`CorruptDataError` when a key under the prefix holds another type of value: a key
    RedisStore did not write, e.g. another application's)."""
    if str(exc).startswith("WRONGTYPE"):
        return CorruptDataError(
            f"redis {action} at {where} failed: a key under the prefix holds a value of another "
            f"type, not written by RedisStore (another application's key?): {exc}",
            path=where,
        )
    if isinstance(exc, rex.ReadOnlyError):
        why = "the server is a read-only replica"
    elif isinstance(exc, rex.OutOfMemoryError) or str(exc).startswith("OOM"):
        why = "the server is out of memory (maxmemory reached with noeviction)"
    elif isinstance(exc, rex.BusyLoadingError):
        why = "the server is still loading its dataset"
    elif isinstance(exc, rex.ConnectionError | rex.TimeoutError):
        why = "the server is unreachable"
    else:
        why = "the server refused the command"
    return StorageIOError(f"redis {action} at {where} failed: {why}: {exc}", path=where)


def check_db_path(url: str) -> None:
    """Refuse a ``redis://host/<db>`` whose db is not a number: redis-py ignores such a path
    and connects to db 0, so a typo would read and write another database.

    Raises:
        InvalidArgumentError: naming the URL's path.
    """
    parts = urlsplit(url)
    db = parts.path.strip("/")
    if parts.scheme in ("redis", "rediss") and db and not (db.isascii() and db.isdigit()):
        raise InvalidArgumentError(
            f"bad redis URL: the path {parts.path!r} must be a database number (redis://host:port/0)"
        )


def split_prefix(url: str) -> tuple[str, str | None]:
    """Take a ``prefix`` query parameter out of ``url`` (redis-py would reject it)."""
    url, found = split_params(url, ("prefix",))
    return url, found.get("prefix")


def split_params(url: str, names: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """Take the query parameters ``names`` out of ``url`` (the last of each wins)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    found = {k: v for k, v in query if k in names}
    if not found:
        return url, {}
    rest = urlencode([(k, v) for k, v in query if k not in names])
    return urlunsplit(parts._replace(query=rest)), found
