"""``default_instance_id()``: the id a process's records and rollup documents carry."""

from __future__ import annotations

import os
import socket

from airmeter.settings import instance_id_setting

__all__ = ["default_instance_id"]


def default_instance_id() -> str:
    """This server process's id: ``$AIR_INSTANCE_ID`` when set, else ``host-pid``."""
    configured = instance_id_setting()
    if configured is not None:
        return configured
    return f"{socket.gethostname()}-{os.getpid()}"
