"""Media types: ``Content-Type`` parsed as a media type and ``Accept`` negotiation (RFC 9110
§8.3.1 and §12.5.1), never substring matching."""

from __future__ import annotations

import functools

__all__ = ["accepts", "media_type"]


_CACHED_LEN = 256
"""Header values up to this long are cached (clients repeat the same few); longer ones are
parsed each time, so a client cannot park megabytes of its own strings in the caches."""


def media_type(header: str | None) -> str:
    """The ``type/subtype`` of a ``Content-Type`` value, lower-case, without parameters.

    ``"Application/JSON; charset=utf-8"`` → ``"application/json"``; ``None``, an empty value
    or one that is not ``type/subtype`` → ``""``.
    """
    if header is not None and len(header) > _CACHED_LEN:
        return _media_type.__wrapped__(header)
    return _media_type(header)


def accepts(header: str | None, media: str) -> bool:
    """Whether an ``Accept`` header admits ``media`` (``"type/subtype"``, lower-case).

    No header admits everything; ``type/*`` and ``*/*`` ranges count; a range with ``q=0``
    refuses.
    """
    if header is not None and len(header) > _CACHED_LEN:
        return _accepts.__wrapped__(header, media)
    return _accepts(header, media)


@functools.lru_cache(maxsize=256)
def _media_type(header: str | None) -> str:
    """The cached parse behind :func:`media_type`."""
    if not header:
        return ""
    essence = header.partition(";")[0].strip().lower()
    kind, slash, sub = essence.partition("/")
    if not slash or not kind or not sub or any(c in essence for c in " \t,"):
        return ""
    return essence


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return 0.0
            return q if 0.0 <= q <= 1.0 else 0.0
    return 1.0


@functools.lru_cache(maxsize=256)
def _accepts(header: str | None, media: str) -> bool:
    """The cached negotiation behind :func:`accepts`."""
    if header is None or not header.strip():
        return True
    kind = media.partition("/")[0]
    best: float | None = None
    best_rank = -1
    for item in header.split(","):
        essence, *params = item.split(";")
        rng = essence.strip().lower()
        if rng == media:
            rank = 2
        elif rng == f"{kind}/*":
            rank = 1
        elif rng == "*/*":
            rank = 0
        else:
            continue
        if rank > best_rank:  # the most specific range decides (RFC 9110 §12.5.1)
            best_rank, best = rank, _quality(params)
    return best is not None and best > 0.0
