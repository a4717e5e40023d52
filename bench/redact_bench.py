"""Redaction benchmark (issue 31, items 3 and 4): the cost per record of masking secrets.

1. Per record: the error message of a failed call (the text every record's redaction reads),
   masked by airmeter's one-pass redaction, against detect-secrets' plugins (its regex
   detectors plus the entropy ones, ``scan_line``) finding the same text's secrets and replacing
   them. detect-secrets is not a dependency: ``pip install detect-secrets`` to see its column.
2. A captured arguments dict (keys and values walked, eight fields).
3. Adversarial texts of 100 KB (``"a:" * 50_000`` …): time per KB, linear in the length.

Run: ``python bench/redact_bench.py`` (``--rounds N``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airmeter import Redactor

# What error messages look like (no secret in most; one in some).
MESSAGES = [
    "upstream returned 503 Service Unavailable while fetching https://api.example.test/v1/items",
    "cannot connect to postgres://app:s3cretDSN@db:5432/main (timeout after 30s)",
    "KeyError: 'customer_id'",
    "validation failed: amount must be a positive number, got -3",
    "GitHub API said 401 Bad credentials for token " + "ghp" + "_" + "a1B2c3D4" * 4 + "e5F6",
    "file not found: /var/data/reports/2026-12-07.csv",
    'request failed: {"error": "invalid_grant", "client_secret": "s3cr3t-value"}',
    "TimeoutError: the model did not answer within 60 s",
]
ARGS = {
    "query": "weather in Oslo tomorrow",
    "limit": 10,
    "api_key": "abc123",
    "filters": {"city": "Oslo", "units": "metric"},
    "note": "sent with Bearer abcdefghijklmnopqrstuvwx",
    "tags": ["a", "b", "c"],
    "page": 2,
    "url": "https://example.test/path?q=1",
}
ADVERSARIAL = ["a:", "x=", "a://b:", "eyJa-", "a@", 'password="', " "]


def per_call_us(fn: Callable[[], object], rounds: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - start) / rounds * 1e6


def detect_secrets_masker() -> Callable[[str], str] | None:
    """detect-secrets' default plugins as a masker (scan the line, replace what it found)."""
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def mask(text: str) -> str:
        with default_settings():
            for found in scan_line(text):
                if found.secret_value:
                    text = text.replace(found.secret_value, "[REDACTED]")
        return text

    return mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    ours = Redactor()
    peer = detect_secrets_masker()

    print("1. per record: the error message of a failed call (µs per record)")
    print(f"{'message':<44}{'airmeter':>10}{'detect-secrets':>16}{'ratio':>8}")
    total_ours = total_peer = 0.0
    for msg in MESSAGES:
        a = per_call_us(lambda m=msg: ours.text(m), args.rounds)
        total_ours += a
        if peer is None:
            print(f"{msg[:42]:<44}{a:>10.1f}{'(not installed)':>16}")
            continue
        b = per_call_us(lambda m=msg: peer(m), max(20, args.rounds // 20))
        total_peer += b
        print(f"{msg[:42]:<44}{a:>10.1f}{b:>16.1f}{b / a:>7.0f}×")
    n = len(MESSAGES)
    mean_peer = f"{total_peer / n:>16.1f}{total_peer / total_ours:>7.0f}×" if peer else ""
    print(f"{'mean':<44}{total_ours / n:>10.1f}{mean_peer}")

    print("\n2. a captured arguments dict (8 fields, µs per record)")
    print(f"{'airmeter Redactor()(args)':<44}{per_call_us(lambda: ours(ARGS), args.rounds):>10.1f}")

    print("\n3. adversarial text, 100 KB and 200 KB (ms; linear: the ratio stays near 2)")
    print(f"{'pattern':<14}{'100 KB':>10}{'200 KB':>10}{'ratio':>8}")
    for unit in ADVERSARIAL:
        times = []
        for size in (100_000, 200_000):
            text = (unit * (size // len(unit) + 1))[:size]
            times.append(per_call_us(lambda t=text: ours.text(t), 3) / 1000)
        print(f"{unit!r:<14}{times[0]:>10.1f}{times[1]:>10.1f}{times[1] / times[0]:>8.2f}")


if __name__ == "__main__":
    main()
