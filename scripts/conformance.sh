#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance, npm) over HTTP
# against examples/conformance_server.py, in both protocol eras:
#   1. suite 0.1.16, --suite all: the 2025-11-25 (initialize handshake) scenarios;
#   2. suite 0.2.0-alpha.12, --requirements 2025-11-25: that revision's frozen requirement set;
#   3. suite 0.2.0-alpha.12, --requirements 2026-07-28: the stateless era, including what the
#      revision runs without scoring (the tasks extension, pending scenarios).
# Node >= 22 comes from npm (the `node` package) into .conformance/, so the system Node version
# does not matter. Scenarios we do not pass are listed, with reasons, in conformance-baseline.yml
# (suite 0.1.16) and conformance-baseline-0.2.yml (suite 0.2); anything else fails the run, and
# so does a listed scenario that passes (scripts/conformance_check.py judges runs 2 and 3 by
# every check they wrote, since --requirements alone never fails on unscored scenarios).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=.conformance
LEGACY_SUITE=0.1.16
SUITE=0.2.0-alpha.12
PY=${PYTHON:-.venv/bin/python}

install() {  # install DIR PACKAGE...
  local dir=$1
  shift
  echo "==> installing $* into $dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "$@" >/dev/null
}
[ -x "$PREFIX/node/node_modules/.bin/node" ] || install "$PREFIX/node" node@22
for version in "$LEGACY_SUITE" "$SUITE"; do
  [ -x "$PREFIX/$version/node_modules/.bin/conformance" ] ||
    install "$PREFIX/$version" "@modelcontextprotocol/conformance@$version"
done
export PATH="$PWD/$PREFIX/node/node_modules/.bin:$PATH"
echo "==> node $(node --version)"

LOG=$(mktemp)
OUT=$(mktemp -d)
"$PY" -m aircli serve examples/conformance_server.py --transport http --port 0 2>"$LOG" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$LOG" "$OUT"' EXIT
for _ in $(seq 1 300); do
  URL=$(grep -o 'http://[^ ]*' "$LOG" | head -1 || true)
  [ -n "$URL" ] && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
[ -n "${URL:-}" ] || { echo "server did not start"; cat "$LOG"; exit 1; }
URL=${URL/127.0.0.1/localhost}
status=0

echo "==> suite $LEGACY_SUITE (2025-11-25 era) against $URL"
"$PREFIX/$LEGACY_SUITE/node_modules/.bin/conformance" server --url "$URL" --suite all \
  --expected-failures conformance-baseline.yml || status=1

for revision in 2025-11-25 2026-07-28; do
  echo "==> suite $SUITE, requirements $revision, against $URL"
  "$PREFIX/$SUITE/node_modules/.bin/conformance" server --url "$URL" \
    --requirements "$revision" -o "$OUT/$revision" || status=1
  "$PY" scripts/conformance_check.py "$OUT/$revision" conformance-baseline-0.2.yml \
    "$SUITE/$revision" || status=1
done
exit $status
