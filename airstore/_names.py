"""Namespace names → file-name stems that are safe on every file system, and back.

A namespace is 1 to 128 of ``A-Z a-z 0-9 . _ -`` on every platform (``_validate``). Three kinds of
valid name would break as plain file names:

* names that differ only in case (``Calls``, ``calls``) share one file on a case-insensitive
  file system (APFS and NTFS by default, exFAT);
* Windows' device names (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0`` to ``COM9``,
  ``LPT0`` to ``LPT9``, any case) cannot be created there, with any extension (``aux.txt``);
* Windows drops a trailing dot, so ``trail.`` would become ``trail``.

So a stem never holds an upper-case letter and never starts with a device name or ends with a
dot; ``+``, which no namespace holds, escapes:

    ``+x``     the letter ``X`` (``Calls`` → ``+calls``, ``LPT1`` → ``+l+p+t1``)
    ``+_``     nothing: breaks a device name (``con`` → ``con+_``, ``aux.txt`` → ``aux+_.txt``)
               or ends a name that ends with a dot (``trail.`` → ``trail.+_``)
    ``+N``     at the end, N in decimal: the letters at the bits set in N are upper case. Used
               instead of ``+x`` when escaping each letter would make the stem longer than
               :data:`MAX_STEM` (a long name of many capitals), so the longest file name of a
               namespace stays well under the 255 bytes file systems allow.

Every other name is its own stem (``meter.calls`` → ``meter.calls``). :func:`decode` accepts
only what :func:`encode` gives (``encode(decode(s)) == s``), so the mapping is one to one and
a stem no namespace has (a hand-made ``Con.json``) is ignored, never misread. ``+`` is a plain
character in every shell and on every file system (Go's module cache escapes capitals with
``!``, which interactive bash expands).
"""

from __future__ import annotations

import re
from functools import lru_cache

from airstore._validate import is_namespace

__all__ = ["ESCAPE", "MAX_STEM", "RESERVED", "decode", "decode_legacy", "encode", "is_device_stem"]

ESCAPE = "+"
MAX_STEM = 160
"""Longest stem escaping letter by letter; above it, the case mask form (at most 128 + 4 + 40)."""
RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{dev}{n}" for dev in ("com", "lpt") for n in range(10)]
)
"""Windows' device names (compared without case); a file whose name starts with one and a dot
is the device too."""

_MASK_RE = re.compile(r"\+([1-9][0-9]*)$")


def is_device_stem(name: str) -> bool:
    """Whether the file name ``name`` is, or starts with, a Windows device name."""
    return name.split(".", 1)[0].rstrip(" ").lower() in RESERVED


@lru_cache(maxsize=4096)
def encode(ns: str) -> str:
    """The file-name stem of the namespace ``ns`` (which the caller has validated)."""
    if ns.islower() or not any("A" <= c <= "Z" for c in ns):
        body, mask = ns, 0
    else:
        body = "".join(ESCAPE + c.lower() if "A" <= c <= "Z" else c for c in ns)
        mask = 0
        if len(body) > MAX_STEM:
            body = ns.lower()
            mask = sum(1 << i for i, c in enumerate(ns) if "A" <= c <= "Z")
    head, dot, tail = body.partition(".")
    if head in RESERVED:
        body = head + ESCAPE + "_" + dot + tail
    if mask:
        body += ESCAPE + str(mask)
    elif body.endswith("."):
        body += ESCAPE + "_"
    return body


@lru_cache(maxsize=4096)
def decode(stem: str) -> str | None:
    """The namespace whose stem is ``stem``, or ``None`` if no namespace has that stem.

    The result is always a valid namespace.
    """
    if ESCAPE not in stem:
        ns = stem
    else:
        mask = 0
        body = stem
        if (match := _MASK_RE.search(stem)) is not None:
            mask = int(match[1])
            body = stem[: match.start()]
        out: list[str] = []
        i, n = 0, len(body)
        while i < n:
            c = body[i]
            if c != ESCAPE:
                out.append(c)
                i += 1
                continue
            if i + 1 == n:
                return None
            nxt = body[i + 1]
            if "a" <= nxt <= "z":
                out.append(nxt.upper())
            elif nxt != "_":
                return None
            i += 2
        if mask:
            if mask.bit_length() > len(out):
                return None
            for i in range(mask.bit_length()):
                if mask >> i & 1:
                    if not "a" <= out[i] <= "z":
                        return None
                    out[i] = out[i].upper()
        ns = "".join(out)
    return ns if is_namespace(ns) and encode(ns) == stem else None


def decode_legacy(stem: str) -> str | None:
    """The namespace whose file-name stem was ``stem`` before format 4 (the name itself), or
    ``None``. Where both this and :func:`decode` give a namespace they give the same one."""
    return stem if is_namespace(stem) else None
