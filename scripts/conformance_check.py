"""Judge a conformance run by every check it wrote, scored or not.

``conformance server --requirements <revision>`` decides its exit code by the scenarios the
revision requires only; extensions (tasks) and pending scenarios run but cannot fail it. We hold
ourselves to all of them: every FAILURE check under the run's output directory must be listed in
the baseline (``scenario`` excuses a whole scenario, ``scenario:check-id`` one check), and every
baseline entry must still fail (a stale entry is an error too).

Usage: python scripts/conformance_check.py OUTPUT_DIR BASELINE_YML LABEL
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml


def _scenario_of(run_dir: Path) -> str:
    # results/server-<scenario>-<ISO timestamp>: the timestamp starts with the year
    name = run_dir.name.removeprefix("server-")
    head, sep, _ = name.rpartition("-20")
    return head if sep else name


def main(argv: list[str]) -> int:
    """Print the verdict; return the exit status (0: only baselined failures)."""
    out_dir, baseline_path, label = Path(argv[1]), Path(argv[2]), argv[3]
    entries = (yaml.safe_load(baseline_path.read_text()) or {}).get("server") or []
    whole = {e for e in entries if ":" not in e}
    single = {e for e in entries if ":" in e}
    failing: set[str] = set()
    unexpected: list[str] = []
    ran = 0
    for checks_file in sorted(out_dir.rglob("checks.json")):
        ran += 1
        scenario = _scenario_of(checks_file.parent)
        for check in json.loads(checks_file.read_text()):
            if check.get("status") != "FAILURE":
                continue
            key = f"{scenario}:{check.get('id')}"
            failing.update({scenario, key})
            if scenario not in whole and key not in single:
                unexpected.append(f"{key}: {check.get('errorMessage', '')[:300]}")
    stale = sorted((whole | single) - failing)
    if ran == 0:
        print(f"conformance {label}: no results under {out_dir}")
        return 1
    for line in unexpected:
        print(f"conformance {label}: UNEXPECTED FAILURE {line}")
    for entry in stale:
        print(f"conformance {label}: STALE baseline entry {entry} (it passes now: remove it)")
    verdict = "ok" if not unexpected and not stale else "FAILED"
    print(f"conformance {label}: {ran} scenarios, {len(unexpected)} unexpected failures, "
          f"{len(stale)} stale baseline entries: {verdict}")  # fmt: skip
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
