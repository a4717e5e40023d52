"""``air demo``: run the metered demo server, drive it with sample traffic, show the dashboard.

Into an empty store it first writes a week of back-dated history through the meter
(``--history 7d``, denser in the last 24 hours, with an incident, a slow tool and a budget
warning; ``--history 0``: none), so every chart has shape at 15 minutes, 24 hours and 7 days.
Then it starts the demo server that ships with air (``aircli/demo_server.py``) over stdio
(``air serve``) with its store and meter pointed at ``--store`` (else the default location),
drives it with the official ``mcp`` client (a realistic mix over all seven layers, some errors,
some slow calls), then serves the dashboard over the same store and keeps a gentle trickle of
live traffic going until Ctrl+C. Stopping closes the client, which lets the server flush every
recorded call before it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
from pathlib import Path
from typing import Any

from aircli._platform import cancel_on_terminate
from aircli._traffic import Progress, drive, plan_calls
from aircli.dashboard import DEFAULT_HOST, DEFAULT_PORT, open_dashboard
from aircli.locate import STORE_HELP, store_location
from aircli.remote import REMOTE_BIND_EXIT, port_number
from aircli.settings import DEMO_LATENCY_ENV
from airhttp import is_loopback
from airmeter.slo_config import DEFAULT_SLO_FILE
from airstore import StoreLocation, default_locations, parse_store_url
from airstore.settings import DATA_DIR_ENV

__all__ = ["DEMO_SERVER", "register"]

DEMO_SERVER = Path(__file__).resolve().with_name("demo_server.py")
"""The server the demo runs (it ships in the package)."""

SERVER_LOG = "demo-server.log"
"""The demo server's stderr, kept beside the data directory."""
MAX_CALLS = 1_000_000
"""Most calls one ``air demo`` plans (the plan is held in memory; about 3 h of traffic)."""

