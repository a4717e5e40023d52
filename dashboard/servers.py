"""The server filter's entries: server names, and each instance of a server that has several.

A whole server's entry carries its name; an instance's entry carries ``["name","instance"]``
(JSON), so any name and instance id round-trip through the dropdown.
"""

from __future__ import annotations

import json

from dashboard.types import ServerChoice

__all__ = ["parse_server_choice", "server_choices"]


def _instance_value(server: str, instance: str) -> str:
    return json.dumps([server, instance], separators=(",", ":"))


def server_choices(instances: dict[str, set[str]]) -> tuple[ServerChoice, ...]:
    """The server filter's entries: each server name, then each of its instances when it has
    more than one (so several processes of one server can be told apart).

    Args:
        instances: server name -> the instance ids seen for it (``""``: records without one).

    Returns:
        Entries sorted by server name, a server's instances right after it.
    """
    out: list[ServerChoice] = []
    for server in sorted(s for s in instances if s):
        ids = sorted(i for i in instances[server] if i)
        many = len(ids) > 1
        label = f"{server} (all {len(ids)} instances)" if many else server
        out.append(ServerChoice(value=server, label=label, server=server))
        if many:
            out.extend(
                ServerChoice(
                    value=_instance_value(server, i),
                    label=f"{server} ({i})",
                    server=server,
                    instance=i,
                )
                for i in ids
            )
    return tuple(out)


def parse_server_choice(value: str | None) -> tuple[str | None, str | None]:
    """The ``(server, instance)`` filter a server-filter value stands for.

    Args:
        value: a :class:`ServerChoice` value, or empty/None for all servers.

    Returns:
        ``(None, None)`` for all servers, ``(name, None)`` for one server's instances,
        ``(name, instance_id)`` for one instance.
    """
    if not value:
        return None, None
    if value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if (
            isinstance(parsed, list)
            and len(parsed) == 2
            and all(isinstance(part, str) for part in parsed)
        ):
            return parsed[0], parsed[1]
    return value, None
