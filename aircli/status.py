"""``air status --url URL``: a gateway's upstreams (state, latency, in flight, tools; a
replica adopted from another gateway's registration is marked ``(gw ID)``), the gateways live
in the shared registry, and name conflicts, read from its ``GET /status``. A ``--url`` that is
not an ``http://`` or ``https://`` URL with a host is one line and exit status 2."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airhttp.guards import http_url_problem

__all__ = [
    "BAD_URL_EXIT",
    "ERROR_WIDTH",
    "error_text",
    "format_table",
    "register",
    "status_url",
    "url_problem",
]

TIMEOUT_S = 10.0
ERROR_WIDTH = 60
"""Characters of ``last_error`` per line of the table; a longer error wraps."""
BAD_URL_EXIT = 2
"""The exit status of ``air status`` given a ``--url`` it cannot use (a usage error)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``status`` subcommand."""
    parser = sub.add_parser("status", help="show a gateway's upstreams and conflicts")
    parser.add_argument("--url", required=True, help="the gateway's URL (…/mcp or its root)")
    parser.add_argument(
        "--token",
        default=None,
        help="bearer token (default: env AIR_GATEWAY_TOKEN)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(func=_run)


def status_url(url: str) -> str:
    """The ``/status`` URL of a gateway given its ``/mcp`` URL or its root."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/status", "", ""))


def url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as a gateway's URL, as one line; ``None`` when it is fine.

    Args:
        url: the ``--url`` value.

    Returns:
        ``None``, or a sentence naming the value (and the URL probably meant, when the scheme
        is missing: ``127.0.0.1:4000/mcp`` → ``http://127.0.0.1:4000/mcp``).
    """
    problem = http_url_problem(url)
    if problem is None:
        return None
    meant = "://" not in url and any(sep in url for sep in ":/")  # host:port/path, no scheme
    hint = f" (did you mean http://{url}?)" if meant else ""
    return f"--url {url!r} {problem}{hint}"


def _age(seconds: float) -> str:
    """``"42s"``, ``"7m"``, ``"3h"``, ``"2d"``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def error_text(up: dict[str, Any]) -> str:
    """An upstream's ``last_error`` for the table, with its age (``"(3m ago) …"``); empty once
    the replica is healthy and has succeeded since (a stale error)."""
    error = up.get("last_error")
    if not error:
        return ""
    if up.get("state") == "healthy" and up.get("recovered"):
        return ""
    age = up.get("last_error_age_s")
    return str(error) if not isinstance(age, (int, float)) else f"({_age(age)} ago) {error}"


def format_table(status: dict[str, Any]) -> str:
    """The status as a plain-text table (then warnings and conflicts, if any). An error longer
    than :data:`ERROR_WIDTH` wraps onto lines of its own column, never cut."""
    head = ("upstream", "replica", "state", "latency_ms", "in_flight", "tools", "last_error")
    rows: list[tuple[str, ...]] = [head]
    errors: list[list[str]] = [[head[-1]]]
    for up in status.get("upstreams", []):
        latency = up.get("latency_ms")
        by = up.get("registered_by")
        wrapped = textwrap.wrap(error_text(up), ERROR_WIDTH, break_on_hyphens=False) or [""]
        errors.append(wrapped)
        rows.append((
            str(up.get("name")), str(up.get("replica")) + ("" if by is None else f" (gw {by})"),
            str(up.get("state")),
            "-" if latency is None else f"{latency:.2f}", str(up.get("in_flight")),
            str(up.get("tools")), wrapped[0],
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    indent = " " * (sum(widths[:-1]) + 2 * (len(head) - 1))
    lines: list[str] = []
    for row, error in zip(rows, errors, strict=True):
        cells = zip(row, widths, strict=True)
        lines.append("  ".join(cell.ljust(w) for cell, w in cells).rstrip())
        lines.extend(indent + more for more in error[1:])
    registry = status.get("registry")
    if isinstance(registry, dict):
        live = [f"{g.get('id')}{' (this one)' if g.get('self') else ''}"
                for g in registry.get("gateways", [])]  # fmt: skip
        lines.append(f"gateways in the registry: {', '.join(live) or '-'}")
        if registry.get("error"):
            lines.append(f"registry not shared now: {registry['error']}")
        if registry.get("fleet"):
            lines.append(f"fleet servers (registered by other gateways): "
                         f"{', '.join(map(str, registry['fleet']))}")  # fmt: skip
        for d in registry.get("disagreements", []):
            lines.append(
                f"disagreement: gateway {d.get('gateway')} gives {d.get('server')} the prefix "
                f"{d.get('theirs', {}).get('prefix')!r}; {d.get('kept', {}).get('prefix')!r} "
                f"(by {d.get('kept_by')}) is followed"
            )
    for warning in status.get("warnings", []):
        lines.append(f"warning: {warning}")
    for c in status.get("conflicts", []):
        lines.append(
            f"conflict: {c.get('kind')} {c.get('name')!r} kept by {c.get('kept')}, "
            f"left out of {c.get('dropped')} (give {c.get('dropped')} a prefix:)"
        )
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from airgateway.settings import gateway_token

    problem = url_problem(args.url)
    if problem is not None:
        print(f"air status: {problem}", file=sys.stderr)
        return BAD_URL_EXIT
    token = args.token or gateway_token()
    request = urllib.request.Request(status_url(args.url), method="GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            status = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        print(f"air status: {status_url(args.url)} answered HTTP {exc.code}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"air status: cannot read {status_url(args.url)}: {exc}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(status, indent=2))
    else:
        print(format_table(status))
    return 0
