"""The default store location: explicit URL, AIR_DATA_DIR, .air/data here, the per-user dir."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airstore import (
    InvalidArgumentError,
    default_locations,
    parse_store_url,
    resolve_store_location,
)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), **extra}


def test_an_explicit_url_wins_over_everything(tmp_path: Path) -> None:
    env = _env(tmp_path, AIR_DATA_DIR=str(tmp_path / "env"))
    location = resolve_store_location("memory://", env=env, cwd=tmp_path)
    assert (location.url, location.source, location.path) == ("memory://", "explicit", None)
    assert location.describe() == "memory:// (as given)"


def test_air_data_dir_comes_next_and_is_made_absolute(tmp_path: Path) -> None:
    env = _env(tmp_path, AIR_DATA_DIR="relative/data")
    location = resolve_store_location(env=env, cwd=tmp_path)
    assert location.source == "environment"
    assert location.path == tmp_path / "relative" / "data"
    assert location.url == f"file://{tmp_path}/relative/data"
    assert parse_store_url(location.url) == ("file", str(tmp_path / "relative" / "data"))
    home = resolve_store_location(env=_env(tmp_path, AIR_DATA_DIR="~/air"), cwd=tmp_path)
    assert home.path == Path(os.path.expanduser("~/air"))


def test_a_writable_working_directory_gets_dot_air_data(tmp_path: Path) -> None:
    location = resolve_store_location(env=_env(tmp_path), cwd=tmp_path)
    assert location.source == "working directory"
    assert location.path == tmp_path / ".air" / "data"
    assert location.describe().endswith("(.air/data under the working directory)")
    assert not location.exists()


def test_the_root_directory_falls_back_to_the_per_user_directory(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    location = resolve_store_location(env=_env(tmp_path, XDG_DATA_HOME=str(xdg)), cwd="/")
    assert location.source == "user data directory"
    assert location.path == xdg / "air" / "data"


def test_without_xdg_data_home_the_user_directory_is_under_home(tmp_path: Path) -> None:
    for xdg in ("", "relative/xdg"):  # unset, or relative (ignored by the XDG spec)
        env = _env(tmp_path, XDG_DATA_HOME=xdg)
        location = resolve_store_location(env=env, cwd="/")
        assert location.path == tmp_path / "home" / ".local" / "share" / "air" / "data"


def test_a_working_directory_where_dot_air_is_a_file_is_not_used(tmp_path: Path) -> None:
    (tmp_path / ".air").write_text("not a directory")
    location = resolve_store_location(env=_env(tmp_path), cwd=tmp_path)
    assert location.source == "user data directory"


def test_an_existing_writable_data_dir_is_used(tmp_path: Path) -> None:
    (tmp_path / ".air" / "data").mkdir(parents=True)
    location = resolve_store_location(env=_env(tmp_path), cwd=tmp_path)
    assert location.source == "working directory"
    assert location.exists()


def test_default_locations_list_every_candidate_once_chosen_first(tmp_path: Path) -> None:
    env = _env(tmp_path, AIR_DATA_DIR=str(tmp_path / ".air" / "data"))
    found = default_locations(env=env, cwd=tmp_path)
    assert [loc.source for loc in found] == ["environment", "user data directory"]
    assert [loc.source for loc in default_locations(env=_env(tmp_path), cwd="/")] == [
        "user data directory"
    ]


@pytest.mark.parametrize(
    "value", ["file:///tmp/x/u", "sqlite:///tmp/x/a.db", "memory://", "redis://localhost:6379/0"]
)
def test_a_url_in_air_data_dir_is_refused_naming_the_variable(value: str, tmp_path: Path) -> None:
    env = _env(tmp_path, AIR_DATA_DIR=value)
    for resolve in (resolve_store_location, default_locations):
        with pytest.raises(InvalidArgumentError, match=f"AIR_DATA_DIR={value!r} is a URL"):
            resolve(env=env, cwd=tmp_path)
    explicit = resolve_store_location("memory://", env=env, cwd=tmp_path)  # not read then
    assert explicit.url == "memory://"


def test_an_empty_url_is_refused(tmp_path: Path) -> None:
    for bad in ("", "  "):
        with pytest.raises(InvalidArgumentError):
            resolve_store_location(bad, env=_env(tmp_path), cwd=tmp_path)


@given(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))))
def test_any_air_data_dir_resolves_to_an_absolute_file_url_that_parses_back(text: str) -> None:
    here = Path("/tmp/air-location-test")
    env = {"AIR_DATA_DIR": text, "HOME": "/home/u"}
    if re.match(r"\s*[A-Za-z][A-Za-z0-9+.-]*://", text):  # a URL: refused, never a directory
        with pytest.raises(InvalidArgumentError):
            resolve_store_location(env=env, cwd=here)
        return
    location = resolve_store_location(env=env, cwd=here)
    assert location.path is not None
    assert location.path.is_absolute()
    assert parse_store_url(location.url) == ("file", str(location.path))


_PLATFORM = """
import sys
import airstore
from airstore import resolve_store_location
assert "platformdirs" not in sys.modules  # start-up does not pay for it
sys.platform = sys.argv[1]  # the shape of another platform, after every import but platformdirs
sys.modules["ctypes"] = None  # Windows' folder lookup then falls back to its environment
sys.modules["winreg"] = None
location = resolve_store_location(cwd="/")
print(location.source)
print(location.path)
"""


def _user_dir_on(platform: str, env: dict[str, str], tmp_path: Path) -> Path:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "XDG_"))}
    result = subprocess.run(
        [sys.executable, "-c", _PLATFORM, platform],
        env={**full, **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    source, path = result.stdout.splitlines()
    assert source == "user data directory"
    return Path(path)


def test_the_per_user_directory_follows_each_platforms_convention(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _user_dir_on("linux", {"HOME": str(home)}, tmp_path) == home / ".local/share/air/data"
    xdg = tmp_path / "xdg"
    linux = _user_dir_on("linux", {"HOME": str(home), "XDG_DATA_HOME": str(xdg)}, tmp_path)
    assert linux == xdg / "air" / "data"
    mac = _user_dir_on("darwin", {"HOME": str(home)}, tmp_path)
    assert mac == home / "Library" / "Application Support" / "air" / "data"
    local = r"C:\Users\ada\AppData\Local"
    windows = _user_dir_on("win32", {"HOME": str(home), "LOCALAPPDATA": local}, tmp_path)
    assert windows == Path(local, "air", "data")  # joined by this OS's separator


def test_a_default_location_that_is_not_the_per_user_one_does_not_import_platformdirs(
    tmp_path: Path,
) -> None:
    code = (
        "import sys; from airstore import resolve_store_location; "
        "print(resolve_store_location().source); print('platformdirs' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIR_")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert out.stdout.split() == ["working", "directory", "False"], out.stderr
