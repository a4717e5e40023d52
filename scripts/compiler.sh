#!/usr/bin/env bash
# The C compiler and headers that build airstore's C speedups (airstore/_speedups.c; see
# hatch_build.py). `make install` builds them with AIR_SPEEDUPS=require, so the test suite always
# runs against what a wheel ships. Installs gcc (and, for Debian's own Python, python3-dev) with
# scripts/apt_install.sh (apt-get when root; otherwise says what is missing). Usage: scripts/compiler.sh PYTHON
set -euo pipefail
python="${1:-python3}"
# the compiler hatch_build.py runs: LDSHARED (environment, else this Python's), whose compiler
# CC from the environment replaces as setuptools does
cc=$("$python" -c '
import os, shlex, sysconfig
ld = os.environ.get("LDSHARED")
if not ld:
    ld = sysconfig.get_config_var("LDSHARED") or ""
    built, cc = sysconfig.get_config_var("CC") or "", os.environ.get("CC")
    if ld and cc and built and ld.startswith(built):
        ld = cc + ld[len(built):]
print(shlex.split(ld or "cc")[0])')
headers=$("$python" -c 'import os, sysconfig; print(int(os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h"))))')
need=()
if ! command -v "$cc" >/dev/null 2>&1; then
  case "$(basename "$cc")" in
    gcc* | cc) need+=(gcc libc6-dev) ;;
    clang*) need+=(clang libc6-dev) ;;
    *)
      echo "==> the C compiler the build runs (LDSHARED, or CC) is missing: $cc" >&2
      echo "    install it, set LDSHARED to another one, or: AIR_SPEEDUPS=off make install" >&2
      exit 1
      ;;
  esac
fi
[ "$headers" = 1 ] || need+=(python3-dev)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
exec bash "$(dirname "$0")/apt_install.sh" "the C compiler for airstore's speedups" \
  "AIR_SPEEDUPS=off make install (the pure-Python path)" "${need[@]}"
