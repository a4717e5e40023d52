"""``air demo``: for now a storage walkthrough; the full demo replaces it."""

from __future__ import annotations

import argparse
import asyncio

from airstore import create_storage

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` subcommand."""
    parser = sub.add_parser("demo", help="run the air demo")
    parser.add_argument("--store", default="memory://", help="store URL (default: memory://)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    return asyncio.run(_walkthrough(args.store))


async def _walkthrough(url: str) -> int:
    store = await create_storage(url)
    try:
        await store.set("demo", "greeting", {"text": "hello"}, ttl=60)
        print("set demo/greeting ->", await store.get("demo", "greeting"))
        for i in range(3):
            await store.append("demo.log", {"tool": "echo", "n": i})
        print("newest log entries ->", await store.query("demo.log", limit=3))
    finally:
        await store.close()
    return 0
