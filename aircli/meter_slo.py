"""``air meter slo``: SLO status per objective and tool, once or watching (with alerts).

``air meter slo [--config FILE] [--store URL] [--format table|json] [--fail-on LEVEL]
[--watch]``: objectives from one rule, the dashboard's too (:func:`find_slo_file`):
``--config`` when given, else ``.air/slo.yml``, else the objectives ``air demo`` wrote
(``demo-slo.yml`` beside the store's data directory, or in ``.air/``). Once, it exits
:data:`EXIT_FAILING` when an objective is at or past ``--fail-on`` (``breach``: in breach or
its budget exhausted, the default; ``warning``: any state but ``ok``; ``never``), so it can
gate CI. Without ``--store`` (and without ``--watch``) the objectives are evaluated over every
data location on this machine too (registered in the per-user ``locations.json``), each
location's rows labelled with where its data is; the exit status counts this project's store
only (another project's breach never fails this one's CI gate) unless ``--everywhere`` is
given; ``--store`` narrows to one. With ``--watch`` it evaluates one store every ``--interval``
seconds and alerts once per state change (a log line on stderr, and a webhook when
``AIR_SLO_WEBHOOK_URL`` is set), deduplicated through the store when it can write it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from aircli.locate import STORE_HELP, other_metered_locations, store_location
from airmeter import AirmeterError, MeterConfigError, slo_alerts
from airmeter.settings import slo_webhook_url
from airmeter.slo import SloStatus
from airmeter.slo_alerts import AlertSink, SloWatcher, WebhookAlerts, log_alert
from airmeter.slo_config import DEFAULT_SLO_FILE, Objective, load_objectives
from airstore import (
    AirstoreError,
    ReadOnlyUnsupportedError,
    Store,
    StoreLockedError,
    create_storage,
    parse_store_url,
    store_exists,
)

__all__ = ["EXIT_FAILING", "FAIL_ON", "add_slo_parser", "find_slo_file", "format_slo_table",
           "slo_file_candidates"]  # fmt: skip

DEFAULT_INTERVAL = 30.0
EXIT_FAILING = 3
"""The exit status of ``air meter slo`` when an objective is at or past ``--fail-on``."""
FAIL_ON: dict[str, frozenset[str]] = {
    "breach": frozenset({"breach", "exhausted"}),
    "warning": frozenset({"breach", "exhausted", "warning"}),
    "never": frozenset(),
}
"""The states that fail ``air meter slo`` for each ``--fail-on`` level."""


def slo_file_candidates(store_url: str | None) -> list[Path]:
    """Where objectives are looked for without ``--config``, in order: ``.air/slo.yml``, then
    the file ``air demo`` writes beside the store's data directory, then ``.air/``'s."""
    from aircli._demo_history import DEMO_OBJECTIVES_FILE  # `air demo`'s; imported when needed

    out = [Path(DEFAULT_SLO_FILE)]
    if store_url is not None:
        try:
            kind, where = parse_store_url(store_url)
        except AirstoreError:
            kind, where = "", None
        if kind == "file" and where is not None:
            out.append(_shown(Path(where).parent / DEMO_OBJECTIVES_FILE))
    out.append(Path(DEFAULT_SLO_FILE).parent / DEMO_OBJECTIVES_FILE)
    unique: dict[Path, Path] = {}
    for path in out:
        unique.setdefault(path.absolute(), path)
    return list(unique.values())


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it is under it."""
    try:
        return path.absolute().relative_to(Path.cwd())
    except ValueError:
        return path


def find_slo_file(config: str | None, store_url: str | None) -> str:
    """The objectives file: ``config`` when given, else the first of
    :func:`slo_file_candidates` that exists.

    Raises:
        MeterConfigError: none exists; the message names every place looked.
    """
    if config is not None:
        return config
    candidates = slo_file_candidates(store_url)
    for path in candidates:
        if path.is_file():
            return str(path)
    looked = ", ".join(repr(str(p)) for p in candidates)
    raise MeterConfigError(
        f"no SLO objectives: looked for {looked}; write {DEFAULT_SLO_FILE} (docs/metering.md) "
        "or pass --config FILE"
    )


