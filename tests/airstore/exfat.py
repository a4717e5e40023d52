"""A real exFAT volume for the tests: case-insensitive and refusing Windows' characters, as
on a USB stick, on Linux through FUSE (Debian's kernel has no vfat or exfat module in CI).

As root, with ``/dev/fuse``: an image is made (``truncate``), formatted (``mkfs.exfat``,
package exfatprogs), attached to a loop device (``losetup -f --show``) and mounted
(``mount.exfat-fuse``, package exfat-fuse; both installed by scripts/sysdeps.sh); it is
unmounted and detached when the session ends. Not root, or no FUSE: the tests skip, saying so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["exfat_volume"]

_SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
_SIZE = 512 << 20


def _tool(name: str) -> str:
    path = shutil.which(name, path=_SBIN)
    if path is None:
        pytest.fail(
            f"{name} is missing: the exFAT tests need exfatprogs and exfat-fuse "
            "(scripts/sysdeps.sh installs them)"
        )
    return path


def _run(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip()


def _wait_mounted(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.ismount(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not become a mount point")
        time.sleep(0.02)


@contextlib.contextmanager
def mounted_exfat(workdir: Path) -> Iterator[Path]:
    """Make, mount and finally remove an exFAT volume; yields its mount point."""
    if getattr(os, "geteuid", lambda: -1)() != 0:
        pytest.skip("the exFAT volume needs root (losetup and mount)")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("the exFAT volume needs FUSE (/dev/fuse is missing)")
    mkfs, mount, losetup = _tool("mkfs.exfat"), _tool("mount.exfat-fuse"), _tool("losetup")
    image, point = workdir / "volume.img", workdir / "mnt"
    point.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(_SIZE)
    _run(mkfs, str(image))
    try:
        device = _run(losetup, "-f", "--show", str(image))
    except RuntimeError as exc:
        pytest.skip(f"no loop device for the exFAT image: {exc}")
    try:
        _run(mount, device, str(point))
        try:
            _wait_mounted(point)
            yield point
        finally:
            umount = shutil.which("umount", path=_SBIN) or "umount"
            done = subprocess.run([umount, str(point)], capture_output=True, timeout=60)
            if done.returncode != 0:  # still busy: detach it now, the kernel ends it later
                subprocess.run([umount, "-l", str(point)], capture_output=True, timeout=60)
    finally:
        subprocess.run([losetup, "-d", device], capture_output=True, timeout=60, check=False)


@pytest.fixture(scope="session")
def exfat_volume(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The mount point of the session's exFAT volume."""
    with mounted_exfat(tmp_path_factory.mktemp("exfat")) as point:
        yield point
