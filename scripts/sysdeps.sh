#!/usr/bin/env bash
# Install the system programs the test suite drives for real: redis-server, redis-sentinel,
# chromium, chromedriver, and exFAT's tools (mkfs.exfat, mount.exfat-fuse) for FileStore's tests
# on a real exFAT volume.
# Installs them with scripts/apt_install.sh (apt-get when root; otherwise says what is missing).
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
# (in /usr/sbin, which a user's PATH may leave out)
have_sbin() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
have_sbin mkfs.exfat || need+=(exfatprogs)
have_sbin mount.exfat-fuse || need+=(exfat-fuse)
if [ ${#need[@]} -eq 0 ]; then
  echo "==> system packages present: redis-server, redis-sentinel, chromium, chromedriver, exfatprogs, exfat-fuse"
  exit 0
fi
exec bash "$(dirname "$0")/apt_install.sh" "system packages for the tests" "" "${need[@]}"
