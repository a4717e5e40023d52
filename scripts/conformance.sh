#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance, npm) over HTTP
# against examples/conformance_server.py. Node >= 22 comes from npm (the `node` package) into
# .conformance/, so the system Node version does not matter. Scenarios we do not pass are listed,
# with reasons, in conformance-baseline.yml; the run fails on anything else.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=.conformance
SUITE_VERSION=0.1.16
PY=${PYTHON:-.venv/bin/python}

if [ ! -x "$PREFIX/node_modules/.bin/conformance" ] || [ ! -x "$PREFIX/node_modules/.bin/node" ]; then
  echo "==> installing node@22 and @modelcontextprotocol/conformance@$SUITE_VERSION into $PREFIX"
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-save --no-package-lock --no-audit --no-fund \
    node@22 "@modelcontextprotocol/conformance@$SUITE_VERSION"
fi
export PATH="$PWD/$PREFIX/node_modules/.bin:$PATH"
echo "==> node $(node --version)"

LOG=$(mktemp)
"$PY" -m aircli serve examples/conformance_server.py --transport http --port 0 2>"$LOG" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 300); do
  URL=$(grep -o 'http://[^ ]*' "$LOG" | head -1 || true)
  [ -n "$URL" ] && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
[ -n "${URL:-}" ] || { echo "server did not start"; cat "$LOG"; exit 1; }
URL=${URL/127.0.0.1/localhost}
echo "==> conformance suite against $URL"
conformance server --url "$URL" --suite all --expected-failures conformance-baseline.yml
