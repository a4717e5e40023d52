#!/usr/bin/env bash
# Install the system programs the test suite drives for real: redis-server, chromium, chromedriver.
# Runs apt-get when root (CI and these machines are root); otherwise says what is missing.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ ${#need[@]} -eq 0 ]; then
  echo "==> system packages present: redis-server, chromium, chromedriver"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "==> missing system packages: ${need[*]}" >&2
  echo "    install them with: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "==> installing system packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${need[@]}"
