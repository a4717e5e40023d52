"""``air dashboard``: serve the local observability dashboard over a store, read-only."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import Any

from aircli._platform import interrupt_on_terminate
from aircli.locate import STORE_HELP, elsewhere_hint, other_metered_locations, store_location
from aircli.remote import port_number, refuse_remote_bind
from aircli.settings import DASHBOARD_TOKEN_ENV, cli_settings

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "open_dashboard", "register", "serve_dashboard"]

# Same as dashboard.server's defaults; repeated so `air --help` does not import Dash.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``dashboard`` subcommand."""
    parser = sub.add_parser(
        "dashboard",
        help="serve the dashboard of recorded tool calls",
        description="Serve the dashboard over a store (read-only). Binds 127.0.0.1 by default.",
    )
    parser.add_argument(
        "--store",
        default=None,
        help=f"{STORE_HELP}. Without it the page also lists every other data location's "
        "servers (registered in the per-user locations.json), each with where its data is",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address (default: {DEFAULT_HOST})")
    parser.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port (default: {DEFAULT_PORT}; 0: any)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow binding a non-loopback address (needs --token)",
    )
    parser.add_argument(
        "--token",
        default=cli_settings().dashboard_token,
        help=f"token every request must carry (with --allow-remote; env {DASHBOARD_TOKEN_ENV})",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="an extra Host name accepted besides localhost (repeatable)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an extra browser Origin accepted besides localhost and the page's own (repeatable)",
    )
    parser.add_argument(
        "--refresh", type=float, default=3.0, help="live refresh interval in seconds (default: 3)"
    )
    parser.add_argument(
        "--slo-config",
        default=None,
        metavar="FILE",
        help="SLO objectives for the SLO panel (default: .air/slo.yml, else the one `air demo` "
        "wrote; as `air meter slo`)",
    )
    parser.set_defaults(func=_run)


def open_dashboard(
    store_url: str,
    *,
    prog: str,
    host: str,
    ports: Sequence[int],
    slo_config: str | None = None,
    slo_objectives: Sequence[Any] | None = None,
    everywhere: bool = False,
    **options: Any,
) -> Any:
    """Open ``store_url`` read-only and bind a :class:`~dashboard.server.DashboardServer` (not
    started) on the first of ``ports`` that works; ``options`` go to it; ``slo_config`` is the
    SLO objectives file (default ``.air/slo.yml``), ``slo_objectives`` airmeter ``Objective``s
    given in code instead; ``everywhere``: list every data location's servers too. A failure
    is told on stderr as
    ``prog: ...`` and gives ``None``."""
    from dashboard.errors import DashboardError, StoreUnavailableError
    from dashboard.reader import SyncReader
    from dashboard.server import DashboardServer

    try:
        reader = SyncReader.open(
            store_url,
            freeze_gc=True,
            slo_config=slo_config,
            objectives=slo_objectives,
            everywhere=everywhere,
        )
    except DashboardError as exc:
        print(f"{prog}: {exc.message}", file=sys.stderr)
        if isinstance(exc, StoreUnavailableError) and exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return None
    for port in ports:
        try:
            return DashboardServer(reader, store_url=store_url, host=host, port=port, **options)
        except DashboardError as exc:
            print(f"{prog}: {exc.message}", file=sys.stderr)
    reader.close()
    return None


def serve_dashboard(
    store_url: str,
    *,
    host: str,
    port: int,
    allow_remote: bool = False,
    token: str | None = None,
    refresh_s: float = 3.0,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    stop: threading.Event | None = None,
    slo_config: str | None = None,
    everywhere: bool = False,
) -> int:
    """Serve until Ctrl+C (or ``stop`` is set); print the URL. Returns the exit code."""
    from dashboard.ranges import AUTO

    server = open_dashboard(
        store_url,
        prog="air dashboard",
        host=host,
        ports=[port],
        allow_remote=allow_remote,
        token=token,
        refresh_ms=max(500, int(refresh_s * 1000)),
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        slo_config=slo_config,
        everywhere=everywhere,
        initial_range=AUTO,  # the smallest range that holds the data
    )
    if server is None:
        return 2
    stop = stop or threading.Event()
    restore = interrupt_on_terminate()  # SIGTERM and Ctrl+Break stop it like Ctrl+C
    try:
        with server:
            try:  # from the first line on: a Ctrl+C right after the URL still stops cleanly
                said = f"air dashboard: serving {store_url} at {server.url}  (Ctrl+C to stop)"
                print(said, flush=True)
                while not stop.wait(0.5):
                    pass
            except KeyboardInterrupt:
                print("\nair dashboard: stopping", file=sys.stderr)
    finally:
        restore()
    return 0


def _run(args: argparse.Namespace) -> int:
    refused = refuse_remote_bind(
        "air dashboard", args.host, allow_remote=args.allow_remote, token=args.token
    )
    if refused is not None:
        return refused
    location = store_location("air dashboard", args.store, reading=True)
    if not location.exists():
        hint = elsewhere_hint(location)
        if hint:
            print(f"air dashboard: nothing recorded in {location.url}; {hint}", file=sys.stderr)
    elif args.store is None:  # one machine, one view: the page lists them too
        for url in other_metered_locations(location):
            print(f"air dashboard: calls are metered in {url} too: its servers are listed on the "
                  f"page (air dashboard --store {url} opens it)", file=sys.stderr)  # fmt: skip
    return serve_dashboard(
        location.url,
        host=args.host,
        port=args.port,
        allow_remote=args.allow_remote,
        token=args.token,
        refresh_s=args.refresh,
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        slo_config=_slo_file(args.slo_config, location.url),
        everywhere=args.store is None,  # one machine, one view; --store narrows to one
    )


def _slo_file(config: str | None, store_url: str) -> str | None:
    """The objectives file by ``air meter slo``'s rule; ``None`` (the panel says how to write
    ``.air/slo.yml``) when there is none."""
    from aircli.meter_slo import find_slo_file
    from airmeter import MeterConfigError

    try:
        return find_slo_file(config, store_url)
    except MeterConfigError:
        return None
