"""``air meter report``: print a metering snapshot of a store as a table, JSON or Prometheus."""

from __future__ import annotations

import argparse
import asyncio
import gc
import re
import sys
import time
from datetime import datetime, timedelta

import orjson

from aircli.locate import STORE_HELP, elsewhere_hint, store_location
from aircli.meter_slo import add_slo_parser
from airmeter import ClientUsage, Snapshot, client_usage, meter_health, snapshot
from airmeter.clients import MAX_CLIENT_READ
from airmeter.context_cost import ContextReport, context_report
from airmeter.errors import AirmeterError
from airmeter.hops import HopSummary, hop_summary, same_store
from airmeter.tokens import ESTIMATE
from airstore import (
    AirstoreError,
    ReadOnlyUnsupportedError,
    Store,
    create_storage,
    store_exists,
)
from airstore.locations_index import known_locations

__all__ = [
    "format_clients",
    "format_elsewhere",
    "format_hops",
    "format_table",
    "parse_since",
    "register",
]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)


def parse_since(text: str) -> timedelta | datetime | None:
    """``"15m"``, ``"1h"``, ``"7d"`` → how long ago; an ISO date/time; ``"all"`` → ``None``.

    A time without a zone is local time (as the report reads it).

    Raises:
        argparse.ArgumentTypeError: anything else, or a time in the future (a window that
            starts after now holds no call: most likely a mistyped year).
    """
    if text.strip().lower() in ("all", ""):
        return None
    match = _DURATION.match(text)
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
        if seconds > time.time():  # back before 1970 (no datetime shows it): every call
            return None
        return timedelta(seconds=seconds)
    try:
        since = datetime.fromisoformat(text)
        start = since.timestamp()
    except (ValueError, OverflowError, OSError):
        raise argparse.ArgumentTypeError(
            f"--since {text!r}: use a duration like 15m, 1h, 7d, an ISO time, or 'all'"
        ) from None
    if start > time.time():
        raise argparse.ArgumentTypeError(
            f"--since {text!r} is in the future, so the window holds no call; "
            "give a past time, a duration like 1h, or 'all'"
        )
    return since


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``meter`` subcommand (``air meter report``, ``air meter slo``)."""
    parser = sub.add_parser("meter", help="metering reports")
    actions = parser.add_subparsers(dest="meter_command", metavar="ACTION", required=True)
    report = actions.add_parser("report", help="print calls, errors, latency, layers and tools")
    report.add_argument(
        "--store",
        default=None,
        help=f"{STORE_HELP}; opened read-only. Without it the report also lists the other data "
        "locations in use on this machine (registered in the per-user locations.json), each "
        "server labelled with where its data is",
    )
    report.add_argument(
        "--since",
        type=parse_since,
        default=timedelta(hours=1),
        help="window start: 15m, 1h, 24h, 7d, an ISO time, or all (default 1h)",
    )
    report.add_argument("--tool", help="only this tool")
    report.add_argument("--layer", help="only this layer (L1-L7)")
    report.add_argument("--server", help="only this server name")
    report.add_argument("--instance", help="only this server instance id")
    report.add_argument("--format", choices=("table", "json", "prometheus"), default="table")
    report.add_argument(
        "--by",
        choices=("client",),
        default=None,
        help="client: calls, errors, latency, cost and subjects per OAuth client (from the "
        f"newest {MAX_CLIENT_READ:,} calls of the window in the raw log)",
    )
    report.set_defaults(func=_run)
    add_slo_parser(actions)


def _run(args: argparse.Namespace) -> int:
    if args.by is not None and args.format == "prometheus":
        print("air meter report: --by client prints a table or JSON; for Prometheus, scrape "
              "/metrics (its client label)", file=sys.stderr)  # fmt: skip
        return 2
    # no --store: every location on this machine (the snapshot report only)
    args.everywhere = args.store is None and args.by is None
    chosen = store_location("air meter report", args.store, reading=True)
    args.store = chosen.url
    # One report, then the process ends: the cyclic GC would only walk the millions of rollup
    # objects it holds again and again (1.5 M rows over 30 days: ~11 s of a 21 s report).
    collecting = gc.isenabled()
    gc.disable()
    try:
        text = asyncio.run(_report(args))
    except (AirstoreError, AirmeterError, OSError, _NotFoundError) as exc:
        print(f"air meter report: {exc}", file=sys.stderr)
        hint = elsewhere_hint(chosen) if isinstance(exc, _NotFoundError) else None
        if hint:
            print(f"  hint: {hint}", file=sys.stderr)
        return 1
    finally:
        if collecting:
            gc.enable()
    print(text)
    return 0


class _NotFoundError(Exception):
    pass


async def _open(url: str) -> Store:
    """The store at ``url``, read-only beside its writers (``memory://``: plainly)."""
    if not await store_exists(url):
        raise _NotFoundError(f"{url} does not exist: nothing has been recorded there yet")
    try:
        return await create_storage(url, read_only=True)
    except ReadOnlyUnsupportedError:
        return await create_storage(url)


async def _elsewhere(args: argparse.Namespace) -> list[tuple[str, Snapshot]]:
    """Every other registered data location with calls in the window, and its snapshot."""
    if not args.everywhere:  # set by _run: no --store, the snapshot report
        return []
    here = args.store.removeprefix("file://")
    found: list[tuple[str, Snapshot]] = []
    for path in known_locations():
        url = f"file://{path}"
        if same_store(url, args.store) or str(path) == here:
            continue
        try:
            store = await _open(url)
        except (_NotFoundError, AirstoreError):
            continue
        try:
            snap = await snapshot(store, since=args.since, tool=args.tool, layer=args.layer,
                                  server=args.server, instance=args.instance)  # fmt: skip
        except AirstoreError:
            continue
        finally:
            await store.close()
        if snap.total_calls:
            found.append((url, snap))
    return found


def format_elsewhere(found: list[tuple[str, Snapshot]]) -> str:
    """The other data locations' servers, each labelled with its location."""
    if not found:
        return ""
    lines = ["", "other data locations on this machine (air meter report --store URL for one):"]
    rows = [[row.server or "-", str(row.calls), str(row.errors),
             f"{row.error_rate * 100:.1f}%", _ms(row.p95_ms), url]
            for url, snap in found for row in snap.servers]  # fmt: skip
    lines += _table(["server", "calls", "errors", "err%", "p95 ms", "data"], rows)
    return "\n".join(lines)


async def _by_client(args: argparse.Namespace) -> str:
    store = await _open(args.store)
    try:
        usage = await client_usage(store, since=args.since, tool=args.tool, layer=args.layer,
                                   server=args.server, instance=args.instance)  # fmt: skip
    finally:
        await store.close()
    if args.format == "json":
        return orjson.dumps({**usage.to_dict(), "data": args.store}).decode()
    return format_clients(usage)


def format_clients(usage: ClientUsage) -> str:
    """The per-client table of ``air meter report --by client``."""
    lines = [f"calls      {usage.calls}" + ("  (the newest only: the window holds more)"
                                             if usage.truncated else ""),
             f"clients    {len(usage.clients)}",
             f"subjects   {usage.subjects} distinct"]  # fmt: skip
    if not usage.calls:
        return "\n".join([*lines, "", "No calls recorded in this window."])
    rows = [[c.client, c.auth, str(c.calls), str(c.errors), f"{c.error_rate * 100:.1f}%",
             _ms(c.p50_ms), _ms(c.p95_ms), f"{c.cost:.2f}", str(c.subjects), str(c.tools)]
            for c in usage.clients]  # fmt: skip
    lines.append("")
    lines += _table(["client", "auth", "calls", "errors", "err%", "p50 ms", "p95 ms", "cost",
                     "subjects", "tools"], rows)  # fmt: skip
    return "\n".join(lines)


async def _report(args: argparse.Namespace) -> str:
    if args.by == "client":
        return await _by_client(args)
    elsewhere = await _elsewhere(args)
    store = await _open(args.store)
    try:
        snap = await snapshot(
            store,
            since=args.since,
            tool=args.tool,
            layer=args.layer,
            server=args.server,
            instance=args.instance,
        )
        healths = await meter_health(store) if args.format == "prometheus" else []
        context = await context_report(store, since=args.since, server=args.server)
        hops = await hop_summary(store, since=args.since, server=args.server)
    finally:
        await store.close()
    if args.format == "json":
        data = snap.to_dict()
        data["context"] = context.to_dict()
        data["gateway"] = hops.to_dict()
        data["data"] = args.store
        data["other_locations"] = [
            {"data": url, "total_calls": snap.total_calls,
             "servers": [{"server": r.server, "instance_id": r.instance_id, "calls": r.calls,
                          "errors": r.errors, "p95_ms": r.p95_ms} for r in snap.servers]}
            for url, snap in elsewhere
        ]  # fmt: skip
        return orjson.dumps(data).decode()
    if args.format == "prometheus":
        from airmeter.health import render_health
        from airmeter.prometheus_snapshot import render_snapshot

        return render_snapshot(snap) + render_health(healths)
    return format_table(snap, context) + format_hops(hops) + format_elsewhere(elsewhere)


def format_hops(hops: HopSummary) -> str:
    """The gateway's hops (calls it proxied to upstreams that metered them into this store,
    counted once above) and the latency the gateway added; empty without hops."""
    if not hops.hops:
        return ""
    lines = ["", f"gateway hops {hops.hops} (their calls are counted once above, by the "
                 "upstream that ran them); latency the gateway added:"]  # fmt: skip
    lines += _table(
        ["server", "hops", "added p50 ms", "added p95 ms", "added max ms"],
        [[s.server, str(s.hops), _ms(s.added_p50_ms), _ms(s.added_p95_ms), _ms(s.added_max_ms)]
         for s in hops.servers],
    )  # fmt: skip
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(headers, widths, strict=True))
    )
    out = [line, "  ".join("-" * w for w in widths)]
    for row in rows:
        out.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return out


