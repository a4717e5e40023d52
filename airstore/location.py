"""Where air keeps its data when nobody says: one rule for every command and for servers.

In order: an explicit store URL; else the directory in ``AIR_DATA_DIR``; else ``.air/data`` under
the working directory, when that is usable (writable, and not ``/``); else ``data`` in the
per-user air directory, by the platform's convention (``platformdirs``): on Linux and other
Unix ``$XDG_DATA_HOME/air/data`` (``~/.local/share/air/data``), on macOS
``~/Library/Application Support/air/data``, on Windows ``%LOCALAPPDATA%\\air\\data``.
Desktop MCP clients often start servers in ``/`` or in a read-only directory, hence the last
step. ``memory://`` is used only when asked for. ``AIR_DATA_DIR`` names a directory: a store
URL there (``file://…``, ``sqlite://…``) is refused, since it would otherwise become a
directory named after the URL.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from airstore.errors import InvalidArgumentError
from airstore.settings import DATA_DIR_ENV, store_settings

__all__ = [
    "WORKING_DIR_DATA",
    "LocationSource",
    "StoreLocation",
    "default_data_dir",
    "default_locations",
    "resolve_store_location",
]

WORKING_DIR_DATA = Path(".air") / "data"
"""The data directory under the working directory."""

USER_DATA = Path("air") / "data"
"""The data directory under the per-user data directory (``$XDG_DATA_HOME`` on Linux)."""

_URL_SHAPE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
"""A value that starts like a URL (``scheme://``): never meant as a directory name."""

LocationSource = Literal["explicit", "environment", "working directory", "user data directory"]

_WHY: dict[LocationSource, str] = {
    "explicit": "as given",
    "environment": f"from {DATA_DIR_ENV}",
    "working directory": ".air/data under the working directory",
    "user data directory": "the per-user data directory",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreLocation:
    """A resolved store location.

    Attributes:
        url: the store URL to open (``file:///abs/path`` for the defaults).
        source: which rule chose it.
        path: the absolute data directory when the store is a default file store, else ``None``.
    """

    url: str
    source: LocationSource
    path: Path | None = None

    def describe(self) -> str:
        """One line for stderr: ``file:///home/ada/.air/data (.air/data under the working
        directory)``."""
        return f"{self.url} ({_WHY[self.source]})"

    def exists(self) -> bool:
        """Whether a default file location's directory exists (always ``True`` otherwise)."""
        return self.path is None or self.path.is_dir()


def _file_location(path: Path, source: LocationSource) -> StoreLocation:
    return StoreLocation(url=f"file://{path}", source=source, path=path)


def _usable(cwd: Path) -> bool:
    """Whether ``cwd/.air/data`` exists or can be created and written: the deepest existing
    of ``.air/data``, ``.air``, the working directory is a writable directory, and the working
    directory is not the file system root."""
    if cwd == Path(cwd.anchor):
        return False
    for candidate in (cwd / WORKING_DIR_DATA, cwd / WORKING_DIR_DATA.parent, cwd):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def _data_dir_from_env(value: str) -> Path:
    """The directory ``AIR_DATA_DIR`` names (``~`` expanded, still relative to the caller).

    Raises:
        InvalidArgumentError: the value is a URL.
    """
    if _URL_SHAPE.match(value):
        raise InvalidArgumentError(
            f"{DATA_DIR_ENV}={value!r} is a URL, but {DATA_DIR_ENV} takes a directory "
            "(give a store URL with --store, or storage= in code)"
        )
    return Path(os.path.expanduser(value))


def _user_dir(xdg_data_home: str | None, home: str | None) -> Path:
    """``data`` in the per-user air directory. On Linux (any platform but macOS and Windows)
    it is the XDG one ``platformdirs`` gives too, with ``XDG_DATA_HOME`` and ``HOME`` read from
    air's settings (a relative ``XDG_DATA_HOME`` is ignored, as the XDG spec says)."""
    import platformdirs  # ~60 ms: paid only when the per-user fallback is resolved
    from platformdirs.macos import MacOS
    from platformdirs.windows import Windows

    dirs = platformdirs.PlatformDirs
    if issubclass(dirs, (MacOS, Windows)):
        return Path(dirs("air", appauthor=False, roaming=False).user_data_dir) / USER_DATA.name
    base = Path(xdg_data_home) if xdg_data_home else None
    if base is None or not base.is_absolute():  # the XDG spec ignores a relative value
        base = Path(home or os.path.expanduser("~")) / ".local" / "share"
    return base / USER_DATA


def default_locations(
    *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> list[StoreLocation]:
    """Every default candidate that applies, the chosen one first.

    ``AIR_DATA_DIR`` when set, then ``.air/data`` under ``cwd`` when usable, then the per-user
    directory. Commands that only read use the rest for hints ("data found elsewhere").

    Args:
        env: the environment; ``os.environ`` by default.
        cwd: the working directory; the process's by default.

    Returns:
        One to three locations, without duplicates.

    Raises:
        InvalidArgumentError: ``AIR_DATA_DIR`` holds a URL (``file:///…``, ``sqlite:///…``,
            ``memory://``) instead of a directory.
    """
    return _candidates(env, cwd, first_only=False)


def _candidates(
    env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None, *, first_only: bool
) -> list[StoreLocation]:
    settings = store_settings(env)
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    found: list[StoreLocation] = []
    if settings.data_dir:
        chosen = _data_dir_from_env(settings.data_dir)
        found.append(_file_location(Path(os.path.abspath(here / chosen)), "environment"))
    if _usable(here):
        found.append(_file_location(here / WORKING_DIR_DATA, "working directory"))
    if not (first_only and found):
        user = _user_dir(settings.xdg_data_home, settings.home)
        found.append(_file_location(user, "user data directory"))
    unique: list[StoreLocation] = []
    for location in found:
        if all(location.path != seen.path for seen in unique):
            unique.append(location)
    return unique


def resolve_store_location(
    url: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> StoreLocation:
    """The store to use: ``url`` when given, else the first of :func:`default_locations`.

    Args:
        url: an explicit store URL (``--store``, ``storage=``); used as is.
        env: the environment; ``os.environ`` by default.
        cwd: the working directory; the process's by default.

    Returns:
        The location; its :meth:`~StoreLocation.describe` says why it was chosen.

    Raises:
        InvalidArgumentError: ``url`` is given but is not a non-empty string; or ``url`` is not
            given and ``AIR_DATA_DIR`` holds a URL instead of a directory.
    """
    if url is not None:
        if not isinstance(url, str) or not url.strip():
            raise InvalidArgumentError(f"store URL {url!r} must be a non-empty string")
        return StoreLocation(url=url, source="explicit")
    return _candidates(env, cwd, first_only=True)[0]


def default_data_dir() -> str:
    """The data directory of a file store given no path (``FileStore()``,
    ``create_storage()``, ``create_storage(type="file")``): the default location every command
    uses (:func:`resolve_store_location`).

    Raises:
        InvalidArgumentError: ``AIR_DATA_DIR`` holds a URL instead of a directory.
    """
    path = resolve_store_location().path
    assert path is not None  # every default location is a directory
    return str(path)
