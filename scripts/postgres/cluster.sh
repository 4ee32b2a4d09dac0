#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests (default: PostgreSQL 15 from /usr/lib/postgresql/15/bin).
#
#   cluster.sh start <dir>   initdb in <dir> (created if missing; must be empty otherwise), start the server on a
#                            free TCP port (or $PG_PORT) on 127.0.0.1 only (unix socket inside <dir>), create the pgvector
#                            extension in template1 (so every database created later has it) and in "postgres",
#                            and print the connection URL on stdout:
#                              postgres://postgres@127.0.0.1:<port>/postgres
#                            Logs go to stderr; the server log is <dir>/postgres.log.
#   cluster.sh stop <dir>    stop the server (pg_ctl stop -m fast) and remove <dir>. A no-op when <dir> is gone.
#   cluster.sh pause <dir>   stop the server (pg_ctl stop -m fast) but keep <dir>: an outage, for fault tests.
#   cluster.sh resume <dir>  start the paused server again, on the same port and data (prints the URL).
#
# Run as root, the server runs as the "postgres" system user (initdb refuses root); run as anyone else, it runs
# as that user. Authentication is "trust" and durability is off (fsync etc.): for tests only.
# Needs pgvector installed (scripts/postgres/install-pgvector.sh).
# Env: PG_MAJOR (default 15), PG_BIN (default /usr/lib/postgresql/$PG_MAJOR/bin),
#      PG_PORT (start: listen on this port instead of a free one; fails if it is taken).
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/$PG_MAJOR/bin}"
MARKER=".throwaway-postgres-cluster"

