"""A writer process for the failover tests: sets keys and appends log entries through one
RedisStore until a stop file appears, printing ``acked N refused M`` as it goes (every 0.1 s
at most); then writes what it acknowledged (and the store's replication figures) as JSON.

    python -m tests.airstore.fleet_writer URL DURABILITY NAME STOP_FILE OUT_FILE
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time

import orjson

from airstore import RedisStore, ReplicationError, StorageIOError


def _stopped(path: str) -> bool:
    return os.path.exists(path)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


async def main(url: str, durability: str, name: str, stop: str, out: str) -> None:
    store = RedisStore(url, durability=durability, replication_timeout=0.5)  # type: ignore[arg-type]
    await store.init()
    acked: list[int] = []
    refused = errors = 0
    i = 0
    last = time.monotonic()
    while not _stopped(stop):
        i += 1
        try:
            await asyncio.gather(
                store.set("fleet", f"{name}-{i}", i),
                store.append("meter.calls", {"writer": name, "i": i, "tool": "t"}),
            )
        except ReplicationError:
            refused += 1
            await asyncio.sleep(0.02)
        except StorageIOError:
            errors += 1
            await asyncio.sleep(0.05)
        else:
            acked.append(i)
        if time.monotonic() - last > 0.1:
            last = time.monotonic()
            print(f"acked {len(acked)} refused {refused}", flush=True)
    await store.close()
    result = {
        "acked": acked,
        "refused": refused,
        "errors": errors,
        "replication": dataclasses.asdict(store.replication),
    }
    _write(out, orjson.dumps(result))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
