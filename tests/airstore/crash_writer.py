"""A writer process for the crash tests: sets and appends at full speed until SIGKILLed.

Usage: ``python crash_writer.py DATA_DIR DURABILITY START ACK_FILE [COUNTER]``

After each acknowledged operation it writes one line to ACK_FILE with ``os.write`` (so the
line survives the SIGKILL): ``s<i>`` (set ``k<i>`` = i), ``a<i>`` (appended ``{"i": i}``),
``f<i>`` (an explicit flush returned after set ``i``), ``c<n>`` (``incr`` of the shared counter
``crash/COUNTER`` returned n; only with COUNTER, used by several writers at once). The loop
yields every ``YIELD_EVERY`` iterations, like a server handling requests. The log rotates every
32 KiB, so kills also land around rotations.
"""

from __future__ import annotations

import asyncio
import os
import sys

from airstore import FileStore

YIELD_EVERY = 64
FLUSH_EVERY = 500
MAX_LOG_BYTES = 32 * 1024


async def main(path: str, durability: str, start: int, ack_path: str, counter: str) -> None:
    ack = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    store = FileStore(
        path,
        durability=durability,  # type: ignore[arg-type]
        flush_interval=0.2,
        max_log_bytes=MAX_LOG_BYTES,  # kills also land around log rotations
    )
    await store.init()
    i = start
    while True:
        await store.set("crash", f"k{i}", i)
        os.write(ack, b"s%d\n" % i)
        await store.append("crash.log", {"i": i, "pad": "x" * (i % 50)})
        os.write(ack, b"a%d\n" % i)
        if counter and i % 8 == 0:
            os.write(ack, b"c%d\n" % await store.incr("crash", counter))
        i += 1
        if i % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        if durability == "snapshot" and i % FLUSH_EVERY == 0:
            await store.flush()
            os.write(ack, b"f%d\n" % (i - 1))


if __name__ == "__main__":
    counter = sys.argv[5] if len(sys.argv) > 5 else ""
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], counter))
