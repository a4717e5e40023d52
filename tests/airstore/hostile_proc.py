"""Runs a list of store operations in a real process, reports each outcome, then waits to be
SIGKILLed (tests/airstore/test_hostile_inputs.py).

stdin: a pickled ``(url, durability, ops)``; stdout: an 8-byte length and a pickled list of
outcomes, one per op: ``("ok", result)`` or ``("err", error class name)``, written once the
writes are out of the mode's loss window (``journal``: the loop turn ended; ``snapshot``: a
flush; ``sync``: already). Then the process waits to be killed.
"""

from __future__ import annotations

import asyncio
import pickle
import sys
from typing import Any

from airstore import AirstoreError, FileStore, Store, create_storage


async def apply(store: Store, op: tuple[Any, ...]) -> tuple[str, Any]:
    """Run one operation; a refusal must be an AirstoreError (anything else propagates)."""
    kind, ns, *args = op
    try:
        if kind == "set":
            return ("ok", await store.set(ns, args[0], args[1], ttl=args[2]))
        if kind == "delete":
            return ("ok", await store.delete(ns, args[0]))
        if kind == "incr":
            return ("ok", await store.incr(ns, args[0], by=args[1], ttl=args[2]))
        if kind == "append":
            return ("ok", await store.append(ns, args[0]))
        return ("ok", await store.append_many(ns, args[0]))
    except AirstoreError as exc:
        return ("err", type(exc).__name__)


async def main() -> None:
    url, durability, ops = pickle.loads(sys.stdin.buffer.read())
    if url.startswith("file://"):
        store: Store = FileStore(url[len("file://") :], durability=durability, flush_interval=3600)
        await store.init()
    else:
        store = await create_storage(url)
    outcomes = [await apply(store, op) for op in ops]
    if durability == "snapshot":
        await store.flush()
    await asyncio.sleep(0)  # the loop turn ends: the group commit writes the turn's records
    await asyncio.sleep(0)
    data = pickle.dumps(outcomes)
    sys.stdout.buffer.write(len(data).to_bytes(8, "big") + data)
    sys.stdout.flush()
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main())