def add_slo_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``air meter slo``."""
    slo = actions.add_parser("slo", help="SLO budgets, burn rates and states (--watch alerts)")
    slo.add_argument("--config", default=None,
                     help=f"objectives file (default {DEFAULT_SLO_FILE}, else the one "
                     "`air demo` wrote beside the data)")  # fmt: skip
    slo.add_argument("--store", default=None,
                     help=f"{STORE_HELP}. Without it (and without --watch) every other data "
                     "location on this machine is evaluated too, each labelled with where its "
                     "data is")  # fmt: skip
    slo.add_argument(
        "--everywhere",
        action="store_true",
        help="the exit status counts the other data locations' objectives too (without it, "
        "only this store's: the others are shown, not counted)",
    )
    slo.add_argument("--format", choices=("table", "json"), default="table")
    slo.add_argument(
        "--watch",
        action="store_true",
        help="evaluate every --interval seconds and alert on state changes",
    )
    slo.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, metavar="SECONDS")
    slo.add_argument(
        "--fail-on",
        choices=tuple(FAIL_ON),
        default="breach",
        help=f"exit {EXIT_FAILING} when an objective is in this state or worse (breach: in "
        "breach or its budget exhausted; warning: any state but ok; default: breach)",
    )
    slo.set_defaults(func=_run)


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def format_slo_table(statuses: Sequence[SloStatus]) -> str:
    """One row per objective and tool (a ``client`` column when an objective selects clients,
    ``*`` for those that do not), then a line for each client objective whose raw call log
    covers less than its period."""
    if not statuses:
        return "No calls match the objectives yet."
    clients = any(s.client is not None for s in statuses)
    headers = ["server/tool", *(["client"] if clients else []), "kind", "target", "period",
               "budget", "5m", "30m", "1h", "6h", "state"]  # fmt: skip
    rows = []
    notes = []
    for s in statuses:
        kind = (
            s.kind if s.threshold_ms is None else f"p{round(s.target * 100)}<={s.threshold_ms:g}ms"
        )
        client = [s.client or "*"] if clients else []
        rows.append([f"{s.server}/{s.tool}", *client, kind, f"{s.target:g}", s.period,
                     _pct(s.budget_remaining), f"{s.burn_rate_5m:.1f}x",
                     f"{s.burn_rate_30m:.1f}x", f"{s.burn_rate_1h:.1f}x",
                     f"{s.burn_rate_6h:.1f}x", s.state])  # fmt: skip
        if s.coverage_note is not None:
            notes.append(f"{s.server}/{s.tool} client {s.client} {kind}: {s.coverage_note}")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))  # fmt: skip

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows),
                      *notes])  # fmt: skip


def _render(
    statuses: Sequence[SloStatus], fmt: str, *, here: str = "",
    elsewhere: Sequence[tuple[str, Sequence[SloStatus]]] = (),
) -> str:  # fmt: skip
    """One store's rows; with ``elsewhere`` (other locations' rows), each location's rows
    labelled with where its data is (``data`` in JSON)."""
    if fmt == "json":
        rows = [{**s.to_dict(), "data": here} for s in statuses]
        rows += [{**s.to_dict(), "data": url} for url, more in elsewhere for s in more]
        return orjson.dumps({"objectives": rows}).decode()
    if not elsewhere:
        return format_slo_table(statuses)
    parts = [f"data {here}", format_slo_table(statuses)]
    for url, more in elsewhere:
        parts += ["", f"data {url}", format_slo_table(more)]
    return "\n".join(parts)


async def _elsewhere(
    urls: Sequence[str], objectives: Sequence[Objective]
) -> list[tuple[str, list[SloStatus]]]:
    """The objectives evaluated over each other data location (read-only; one that cannot be
    read is skipped with a line on stderr)."""
    found: list[tuple[str, list[SloStatus]]] = []
    for url in urls:
        try:
            store = await _open(url, watch=False)
        except (AirstoreError, MeterConfigError) as exc:
            print(f"air meter slo: skipped {url}: {exc}", file=sys.stderr)
            continue
        try:
            statuses = await SloWatcher(store, objectives, sinks=[]).evaluate()
        except (AirstoreError, AirmeterError) as exc:
            print(f"air meter slo: skipped {url}: {exc}", file=sys.stderr)
            continue
        finally:
            await store.close()
        if statuses:
            found.append((url, list(statuses)))
    return found


async def _open(url: str, *, watch: bool) -> Store:
    """The store: writable when watching (alert claims), unless another process holds it.

    Raises:
        MeterConfigError: nothing was ever recorded at ``url``.
    """
    if not await store_exists(url):
        raise MeterConfigError(f"{url} does not exist: nothing has been recorded there yet")
    if watch:
        try:
            return await create_storage(url)
        except StoreLockedError:
            pass
    try:
        return await create_storage(url, read_only=True)
    except ReadOnlyUnsupportedError:
        return await create_storage(url)  # memory://


async def _slo(args: argparse.Namespace) -> int:
    config = find_slo_file(args.config, args.store)
    objectives = load_objectives(config)
    if args.config is None:
        print(f"air meter slo: objectives from {config}", file=sys.stderr)
    store = await _open(args.store, watch=args.watch)
    webhook: WebhookAlerts | None = None
    try:
        sinks: list[AlertSink] = [log_alert]
        hook = slo_webhook_url()
        if hook:
            webhook = WebhookAlerts(hook)
            sinks.append(webhook)
        watcher = SloWatcher(store, objectives, sinks=sinks)
        while True:
            if args.watch:
                statuses, _ = await watcher.check()
                print(_render(statuses, args.format), flush=True)
            else:
                statuses = await watcher.evaluate()  # no alerts without --watch
                elsewhere = await _elsewhere(args.elsewhere, objectives)
                print(_render(statuses, args.format, here=args.store, elsewhere=elsewhere),
                      flush=True)  # fmt: skip
                others = [s for _, more in elsewhere for s in more]
                if args.everywhere:
                    return _exit_status([*statuses, *others], args.fail_on)
                _say_uncounted(others, args.fail_on)
                return _exit_status(statuses, args.fail_on)
            await asyncio.sleep(args.interval)
    finally:
        if webhook is not None:
            await webhook.aclose()  # the alerts in flight, within their deadline
        await store.close()


def _say_uncounted(others: Sequence[SloStatus], fail_on: str) -> None:
    """A line on stderr when other locations' objectives fail but the status ignores them."""
    failing = sum(1 for s in others if s.state in FAIL_ON[fail_on])
    if failing:
        print(f"air meter slo: {failing} objectives failing in other data locations (shown, "
              "not counted in the exit status; --everywhere counts them)",
              file=sys.stderr)  # fmt: skip


def _exit_status(statuses: Sequence[SloStatus], fail_on: str) -> int:
    failing = [s for s in statuses if s.state in FAIL_ON[fail_on]]
    if not failing:
        return 0
    states = ", ".join(sorted({s.state for s in failing}))
    print(f"air meter slo: {len(failing)} of {len(statuses)} objectives failing ({states}; "
          f"--fail-on {fail_on})", file=sys.stderr)  # fmt: skip
    return EXIT_FAILING


def _run(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        print("air meter slo: --interval must be positive", file=sys.stderr)
        return 2
    location = store_location("air meter slo", args.store, reading=not args.watch)
    # one machine, one view: every other location too, unless --store narrows to one
    args.elsewhere = [] if args.store is not None or args.watch else (
        other_metered_locations(location))  # fmt: skip
    args.store = location.url
    slo_alerts.logger.setLevel(logging.INFO)  # resolves are INFO lines
    try:
        return asyncio.run(_slo(args))
    except KeyboardInterrupt:
        return 0
    except (AirmeterError, AirstoreError, OSError) as exc:
        print(f"air meter slo: {exc}", file=sys.stderr)
        return 1
