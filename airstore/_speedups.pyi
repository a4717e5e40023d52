"""Types of the optional C extension ``airstore/_speedups.c``."""

from collections.abc import Callable
from typing import Any

BUF_SIZE: int
MAX_DEPTH: int

def file_put(
    key: object,
    value: object,
    items: dict[str, Any],
    entries: dict[str, bytes],
    expires: dict[str, float],
    pending: bytearray,
    max_key: int,
    /,
) -> bool: ...
def bind_put(
    python_put: Callable[[Any, Any, Any, float | None], None], max_key: int, /
) -> Callable[[Any, Any, Any, float | None], None]: ...
def mem_put(key: object, value: object, items: dict[str, Any], max_key: int, /) -> bool: ...
def record(key: object, value: object, /) -> bytes | None: ...