def format_table(snap: Snapshot, context: ContextReport | None = None) -> str:
    """The human-readable report: headline, processes (server + instance), errors by class
    and type, layers, tools, and the context tokens tools cost."""
    start = datetime.fromtimestamp(snap.since_ms / 1000).strftime("%Y-%m-%d %H:%M")
    end = datetime.fromtimestamp(snap.until_ms / 1000).strftime("%Y-%m-%d %H:%M")
    lines = [
        f"window     {start} .. {end}",
        f"calls      {snap.total_calls}  ({snap.calls_per_min:.1f}/min)",
        f"errors     {snap.error_count}  (success {snap.success_rate * 100:.1f}%)",
        f"latency    p50 {_ms(snap.p50_ms)} ms  p95 {_ms(snap.p95_ms)} ms  "
        f"p99 {_ms(snap.p99_ms)} ms",
        f"cost       {snap.total_cost:.2f}",
    ]
    if snap.total_calls == 0:
        lines.append("")
        lines.append(
            "No calls recorded in this window. Run `air demo`, or add the meter to a "
            "server (define_server(..., meter=True))."
        )
        return "\n".join(lines)
    lines.append("")
    server_rows = [
        [
            row.server or "-",
            row.instance_id or "-",
            str(row.calls),
            str(row.errors),
            f"{row.error_rate * 100:.1f}%",
            _ms(row.p95_ms),
        ]
        for row in snap.servers
    ]  # every process that recorded calls in the window, told apart by its instance id
    lines += _table(["server", "instance", "calls", "errors", "err%", "p95 ms"], server_rows)
    if snap.errors_by_class:
        lines += ["", "errors by class (a tool's error rate counts tool_error, exception, timeout)"]
        lines += [f"  {cls}  {count}" for cls, count in snap.errors_by_class.items()]
    if snap.errors_by_type:
        lines += ["", "errors by type"]
        lines += [f"  {etype}  {count}" for etype, count in snap.errors_by_type.items()]
    lines.append("")
    layer_rows = [
        [
            layer.code,
            row.name,
            str(row.calls),
            f"{row.share * 100:.1f}%",
            f"{row.weighted_cost:g}",
            str(row.errors),
        ]
        for layer, row in snap.layers.items()
        if row.calls
    ]
    lines += _table(["layer", "name", "calls", "share", "weighted", "errors"], layer_rows)
    lines.append("")
    tool_rows = [
        [
            t.tool,
            t.layer.code,
            str(t.calls),
            str(t.errors),
            f"{t.error_rate * 100:.1f}%",
            _ms(t.p50_ms),
            _ms(t.p95_ms),
            _ms(t.p99_ms),
            f"{t.cost:.2f}",
        ]
        for t in snap.tools
    ]
    lines += _table(
        ["tool", "layer", "calls", "errors", "err%", "p50 ms", "p95 ms", "p99 ms", "cost"],
        tool_rows,
    )
    if context is not None and context.tools:
        if context.exact:
            kind = f"exact, {context.tokenizer}"
        else:  # the estimate's own name ("estimate") is not said twice
            others = [n for n in context.tokenizer.split(", ") if n not in (ESTIMATE, "none", "")]
            kind = f"partly estimated, also {', '.join(others)}" if others else "estimated"
        lines += ["", f"context tokens ({kind}): definitions "
                      f"{context.definition_tokens_total} in total"]  # fmt: skip
        lines += _table(
            ["server/tool", "definition", "result p50", "result p95", "results total"],
            [[f"{t.server}/{t.tool}", _n(t.definition_tokens), _n(t.result_tokens_p50),
              _n(t.result_tokens_p95), str(t.result_tokens_total)] for t in context.tools],
        )  # fmt: skip
    return "\n".join(lines)


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