DEFAULT_CALLS = 3000
DEFAULT_CONCURRENCY = 32
DEFAULT_LIVE_RATE = 2.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` subcommand."""
    parser = sub.add_parser(
        "demo",
        help="run the demo server with sample traffic, then open the dashboard",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--calls", type=int, default=DEFAULT_CALLS, help=f"calls to make (default {DEFAULT_CALLS})"
    )
    parser.add_argument("--store", default=None, help=STORE_HELP)
    parser.add_argument(
        "--no-dashboard", action="store_true", help="stop after the traffic; serve no dashboard"
    )
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"dashboard address (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"dashboard port (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"calls in flight (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--live-rate",
        type=float,
        default=DEFAULT_LIVE_RATE,
        help="calls per second while the dashboard is up (default 2; 0: none)",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed of the traffic")
    parser.add_argument(
        "--history",
        default="7d",
        metavar="DURATION",
        help="back-dated history written first into an empty store (default 7d; 0: none)",
    )
    parser.add_argument(
        "--history-calls",
        type=int,
        default=None,
        metavar="N",
        help="calls in that history (default about 150,000 a week)",
    )
    parser.set_defaults(func=_run)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    from aircli._demo_history import HistoryError, parse_history

    if not 0 <= args.calls <= MAX_CALLS or args.concurrency < 1 or args.live_rate < 0:
        _say(f"air demo: --calls must be 0-{MAX_CALLS:,}, --concurrency >= 1, --live-rate >= 0")
        return 2
    if args.history_calls is not None and args.history_calls < 1:
        _say("air demo: --history-calls must be >= 1")
        return 2
    if not args.no_dashboard and not is_loopback(args.host):  # before any traffic is made
        _say(
            f"air demo: the demo's dashboard binds loopback only, not {args.host}; for one "
            "others can reach, run `air dashboard --host HOST --allow-remote --token TOKEN` "
            "beside it"
        )
        return REMOTE_BIND_EXIT
    try:
        args.history_days = parse_history(args.history)
    except HistoryError as exc:
        _say(f"air demo: {exc}")
        return 2
    location = store_location("air demo", args.store, reading=False)
    args.store = location.url
    args.log_path = _log_path(location)
    try:
        return asyncio.run(_demo(args))
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl+C, or SIGTERM (see _demo)
        _say("air demo: stopped; every recorded call was flushed to the store")
        return 0


def _log_path(location: StoreLocation) -> Path:
    """Where the demo server's stderr goes: beside a file store's data directory; for a store
    without one (``memory://``, ``sqlite://``, ``redis://``), where ``.air/data`` would be:
    ``.air/`` under the working directory when that is writable, else the per-user
    ``~/.local/share/air``. ``AIR_DATA_DIR`` plays no part then: the store is not there."""
    kind, where = parse_store_url(location.url)
    if kind == "file" and where is not None:
        data_dir: Path | None = Path(where)
    else:
        env = {name: value for name, value in os.environ.items() if name != DATA_DIR_ENV}
        data_dir = default_locations(env=env)[0].path
    assert data_dir is not None  # both defaults are directories
    return data_dir.absolute().parent / SERVER_LOG


def _server_params(store_url: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    env = {DEMO_LATENCY_ENV: "1", "PYTHONUNBUFFERED": "1"}
    args = ["-m", "aircli", "serve", str(DEMO_SERVER), "--transport", "stdio"]
    args += ["--store", store_url]
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=os.getcwd())


async def _demo(args: argparse.Namespace) -> int:
    try:
        from mcp.client import Client
        from mcp.client.stdio import stdio_client
    except ImportError:
        _say("air demo: needs the official MCP client: pip install 'mcp>=2.3' (or make install)")
        return 2
    if not DEMO_SERVER.is_file():  # a broken installation
        _say(f"air demo: the demo server is missing ({DEMO_SERVER}); reinstall air-mcp")
        return 2
    # SIGTERM and Ctrl+Break stop the demo like Ctrl+C: cancel, so the client closes and the
    # server flushes (Ctrl+C reaches it too: it is in the same console or process group).
    main_task = asyncio.current_task()
    if main_task is not None:
        cancel_on_terminate(main_task)
    await _history(args)
    _say(f"air demo: starting {DEMO_SERVER.name} (metering to {args.store})")
    log_path: Path = args.log_path
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = log_path.open("a", encoding="utf-8")
    except OSError as exc:  # e.g. a --store under a file, or a read-only place
        _say(f"air demo: cannot write the demo server's log {log_path}: {exc.strerror or exc}")
        return 1
    _say(f"air demo: the server's log goes to {log_path}")
    dashboards: list[Any] = []
    try:
        with errlog:
            start = errlog.tell()
            transport = stdio_client(_server_params(args.store), errlog)
            try:
                return await _session(Client, transport, args, dashboards)
            except Exception as exc:  # the server died or never started: say why, no traceback
                _say(f"air demo: the demo server stopped unexpectedly ({_describe(exc)})")
                _say_log_tail(log_path, start)
                return 1
    finally:
        # The client has closed by now, so the server flushed every call before it exited.
        for dashboard in dashboards:
            dashboard.stop()


async def _history(args: argparse.Namespace) -> None:
    """Write the back-dated history (a store that cannot take it is said, not fatal: the
    server then explains what is wrong with it)."""
    from aircli._demo_history import write_history
    from airstore import AirstoreError

    seed = 7 if args.seed is None else args.seed
    try:
        await write_history(args.store, days=args.history_days, calls=args.history_calls,
                            seed=seed)  # fmt: skip
    except AirstoreError as exc:
        _say(f"air demo: no history written ({type(exc).__name__}: {exc})")


async def _session(
    client_cls: Any, transport: Any, args: argparse.Namespace, dashboards: list[Any]
) -> int:
    """Drive the server, then serve the dashboard (appended to ``dashboards``) until cancelled."""
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    async with client_cls(transport, read_timeout_seconds=60) as client:
        tools = (await client.list_tools()).tools
        layers = "all seven layers" if len(tools) >= 7 else f"{len(tools)} tools"
        _say(f"air demo: {args.calls:,} calls over {len(tools)} tools ({layers})")
        stats = await drive(
            client.call_tool,
            plan_calls(tools, args.calls, seed=seed),
            concurrency=args.concurrency,
            progress=Progress(args.calls),
        )
        _say(
            f"air demo: {stats.calls:,} calls in {stats.seconds:.1f}s, "
            f"{stats.errors:,} failed on purpose or by chance"
        )
        from aircli._demo_history import demo_objectives

        # beside the data, dashboard or not: `air meter slo` finds them as the dashboard does
        demo_objectives(args.log_path.parent)
        if args.no_dashboard:
            return 0
        dashboard = await asyncio.to_thread(_start_dashboard, args)
        if dashboard is None:
            return 2
        dashboards.append(dashboard)
        print(f"air demo: dashboard at {dashboard.url}  (Ctrl+C to stop)", flush=True)
        if args.live_rate > 0:
            _say(f"air demo: live traffic continues at ~{args.live_rate:g} calls/s")
            await _trickle(client, tools, args.live_rate, seed)
        await asyncio.Event().wait()
    return 0


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _say_log_tail(path: Path, start: int, lines: int = 6) -> None:
    try:
        with path.open("rb") as log:
            log.seek(start)
            tail = log.read().decode("utf-8", "replace").strip().splitlines()[-lines:]
    except OSError:
        tail = []
    if tail:
        _say(f"air demo: last lines of {path}:")
        for line in tail:
            _say(f"  {line}")


def _start_dashboard(args: argparse.Namespace) -> Any:
    """Open the store read-only and serve the dashboard; a busy port falls back to a free one.

    Its SLO panel reads ``.air/slo.yml`` when there is one, else the demo's own objectives
    (written beside the server's log: the incident on ``fetch_url`` shows in them)."""
    from aircli._demo_history import demo_objectives
    from dashboard.ranges import AUTO

    slo_config = None if Path(DEFAULT_SLO_FILE).is_file() else demo_objectives(args.log_path.parent)
    ports = [args.port, 0] if args.port else [0]
    server = open_dashboard(args.store, prog="air demo: dashboard", host=args.host, ports=ports,
                            initial_range=AUTO, slo_config=slo_config)  # fmt: skip
    return None if server is None else server.start()


async def _trickle(client: Any, tools: Any, rate: float, seed: int) -> None:
    """Keep calling at about ``rate`` calls per second until cancelled or the server is gone."""
    batch = 0
    broken = 0
    while broken < 10:
        batch += 1
        for item in plan_calls(tools, max(1, round(rate * 5)), seed=seed + batch):
            try:
                await client.call_tool(item.tool, item.arguments)
                broken = 0
            except asyncio.CancelledError:
                raise
            except Exception:  # a protocol error answer, or the connection is gone
                broken += 1
            await asyncio.sleep(1 / rate)
    _say("air demo: the demo server stopped answering; live traffic stopped")