log() { echo "[pg-cluster] $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { echo "usage: $0 start|stop|pause|resume <dir>" >&2; exit 2; }

run_as_pg() {
  # cd into the cluster dir first: the postgres user may not be able to read the caller's working directory.
  if [[ "$(id -u)" -eq 0 ]]; then
    (cd "$dir" && runuser -u postgres -- "$@")
  else
    (cd "$dir" && "$@")
  fi
}

free_port() {
  if command -v node >/dev/null 2>&1; then
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'
  else
    die "need node or python3 to pick a free port"
  fi
}

is_running() { [[ -f "$dir/data/postmaster.pid" ]] && run_as_pg "$PG_BIN/pg_ctl" status -D "$dir/data" >/dev/null 2>&1; }

cmd_start() {
  [[ -x "$PG_BIN/initdb" ]] || die "PostgreSQL $PG_MAJOR not found in $PG_BIN"
  if [[ -n "${PG_PORT:-}" ]]; then
    [[ "$PG_PORT" =~ ^[0-9]+$ ]] && ((PG_PORT >= 1 && PG_PORT <= 65535)) || die "PG_PORT must be a port number (1-65535), not \"$PG_PORT\""
  fi
  [[ -f "/usr/share/postgresql/$PG_MAJOR/extension/vector.control" ]] \
    || die "pgvector is not installed for PostgreSQL $PG_MAJOR: run scripts/postgres/install-pgvector.sh"

  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd -P)"
  if [[ -f "$dir/$MARKER" ]] && is_running; then
    log "already running in $dir"
    cat "$dir/url"
    return 0
  fi
  [[ -z "$(ls -A "$dir")" ]] || die "$dir is not empty"
  touch "$dir/$MARKER"
  mkdir -p "$dir/run"
  if [[ "$(id -u)" -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "no \"postgres\" system user to run the server as"
    chown -R postgres: "$dir"
  fi
  chmod 700 "$dir"

  local started=$EPOCHREALTIME
  log "initdb $dir/data (PostgreSQL $PG_MAJOR, UTF8, locale C, trust auth)"
  run_as_pg "$PG_BIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync --no-instructions \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }

  cat >>"$dir/data/postgresql.conf" <<CONF

# --- throwaway test cluster (scripts/postgres/cluster.sh) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir/run'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
include = 'port.conf'
CONF

  local port attempt
  for attempt in 1 2 3; do
    port="${PG_PORT:-$(free_port)}"
    echo "port = $port" >"$dir/data/port.conf"
    [[ "$(id -u)" -ne 0 ]] || chown postgres: "$dir/data/port.conf"
    log "pg_ctl start on 127.0.0.1:$port"
    if run_as_pg "$PG_BIN/pg_ctl" start -w -t 60 -s -D "$dir/data" -l "$dir/postgres.log" >/dev/null 2>&1; then
      break
    fi
    if [[ -z "${PG_PORT:-}" ]] && ((attempt < 3)) && grep -q 'could not bind\|Address already in use' "$dir/postgres.log" 2>/dev/null; then
      log "port $port was taken meanwhile, retrying"
      continue
    fi
    tail -n 30 "$dir/postgres.log" >&2 || true
    die "pg_ctl start failed (log: $dir/postgres.log)"
  done

  log "create extension vector in template1 and postgres"
  local db
  for db in template1 postgres; do
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" \
      -c 'CREATE EXTENSION IF NOT EXISTS vector' >&2 || die "create extension vector failed in $db"
  done

  local url="postgres://postgres@127.0.0.1:$port/postgres"
  echo "$url" >"$dir/url"
  log "ready in $(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')s: $url"
  echo "$url"
}

cmd_stop() {
  if [[ ! -e "$dir" ]]; then
    log "$dir does not exist, nothing to stop"
    return 0
  fi
  dir="$(cd "$dir" && pwd -P)"
  # Refuse to delete anything that this script did not create (an empty dir, e.g. from a failed start, is removed).
  if [[ ! -f "$dir/$MARKER" ]]; then
    if [[ -z "$(ls -A "$dir")" ]]; then
      log "rmdir $dir (empty)"
      rmdir "$dir"
      return 0
    fi
    die "$dir is not a cluster made by this script (no $MARKER), leaving it alone"
  fi
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    log "pg_ctl stop -m fast ($dir/data)"
    run_as_pg "$PG_BIN/pg_ctl" stop -w -t 30 -s -m fast -D "$dir/data" >&2 \
      || run_as_pg "$PG_BIN/pg_ctl" stop -w -t 30 -s -m immediate -D "$dir/data" >&2 \
      || log "warning: pg_ctl stop failed"
  fi
  log "rm -rf $dir"
  rm -rf "$dir"
}

# The cluster in <dir> must be one this script made (pause/resume).
own_cluster() {
  [[ -d "$dir" ]] || die "$dir does not exist"
  dir="$(cd "$dir" && pwd -P)"
  [[ -f "$dir/$MARKER" && -f "$dir/url" ]] || die "$dir is not a cluster made by this script"
}

cmd_pause() {
  own_cluster
  if ! is_running; then
    log "not running in $dir"
    return 0
  fi
  log "pg_ctl stop -m fast ($dir/data), keeping the data"
  run_as_pg "$PG_BIN/pg_ctl" stop -w -t 30 -s -m fast -D "$dir/data" >&2 || die "pg_ctl stop failed"
}

cmd_resume() {
  own_cluster
  if is_running; then
    log "already running in $dir"
  else
    # The port is kept in data/port.conf: clients reconnect to the same address.
    log "pg_ctl start ($dir/data)"
    run_as_pg "$PG_BIN/pg_ctl" start -w -t 60 -s -D "$dir/data" -l "$dir/postgres.log" >/dev/null 2>&1 \
      || { tail -n 30 "$dir/postgres.log" >&2 || true; die "pg_ctl start failed (log: $dir/postgres.log)"; }
  fi
  cat "$dir/url"
}

[[ $# -eq 2 && -n "$2" ]] || usage
dir="$2"
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  pause) cmd_pause ;;
  resume) cmd_resume ;;
  *) usage ;;
esac
