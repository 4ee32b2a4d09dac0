# Sourced by the install scripts (scripts/install-chromium.sh, scripts/postgres/install-pgvector.sh).
# Needs, from the caller: `log` and APT_LOCK_TIMEOUT (seconds).
#
# apt_get <logfile> <apt-get arguments…>: apt-get on the system's state, its output in <logfile>;
# waits while another apt or dpkg (an unattended upgrade, a parallel provisioning step) holds the
# lock instead of failing at once. apt waits for the dpkg lock itself (DPkg::Lock::Timeout); the
# loop also covers the locks it does not wait for (the lists lock of `apt-get update` on older apt)
# and anything that slips by.
apt_get() {
  local logfile=$1
  shift
  local deadline=$((SECONDS + APT_LOCK_TIMEOUT))
  while :; do
    if apt-get -o "DPkg::Lock::Timeout=$APT_LOCK_TIMEOUT" "$@" >"$logfile" 2>&1; then
      return 0
    fi
    if ((SECONDS < deadline)) \
      && grep -qE 'Could not get lock|Unable to (acquire|lock)|is held by process|dpkg frontend lock' "$logfile"; then
      log "another apt or dpkg holds the lock; retrying in 5 s (gives up after ${APT_LOCK_TIMEOUT}s)"
      sleep 5
      continue
    fi
    return 1
  done
}
