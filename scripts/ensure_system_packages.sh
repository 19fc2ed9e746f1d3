#!/usr/bin/env bash
# Installs the Debian packages the tests start for real: PostgreSQL (the team store suite starts a
# server on a free loopback port under a temporary data directory) and Chromium (the dashboard's
# browser tests drive it headless through Playwright). Safe to run again: it installs only what is
# missing, and does nothing when both are present.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null || true
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
