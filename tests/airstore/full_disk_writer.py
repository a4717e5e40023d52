"""A writer process for the disk-full kill test: sets keys until the disk refuses, then idles.

Usage: ``python full_disk_writer.py DATA_DIR DURABILITY ACK_FILE``

Each ``set`` runs in its own loop turn. After each call it writes one line to ACK_FILE with
``os.write`` (so the line survives the SIGKILL): ``ok <i>`` (acknowledged) or ``refused <i>``
(``StorageIOError``). After :data:`REFUSALS` refusals in a row it writes ``full`` and waits
to be killed, still trying a write now and then (the disk stays full).
"""

from __future__ import annotations

import asyncio
import os
import sys

from airstore import FileStore, StorageIOError

REFUSALS = 50
VALUE = "v" * 900


async def main(path: str, durability: str, ack_path: str) -> None:
    ack = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    store = FileStore(path, durability=durability, flush_interval=3600)  # type: ignore[arg-type]
    await store.init()
    refused_in_a_row = 0
    i = 0
    while True:
        try:
            await store.set("ns", f"k{i}", {"pad": VALUE, "i": i})
        except StorageIOError:
            os.write(ack, b"refused %d\n" % i)
            refused_in_a_row += 1
        else:
            os.write(ack, b"ok %d\n" % i)
            refused_in_a_row = 0
        i += 1
        if refused_in_a_row == REFUSALS:
            os.write(ack, b"full\n")
        await asyncio.sleep(0.05 if refused_in_a_row >= REFUSALS else 0)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
