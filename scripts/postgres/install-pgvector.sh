#!/usr/bin/env bash
# Install the pgvector extension for the local PostgreSQL server (default: 15) if it is missing.
#
# Debian bookworm ships no pgvector package, so this builds it from Debian's own source package
# (taken from trixie through a private, throwaway apt configuration: the system's apt sources,
# lists and caches are left alone) against postgresql-server-dev-$PG_MAJOR from bookworm.
# Needs root (apt-get install, make install). Idempotent: does nothing when already installed.
#
# Usage: bash scripts/postgres/install-pgvector.sh
# Env:   PG_MAJOR (default 15), PGVECTOR_SUITE (Debian suite to take the source from, default trixie),
#        APT_LOCK_TIMEOUT (seconds to wait while another apt or dpkg holds the lock, default 600)
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PGVECTOR_SUITE="${PGVECTOR_SUITE:-trixie}"
PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"
CONTROL="/usr/share/postgresql/$PG_MAJOR/extension/vector.control"
DEBIAN_MIRROR="http://deb.debian.org/debian"
KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"

APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-600}"

log() { echo "[install-pgvector] $*" >&2; }
die() { log "error: $*"; exit 1; }

# apt_get <logfile> <args…>: apt-get that waits out another apt or dpkg holding the lock.
# shellcheck source=/dev/null
source "$(dirname "${BASH_SOURCE[0]}")/../apt.sh"

installed_version() { sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$CONTROL"; }

if [[ -f "$CONTROL" ]]; then
  log "pgvector $(installed_version) already installed for PostgreSQL $PG_MAJOR, nothing to do"
  exit 0
fi

[[ "$(id -u)" -eq 0 ]] || die "must run as root (apt-get install, make install)"
[[ -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ]] || die "PostgreSQL $PG_MAJOR server not found in /usr/lib/postgresql/$PG_MAJOR/bin"

export DEBIAN_FRONTEND=noninteractive
started=$SECONDS

# Build dependencies, from the system's own (bookworm) sources.
missing=()
for pkg in "postgresql-server-dev-$PG_MAJOR" dpkg-dev make gcc; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  aptlog="$(mktemp -t pgvector-apt.XXXXXX)"
  log "apt-get update (system sources)"
  apt_get "$aptlog" update -qq || { cat "$aptlog" >&2; rm -f "$aptlog"; die "apt-get update failed"; }
  log "apt-get install ${missing[*]}"
  apt_get "$aptlog" install -y -qq --no-install-recommends "${missing[@]}" \
    || { cat "$aptlog" >&2; rm -f "$aptlog"; die "apt-get install failed"; }
  rm -f "$aptlog"
else
  log "build dependencies already installed"
fi
[[ -x "$PG_CONFIG" ]] || die "$PG_CONFIG missing after installing postgresql-server-dev-$PG_MAJOR"

work="$(mktemp -d -t pgvector-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# A private apt configuration holding only a deb-src entry for $PGVECTOR_SUITE.
mkdir -p "$work/apt/sources.list.d" "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src"
echo "deb-src [signed-by=$KEYRING] $DEBIAN_MIRROR $PGVECTOR_SUITE main" >"$work/apt/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/apt/sources.list"
  -o "Dir::Etc::SourceParts=$work/apt/sources.list.d"
  -o "Dir::State::Lists=$work/apt/lists"
  -o "Dir::Cache=$work/apt/cache"
  -o "Dir::Cache::pkgcache="
  -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=root"
)

log "apt-get update (private: deb-src $PGVECTOR_SUITE)"
apt-get "${apt_opts[@]}" update -qq >"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; die "private apt-get update failed"; }
log "apt-get source pgvector ($PGVECTOR_SUITE)"
(cd "$work/src" && apt-get "${apt_opts[@]}" source -qq pgvector) >"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; die "apt-get source pgvector failed"; }
srcdir="$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)"
[[ -n "$srcdir" ]] || die "apt-get source pgvector produced no source directory"

# OPTFLAGS= : no -march=native (as Debian's own build), so the result runs on any x86-64 CPU.
log "make ($(basename "$srcdir"), PostgreSQL $PG_MAJOR)"
make -C "$srcdir" -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS= >"$work/make.log" 2>&1 \
  || { tail -n 40 "$work/make.log" >&2; die "make failed"; }
log "make install"
make -C "$srcdir" -s PG_CONFIG="$PG_CONFIG" OPTFLAGS= install >"$work/install.log" 2>&1 \
  || { tail -n 40 "$work/install.log" >&2; die "make install failed"; }

[[ -f "$CONTROL" ]] || die "$CONTROL missing after make install"
log "pgvector $(installed_version) installed for PostgreSQL $PG_MAJOR in $((SECONDS - started))s"
