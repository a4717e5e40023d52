#!/usr/bin/env bash
# Install the system programs the test suite drives for real: redis-server, redis-sentinel,
# chromium, chromedriver.
# Installs them with scripts/apt_install.sh (apt-get when root; otherwise says what is missing).
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ ${#need[@]} -eq 0 ]; then
  echo "==> system packages present: redis-server, redis-sentinel, chromium, chromedriver"
  exit 0
fi
exec bash "$(dirname "$0")/apt_install.sh" "system packages for the tests" "" "${need[@]}"
