"""``air store check`` and ``air store stats``: look inside a store without changing it.

``check`` reads every file of a file store (read-only, safe beside a running writer) and prints
what recovery would find: per namespace its files, entries, torn tails, corrupt lines, corrupt
snapshots and snapshots kept aside. Exit status 1 when anything is wrong.

``stats`` prints one line per namespace; a family of numbered internal namespaces (the meter's
hourly rollups ``meter.rollups.498888``, …) is one line, ``meter.rollups.* (168 namespaces)``,
unless ``--all`` lists each.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from aircli.locate import STORE_HELP, elsewhere_hint, store_location
from airstore import (
    AirstoreError,
    Inspectable,
    NamespaceStats,
    ReadOnlyUnsupportedError,
    StoreLocation,
    create_storage,
    store_exists,
)

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``store`` subcommand with ``check`` and ``stats``."""
    parser = sub.add_parser("store", help="inspect a store: check files, show sizes")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, func, text in (
        ("check", _check, "verify every file; exit 1 if anything is damaged"),
        ("stats", _stats, "keys, log entries and bytes per namespace"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--store", default=None, help=STORE_HELP)
        if name == "stats":
            action.add_argument(
                "--all",
                action="store_true",
                help="list each numbered internal namespace (meter.rollups.NNNNNN, …) "
                "instead of one line per family",
            )
        action.set_defaults(func=func)


async def _open(location: StoreLocation) -> Inspectable | None:
    """The store at ``location`` opened read-only, or None (with a message) when there is
    nothing to inspect: nothing stored yet (naming the other default locations that hold
    data), or a store that keeps no files."""
    url = location.url
    if not await store_exists(url):
        print(f"{url}: no data directory or database yet (nothing stored there)")
        hint = elsewhere_hint(location)
        if hint:
            print(f"  hint: {hint}")
        return None
    try:
        store = await create_storage(url, read_only=True)
    except ReadOnlyUnsupportedError:
        store = None
    if isinstance(store, Inspectable):
        return store
    if store is not None:
        await store.close()
    print(f"{url}: only file stores keep files to inspect")
    return None


def _run(
    command: str,
    args: argparse.Namespace,
    work: Callable[[StoreLocation], Coroutine[Any, Any, int]],
) -> int:
    """Run ``work`` on the store ``args`` names; a store error is exit code 2 with its text."""
    location = store_location(command, args.store, reading=True)
    try:
        return asyncio.run(work(location))
    except AirstoreError as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2


def _check(args: argparse.Namespace) -> int:
    return _run("air store check", args, _run_check)


async def _run_check(location: StoreLocation) -> int:
    store = await _open(location)
    if store is None:
        return 0
    try:
        report = await store.check()
    finally:
        await store.close()
    print(f"data directory: {report.root}")
    for ns in report.namespaces:
        counts = {"torn tails": 0, "corrupt lines": 0, "corrupt snapshots": 0}
        for f in ns.findings:
            if f.kind == "torn_tail":
                counts["torn tails"] += 1
            elif f.kind == "corrupt_line":
                counts["corrupt lines"] += 1
            else:
                counts["corrupt snapshots"] += 1
        state = "ok" if not ns.findings else "PROBLEMS"
        print(
            f"  {ns.namespace}: {state}; {len(ns.files)} files, {ns.keys} keys in snapshot, "
            f"{ns.journal_records} journal records, {ns.log_entries} log entries; "
            + ", ".join(f"{v} {k}" for k, v in counts.items())
        )
        for f in ns.findings:
            where = f"{f.path}" + (f":{f.line}" if f.line is not None else "")
            print(f"    {f.kind}: {where}: {f.detail}")
    if not report.namespaces:
        print("  (no namespaces)")
    for event in report.events:
        if event.get("event") == "lost_writes":
            print(
                f"  lost writes: {event.get('count')} acknowledged writes dropped by pid "
                f"{event.get('pid')} at {_when(event.get('ts'))} ({event.get('reason')})"
            )
        else:
            print(f"  event: {event}")
    print("result:", "ok" if report.ok else f"{len(report.findings)} problem(s) found")
    return 0 if report.ok else 1


def _when(ms: object) -> str:
    if not isinstance(ms, int):
        return "an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def _days(seconds: float) -> str:
    return f"{seconds / 86400:.1f} d" if seconds >= 86400 else f"{seconds / 3600:.1f} h"


def _stats(args: argparse.Namespace) -> int:
    every = bool(args.all)
    return _run("air store stats", args, lambda location: _run_stats(location, every=every))


def _family(namespace: str) -> str | None:
    """``"meter.rollups.*"`` for a numbered namespace such as ``meter.rollups.498888``."""
    head, _, last = namespace.rpartition(".")
    return f"{head}.*" if head and last.isdigit() else None


def _group_families(found: Sequence[NamespaceStats]) -> list[tuple[NamespaceStats, int]]:
    """Each namespace with 1, and each family of numbered namespaces (two or more sharing a
    prefix) as one summed entry with its size, in the order of their first member."""
    families: dict[str, list[NamespaceStats]] = {}
    for item in found:
        family = _family(item.namespace)
        if family is not None:
            families.setdefault(family, []).append(item)
    rows: list[tuple[NamespaceStats, int]] = []
    for item in found:
        family = _family(item.namespace)
        members = families.get(family) if family is not None else None
        if family is None or members is None or len(members) < 2:
            rows.append((item, 1))
        elif members[0] is item:
            rows.append((_summed(family, members), len(members)))
    return rows


def _summed(name: str, members: Sequence[NamespaceStats]) -> NamespaceStats:
    ages = [m.oldest_log_age for m in members if m.oldest_log_age is not None]
    caps = [m.max_bytes for m in members if m.max_bytes]
    max_ages = [m.max_age for m in members if m.max_age is not None]
    return NamespaceStats(
        namespace=name,
        keys=sum(m.keys for m in members),
        log_entries=sum(m.log_entries for m in members),
        segments=sum(m.segments for m in members),
        files=sum(m.files for m in members),
        bytes=sum(m.bytes for m in members),
        has_kv=any(m.has_kv for m in members),
        log_bytes=sum(m.log_bytes for m in members),
        oldest_log_age=max(ages) if ages else None,
        max_age=max(max_ages) if max_ages else None,
        max_bytes=sum(caps) if caps else None,
    )


async def _run_stats(location: StoreLocation, *, every: bool = False) -> int:
    url = location.url
    store = await _open(location)
    if store is None:
        return 0
    try:
        found = await store.stats()
    finally:
        await store.close()
    print(f"data directory: {url}")
    print(
        f"  {'namespace':<32} {'keys':>10} {'log entries':>12} {'segments':>9} {'bytes':>14}"
        f"  {'log bytes / cap':>24}  {'oldest / max age':>18}"
    )
    rows = [(item, 1) for item in found] if every else _group_families(found)
    grouped = 0
    for item, size in rows:
        label = item.namespace if size == 1 else f"{item.namespace} ({size} namespaces)"
        grouped += size - 1
        cap = f"{item.log_bytes:,} / " + (f"{item.max_bytes:,}" if item.max_bytes else "-")
        if item.max_bytes:
            cap += f" ({item.log_bytes / item.max_bytes:.0%})"
        age = "-" if item.oldest_log_age is None else _days(item.oldest_log_age)
        age += " / " + ("-" if item.max_age is None else _days(item.max_age))
        print(
            f"  {label:<32} {item.keys:>10,} {item.log_entries:>12,} "
            f"{item.segments:>9} {item.bytes:>14,}  {cap:>24}  {age:>18}"
        )
    total = sum(item.bytes for item in found)
    print(f"  {len(found)} namespaces, {total:,} bytes")
    if grouped:
        print("  (numbered namespaces grouped into one line per family: --all lists each)")
    return 0
