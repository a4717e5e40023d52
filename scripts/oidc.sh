#!/usr/bin/env bash
# Install the authorization server the OAuth tests run for real: the `oidc-provider` npm package
# (OpenID Certified) under Node 22 (the `node` package from npm, so the system Node version does
# not matter), into .oidc/. Needs npm (Node 20 on a fresh machine is enough).
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=.oidc
if [ -x "$PREFIX/node_modules/.bin/node" ] && [ -d "$PREFIX/node_modules/oidc-provider" ]; then
  echo "==> oidc-provider present in $PREFIX"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "==> npm is missing: the OAuth end-to-end tests need it (apt-get install -y npm)" >&2
  exit 1
fi
echo "==> installing node@22 and oidc-provider@9 into $PREFIX"
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-save --no-package-lock --no-audit --no-fund \
  node@22 oidc-provider@9 >/dev/null
