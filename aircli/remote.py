"""One rule for every ``air`` command that binds an HTTP port (serve, dashboard, gateway).

A loopback address (``127.0.0.1``, ``::1``, ``localhost``) is always fine. Any other address
exposes the service beyond this machine, so it needs both ``--allow-remote`` (you meant it) and
``--token`` (callers must prove who they are); otherwise the command exits with status 2 and one
line naming both flags.
"""

from __future__ import annotations

import argparse
import sys

from airhttp import is_loopback

__all__ = [
    "MAX_PORT",
    "REMOTE_BIND_EXIT",
    "port_number",
    "refuse_remote_bind",
    "remote_bind_problem",
]

MAX_PORT = 65535
"""The highest TCP port; ``--port 0`` asks for any free one."""

REMOTE_BIND_EXIT = 2
"""The exit status of a command refused a non-loopback bind."""


def port_number(text: str) -> int:
    """The ``--port`` argument type of every command that binds: an integer 0-65535.

    Args:
        text: the value as typed.

    Returns:
        The port (0: any free port).

    Raises:
        argparse.ArgumentTypeError: not an integer in 0-65535 (argparse then prints the
            subcommand's usage and exits with status 2).
    """
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-{MAX_PORT}; 0: any free port)")
    return port


def remote_bind_problem(host: str, *, allow_remote: bool, token: str | None) -> str | None:
    """What is missing to bind ``host``, as one line; ``None`` when the bind is allowed.

    Args:
        host: the ``--host`` value.
        allow_remote: ``--allow-remote`` was given.
        token: the ``--token`` value (or its environment default).

    Returns:
        ``None``, or a sentence naming both flags.
    """
    if is_loopback(host) or (allow_remote and token):
        return None
    missing = [
        flag
        for flag, present in (("--allow-remote", allow_remote), ("--token", bool(token)))
        if not present
    ]
    return (
        f"binding {host} exposes this beyond the machine: it needs both --allow-remote and "
        f"--token (missing: {' and '.join(missing)})"
    )


def refuse_remote_bind(
    prog: str, host: str, *, allow_remote: bool, token: str | None
) -> int | None:
    """Print the problem of :func:`remote_bind_problem` as ``prog: ...`` on stderr.

    Returns:
        :data:`REMOTE_BIND_EXIT` when the bind is refused, else ``None``.
    """
    problem = remote_bind_problem(host, allow_remote=allow_remote, token=token)
    if problem is None:
        return None
    print(f"{prog}: {problem}", file=sys.stderr)
    return REMOTE_BIND_EXIT
