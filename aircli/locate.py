"""One store-location rule for every ``air`` command (``--store``, else the default location).

The rule itself lives in :func:`airstore.resolve_store_location`; this module tells the user on
stderr which location a command chose when it was not given, and, for commands that only read,
where else data was found when the chosen place is empty. A location that cannot be used (a
``--store`` that is not a store URL, an ``AIR_DATA_DIR`` holding a URL) is one line on stderr and
exit status 2, like a usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

from airstore import (
    InvalidArgumentError,
    StoreLocation,
    default_locations,
    parse_store_url,
    resolve_store_location,
)

__all__ = [
    "BAD_LOCATION_EXIT",
    "STORE_HELP",
    "elsewhere_hint",
    "other_metered_locations",
    "store_location",
]

BAD_LOCATION_EXIT = 2
"""The exit status of a command whose store location cannot be used (a usage error)."""

STORE_HELP = (
    "store URL (memory://, file://DIR, sqlite:///PATH, redis://HOST:PORT/DB); default: "
    "$AIR_DATA_DIR, else .air/data here when writable, else ~/.local/share/air/data"
)
"""The help text of every command's ``--store`` option."""


def store_location(prog: str, given: str | None, *, reading: bool) -> StoreLocation:
    """Resolve ``--store`` (or the default) and say on stderr which default was chosen.

    Args:
        prog: the command, for the message (``"air dashboard"``).
        given: the ``--store`` value, or ``None``.
        reading: the command only reads (changes the verb of the message).

    Returns:
        The location.

    Raises:
        SystemExit: with :data:`BAD_LOCATION_EXIT` after saying ``prog: problem`` on stderr,
            when the location cannot be used (``--store`` is not a store URL, or
            ``AIR_DATA_DIR`` holds a URL).
    """
    try:
        location = resolve_store_location(given)
        parse_store_url(location.url)  # a bad --store is said here, before anything starts
    except InvalidArgumentError as exc:
        print(f"{prog}: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(BAD_LOCATION_EXIT) from None
    if location.source != "explicit":
        verb = "reading" if reading else "metering to"
        print(f"{prog}: {verb} {location.describe()}", file=sys.stderr, flush=True)
    return location


def other_metered_locations(location: StoreLocation) -> list[str]:
    """The URLs of the other data directories on this machine that hold metered calls (from
    the per-user locations index, :mod:`airstore.locations_index`), newest first."""
    from airstore.locations_index import known_locations

    here = None if location.path is None else location.path.resolve()
    if here is None and location.url.startswith("file://"):
        here = Path(location.url.removeprefix("file://")).resolve()
    return [
        f"file://{path}"
        for path in known_locations()
        if path != here and any(path.glob("meter.calls.log*"))
    ]


def elsewhere_hint(location: StoreLocation) -> str | None:
    """For an empty default location: the other default locations that hold data, as a hint.

    Returns:
        ``"data found in ...: pass --store file://... or set AIR_DATA_DIR"``, or ``None``.
    """
    if location.source == "explicit":
        return None
    others = [
        other.url for other in default_locations() if other.path != location.path and other.exists()
    ]
    others += [url for url in other_metered_locations(location) if url not in others]
    if not others:
        return None
    return f"data found in {' and '.join(others)}: pass --store URL, or set AIR_DATA_DIR"
