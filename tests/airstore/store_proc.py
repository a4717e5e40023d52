"""A FileStore in another process, driven line by line over stdin (for the recovery tests).

Usage: ``python store_proc.py DATA_DIR DURABILITY``. Commands, one per line, each answered by
``ok`` (or ``error <type> <pid>``) on stdout: ``set KEY INT``, ``append INT``, ``flush``,
``close``, ``leave`` (return from main without closing: interpreter exit must flush).
"""

from __future__ import annotations

import asyncio
import sys

from airstore import AirstoreError, FileStore, StoreLockedError


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def main(path: str, durability: str) -> None:
    store = FileStore(path, durability=durability, flush_interval=3600)  # type: ignore[arg-type]
    try:
        await store.init()
    except StoreLockedError as exc:
        say(f"error StoreLockedError {exc.pid}")
        return
    say("ok")
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        words = line.split()
        if not words:
            return
        try:
            if words[0] == "set":
                await store.set("ns", words[1], int(words[2]))
            elif words[0] == "append":
                await store.append("log", {"i": int(words[1])})
            elif words[0] == "flush":
                await store.flush()
            elif words[0] == "close":
                await store.close()
                say("ok")
                return
            elif words[0] == "leave":
                say("ok")
                return
        except AirstoreError as exc:
            say(f"error {type(exc).__name__} -")
            continue
        await asyncio.sleep(0)  # end of this loop turn: the group commit has written the lines
        say("ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
