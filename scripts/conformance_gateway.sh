#!/usr/bin/env bash
# The official MCP conformance suite against `air gateway` in front of
# examples/conformance_server.py: the gateway must score what the server scores directly (the
# same conformance-baseline.yml). Installs the suite like scripts/conformance.sh.
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

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_url() {  # wait_url LOG PID: the first URL the process prints on stderr
  for _ in $(seq 1 300); do
    URL=$(grep -o 'http://[^ ]*' "$1" | head -1 || true)
    [ -n "$URL" ] && return 0
    kill -0 "$2" 2>/dev/null || { cat "$1"; exit 1; }
    sleep 0.1
  done
  echo "no URL in $1"; cat "$1"; exit 1
}

"$PY" -m aircli serve examples/conformance_server.py --transport http --port 0 2>"$WORK/server.log" &
PIDS+=($!)
wait_url "$WORK/server.log" "${PIDS[-1]}"
SERVER_URL=$URL
printf 'servers:\n  - name: conformance\n    url: %s\n    timeout_s: 60\n' "$SERVER_URL" \
  >"$WORK/gateway.yml"
"$PY" -m aircli gateway --config "$WORK/gateway.yml" --port 0 --store memory:// \
  2>"$WORK/gateway.log" &
PIDS+=($!)
wait_url "$WORK/gateway.log" "${PIDS[-1]}"
URL=${URL/127.0.0.1/localhost}
echo "==> conformance suite against the gateway at $URL (upstream $SERVER_URL)"
conformance server --url "$URL" --suite all --expected-failures conformance-baseline.yml
