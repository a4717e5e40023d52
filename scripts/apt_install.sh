#!/usr/bin/env bash
# Install Debian packages for one set-up step: with apt-get when root (CI and these machines are
# root), otherwise say what is missing and how to get it. Used by sysdeps.sh and compiler.sh.
# Usage: scripts/apt_install.sh "WHAT THEY ARE FOR" "ANOTHER WAY (or empty)" PACKAGE...
set -euo pipefail
what="$1"
other="$2"
shift 2
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "==> missing $what: $*" >&2
  echo "    install them with: sudo apt-get install -y $*" >&2
  [ -z "$other" ] || echo "    or: $other" >&2
  exit 1
fi
# `make test` runs its installs side by side: one apt-get at a time (dpkg's lock), the others wait
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TMPDIR:-/tmp}/air-apt-install.lock"
  flock 9
fi
echo "==> installing $what: $*"
export DEBIAN_FRONTEND=noninteractive
# a freshly booted machine's own apt jobs (apt-daily, unattended-upgrades) may hold dpkg's lock
apt-get -o DPkg::Lock::Timeout=300 update -q
apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "$@"
