#!/usr/bin/env bash
# Install Debian's Chromium for the console's end-to-end tests (npm run test:e2e) if it is missing.
#
# Browsers cannot be downloaded by Playwright here, so the tests drive the system's Chromium
# (playwright-core, executablePath). Needs root (apt-get install). Idempotent: does nothing when a
# Chromium is already on the PATH. Waits while another apt or dpkg holds the lock.
#
# Usage: bash scripts/install-chromium.sh
# Env:   APT_LOCK_TIMEOUT (seconds to wait while another apt or dpkg holds the lock, default 900)
set -euo pipefail

APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-900}"

log() { echo "[install-chromium] $*" >&2; }
die() { log "error: $*"; exit 1; }

# apt_get <logfile> <args…>: apt-get that waits out another apt or dpkg holding the lock.
# shellcheck source=/dev/null
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

for bin in chromium chromium-browser; do
  if command -v "$bin" >/dev/null 2>&1; then
    log "$(command -v "$bin") already installed ($("$bin" --version 2>/dev/null || echo 'version unknown')), nothing to do"
    exit 0
  fi
done

[[ "$(id -u)" -eq 0 ]] || die "must run as root (apt-get install)"
export DEBIAN_FRONTEND=noninteractive
started=$SECONDS
aptlog="$(mktemp -t chromium-apt.XXXXXX)"
trap 'rm -f "$aptlog"' EXIT

log "apt-get update"
apt_get "$aptlog" update -qq || { cat "$aptlog" >&2; die "apt-get update failed"; }
log "apt-get install chromium"
apt_get "$aptlog" install -y -qq --no-install-recommends chromium fonts-dejavu-core \
  || { cat "$aptlog" >&2; die "apt-get install chromium failed"; }
command -v chromium >/dev/null 2>&1 || die "chromium missing after apt-get install"
log "$(chromium --version 2>/dev/null || echo chromium) installed in $((SECONDS - started))s"
