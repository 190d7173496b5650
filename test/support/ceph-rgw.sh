#!/usr/bin/env bash
# A throwaway single-node Ceph RGW (Debian 12's Ceph 16, "Pacific") on
# loopback, so the S3 store is tested against a real server that enforces
# conditional writes (If-None-Match / If-Match). No Docker, nothing installed
# system-wide: the packages are fetched with `apt-get download` and unpacked
# with `dpkg -x` into a cache folder that later runs reuse.
#
#   bash test/support/ceph-rgw.sh start DIR   # start; writes DIR/env
#   bash test/support/ceph-rgw.sh stop DIR    # stop all daemons, remove state
#   bash test/support/ceph-rgw.sh status DIR  # exit 0 if running
#
# DIR/env holds KEY=VALUE lines for the S3 suites (load them with
# `set -a; . DIR/env; set +a`): AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, AWS_REGION, S3_FORCE_PATH_STYLE,
# SLIVINGDOC_TEST_S3_BUCKET, and SLIVINGDOC_TEST_S3_WRITER and
# SLIVINGDOC_TEST_S3_READER (ACCESS_KEY_ID:SECRET of two users who own
# nothing, arn:aws:iam:::user/slivingdoc-writer and …-reader).
#
# Environment:
#   SLIVINGDOC_CEPH_CACHE  unpacked packages (default
#                          ${XDG_CACHE_HOME:-$HOME/.cache}/slivingdoc/ceph)
#   SLIVINGDOC_CEPH_TIMEOUT  seconds to wait for each daemon (default 90)
#   BUN                    the bun binary (default: the project's own)
#
# Facts this relies on: the comments at each setting below, and how RGW
# behaves as an S3 server in docs/s3.md ("Ceph RGW").
# Memory: about 165 MB for the three daemons; memstore keeps the data in RAM,
# so every start is a fresh, empty cluster.

set -euo pipefail

readonly PROG="ceph-rgw.sh"
readonly BUCKET="slivingdoc-test"
# The daemons to fetch; apt resolves the rest of the set (about 64 packages).
readonly PACKAGES=(ceph-mon ceph-osd radosgw)
# Packages that carry binaries this script calls; always unpacked even when
# a system-wide copy of something else in the set makes apt skip them.
readonly ESSENTIAL=(ceph-mon ceph-osd radosgw ceph-base ceph-common librados2 librgw2)
readonly WAIT="${SLIVINGDOC_CEPH_TIMEOUT:-90}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly REPO_ROOT
readonly DAEMONS=(client.rgw osd.0 mon.a) # pid-file names

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
  printf '%s: error: %s\n' "$PROG" "$*" >&2
  exit 1
}
usage() {
  cat >&2 <<EOF
usage: bash test/support/ceph-rgw.sh start DIR
       bash test/support/ceph-rgw.sh stop DIR
       bash test/support/ceph-rgw.sh status DIR
EOF
  exit 2
}

# ---------------------------------------------------------------- packages --

cache_dir() { printf '%s' "${SLIVINGDOC_CEPH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/slivingdoc/ceph}"; }

# The packages of the set that this machine lacks, as apt would install them.
# Debian's own libraries that are already installed (libc, python3, ...) are
# used from the system, exactly as an `apt-get install` would.
simulate_install() {
  local out
  out="$(LC_ALL=C apt-get install -s --no-install-recommends "${PACKAGES[@]}" 2>&1)" || {
    printf '%s\n' "$out" | tail -n 5 >&2
    return 1
  }
  printf '%s\n' "$out" | awk '$1 == "Inst" { print $2 }'
}

# Runs in a subshell so that its EXIT trap removes the scratch folder
# whatever happens; only a complete tree is ever moved into the cache.
fetch_packages() (
  local cache="$1" work list
  command -v apt-get >/dev/null || die "apt-get not found: this script needs Debian 12 (bookworm) or a filled cache at $cache"
  work="$(mktemp -d "$cache/fetch.XXXXXX")"
  # shellcheck disable=SC2064 # expand $work now
  trap "rm -rf '$work'" EXIT

  log "fetching Ceph packages into $cache (once; later runs reuse them)"
  # (An empty list is fine: everything is installed system-wide already, and
  # ESSENTIAL below still puts the programs into the cache.)
  if ! list="$(simulate_install)"; then
    log "resolving packages failed; running apt-get update"
    apt-get update -qq >&2 || die "apt-get update failed (root and network access to the Debian mirror are needed once)"
    list="$(simulate_install)" || die "apt cannot resolve ${PACKAGES[*]} (is this Debian 12?)"
  fi
  # shellcheck disable=SC2086 # one package name per word
  list="$(printf '%s\n' $list "${ESSENTIAL[@]}" | sort -u)"
  # shellcheck disable=SC2086 # one word per package
  if ! (cd "$work" && apt-get download -q $list >"$work/download.log" 2>&1); then
    # Usually stale package lists (the mirror moved on to a newer version).
    log "download failed; running apt-get update and retrying"
    apt-get update -qq >&2 || die "apt-get update failed; see $work/download.log"
    (cd "$work" && apt-get download -q $list >"$work/download.log" 2>&1) || {
      tail -n 20 "$work/download.log" >&2
      die "apt-get download failed"
    }
  fi
  mkdir "$work/root"
  local deb
  for deb in "$work"/*.deb; do
    dpkg -x "$deb" "$work/root"
  done
  printf '%s\n' "$list" >"$work/root/.packages"
  if [ ! -x "$work/root/usr/bin/ceph-mon" ] || [ ! -x "$work/root/usr/bin/radosgw" ]; then
    die "the unpacked packages lack ceph-mon or radosgw"
  fi
  rm -rf "$cache/root"
  mv "$work/root" "$cache/root"
  touch "$cache/root/.complete"
)

# Sets CEPH_ROOT to an unpacked tree with the programs, fetching it if needed.
ensure_packages() {
  local cache
  cache="$(cache_dir)"
  if [ ! -f "$cache/root/.complete" ]; then
    mkdir -p "$cache"
    # Two test runs starting at once must not unpack into each other.
    exec 8>"$cache/.lock"
    flock -w 600 8 || die "timed out waiting for another run to fill $cache"
    [ -f "$cache/root/.complete" ] || fetch_packages "$cache"
    exec 8>&-
  fi
  CEPH_ROOT="$cache/root"
  local lib="$CEPH_ROOT/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$lib:$lib/ceph:$CEPH_ROOT/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONPATH="$CEPH_ROOT/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
  # The `ceph` command is Python; its bindings are built for Debian's python3,
  # not for whatever python3 comes first on PATH (pyenv, conda, ...).
  if [ -x /usr/bin/python3 ]; then
    PYTHON=/usr/bin/python3
  elif [ -x "$CEPH_ROOT/usr/bin/python3" ]; then
    PYTHON="$CEPH_ROOT/usr/bin/python3"
  else
    die "Debian's python3 (/usr/bin/python3) is needed by the ceph command"
  fi
}

# ------------------------------------------------------------- processes --

# Pids of Ceph daemons started with this DIR's ceph.conf: from the pid files,
# and, in case those were lost, from /proc (matching the exact conf path, so
# nothing of another cluster or user is ever touched).
cluster_pids() {
  local dir="$1" conf="$1/ceph.conf" p cmd pids=()
  for p in /proc/[0-9]*; do
    cmd="$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" || continue
    case "$cmd" in
      *ceph-mon\ *|*ceph-osd\ *|*radosgw\ *) ;;
      *) continue ;;
    esac
    case " $cmd " in
      *" $conf "*) pids+=("${p#/proc/}") ;;
    esac
  done
  [ "${#pids[@]}" -eq 0 ] || printf '%s\n' "${pids[@]}"
}

alive() { [ -n "$(cluster_pids "$1")" ]; }

pid_list() {
  local pids
  pids="$(cluster_pids "$1")"
  printf '%s' "${pids//$'\n'/ }"
}

# Clusters of this script in other folders (say, a test run that was killed
# before it could stop its own) do not collide with a new one (free ports are
# chosen), but they hold memory: name them so they can be stopped.
warn_other_clusters() {
  local p cmd conf dirs=""
  for p in /proc/[0-9]*; do
    cmd="$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" || continue
    case "$cmd" in *ceph-mon\ -c\ *) ;; *) continue ;; esac
    conf="${cmd#*ceph-mon -c }"
    conf="${conf%% *}"
    case "$conf" in */ceph.conf) ;; *) continue ;; esac
    [ "${conf%/ceph.conf}" = "$DIR" ] || dirs="$dirs ${conf%/ceph.conf}"
  done
  [ -z "$dirs" ] || log "note: other clusters started by this script are still running in:$dirs (stop each with: bash test/support/ceph-rgw.sh stop DIR)"
}

# shellcheck disable=SC2086 # $pids: numbers, one word each
stop_cluster() {
  local dir="$1" pids deadline n
  # TERM to every daemon at once: memstore has nothing to flush, and the
  # state is thrown away anyway. Pid files first, then whatever /proc still
  # shows for this DIR's ceph.conf (a lost pid file leaves nothing behind).
  for n in "${DAEMONS[@]}"; do
    pids="$(daemon_pid "$dir" "$n")"
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  done
  pids="$(cluster_pids "$dir")"
  [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
  deadline=$((SECONDS + 15))
  while alive "$dir" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
  pids="$(cluster_pids "$dir")"
  if [ -n "$pids" ]; then
    log "daemons did not stop on TERM within 15 s; killing: ${pids//$'\n'/ }"
    kill -KILL $pids 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while alive "$dir" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
    if alive "$dir"; then
      log "error: could not stop: $(pid_list "$dir")"
      return 1
    fi
  fi
}

# The pid of one daemon if its pid file names a live daemon of this cluster.
daemon_pid() {
  local dir="$1" name="$2" pid cmd
  pid="$(cat "$dir/run/$name.pid" 2>/dev/null)" || return 0
  case "$pid" in '' | *[!0-9]*) return 0 ;; esac
  cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" || return 0
  case " $cmd " in
    *" $dir/ceph.conf "*) printf '%s' "$pid" ;;
  esac
}

remove_state() {
  local dir="$1"
  rm -rf "$dir/run" "$dir/data" "$dir/log" "$dir/ceph.conf" "$dir/env" "$dir/env.tmp" \
    "$dir/keyring" "$dir/monmap"
}

# --------------------------------------------------------------- helpers --

# Three distinct free TCP ports on loopback (mon v2, mon v1, gateway), held
# open together while chosen so they differ; a cluster already running
# elsewhere on this machine (on 3300/6789 or anything else) is never hit.
free_ports() {
  "$PYTHON" - <<'EOF'
import socket
socks = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

ceph_cli() { timeout 30 "$PYTHON" "$CEPH_ROOT/usr/bin/ceph" -c "$DIR/ceph.conf" --connect-timeout 10 "$@"; }

# Called when a wait fails: the reason and the end of the daemon's log.
fail_with_log() {
  local what="$1" logfile="$2"
  printf '%s: error: %s\n' "$PROG" "$what" >&2
  if [ -s "$logfile" ]; then
    printf '%s: last lines of %s:\n' "$PROG" "$logfile" >&2
    tail -n 25 "$logfile" | sed 's/^/    /' >&2
  fi
  exit 1
}

# wait_for SECONDS DESCRIPTION DAEMON LOGFILE COMMAND...: polls COMMAND until
# it succeeds; fails with the log tail when the time is up or as soon as
# DAEMON (a pid-file name such as osd.0) has exited.
wait_for() {
  local secs="$1" what="$2" daemon="$3" logfile="$4" deadline
  shift 4
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ -n "$(daemon_pid "$DIR" "$daemon")" ] || fail_with_log "$what exited while starting" "$logfile"
    [ "$SECONDS" -lt "$deadline" ] || fail_with_log "$what did not come up within ${secs} s" "$logfile"
    sleep 0.25
  done
}

osd_up() {
  local stat
  stat="$(ceph_cli osd stat 2>/dev/null)" || return 1
  case "$stat" in *" 1 up"*) return 0 ;; *) return 1 ;; esac
}

http_up() {
  "$PYTHON" - "$1" <<'EOF'
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass  # any HTTP answer means the gateway is serving
EOF
}

# ----------------------------------------------------------------- start --

write_conf() {
  local run="$DIR/run" data="$DIR/data" logs="$DIR/log" lib="$CEPH_ROOT/usr/lib/x86_64-linux-gnu"
  cat >"$DIR/ceph.conf" <<EOF
# Written by test/support/ceph-rgw.sh: a throwaway single-node cluster.
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
# Without these radosgw fails to connect with error -13.
ms mon client mode = crc secure
ms client mode = crc secure
ms mon service mode = crc secure
ms service mode = crc secure
ms mon cluster mode = crc secure
ms cluster mode = crc secure
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
# Otherwise the monitor may stop itself on a nearly full disk.
mon data avail crit = 0
mon data avail warn = 0
# One monitor, no quorum to wait for: commit map changes quickly instead of
# batching them for a second (RGW creates its pools one by one at start).
paxos propose interval = 0.05
paxos min wait = 0.01
# Every path inside DIR (or the unpacked packages): nothing under /var or /etc.
run dir = $run
pid file = $run/\$name.pid
admin socket = $run/\$name.asok
log file = $logs/\$name.log
mon cluster log file = $logs/cluster.log
crash dir = $data/crash
keyring = $DIR/keyring
mon data = $data/mon/\$cluster-\$id
osd data = $data/osd/\$cluster-\$id
rgw data = $data/rgw/\$cluster-\$id
plugin dir = $lib/ceph
erasure code dir = $lib/ceph/erasure-code
osd class dir = $lib/rados-classes

[osd]
osd objectstore = memstore
memstore device bytes = 2147483648
osd max object name len = 460
osd max object namespace len = 64

[client.rgw]
# tcp_nodelay: without it beast leaves Nagle's algorithm on, and each GET
# after another on one keep-alive connection stalls ~40 ms on a delayed ACK,
# which no real S3 endpoint does (measured in docs/performance.md).
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT tcp_nodelay=1
EOF
}

create_bucket() {
  local bun="${BUN:-$REPO_ROOT/node_modules/.bin/bun}"
  [ -x "$bun" ] || bun="$(command -v bun)" || die "bun not found (run npm ci in $REPO_ROOT)"
  # A signed CreateBucket; the SDK is already a dependency of the project.
  (cd "$REPO_ROOT" && env -u LD_LIBRARY_PATH -u PYTHONPATH ENDPOINT="$ENDPOINT" AK="$ACCESS_KEY" SK="$SECRET_KEY" NEW_BUCKET="$BUCKET" timeout 60 "$bun" -e '
    import { S3Client, CreateBucketCommand } from "@aws-sdk/client-s3";
    const e = process.env;
    const s3 = new S3Client({
      endpoint: e.ENDPOINT, region: "us-east-1", forcePathStyle: true,
      credentials: { accessKeyId: e.AK, secretAccessKey: e.SK },
    });
    await s3.send(new CreateBucketCommand({ Bucket: e.NEW_BUCKET }));
    s3.destroy();
  ') >&2
}

STARTED=0
on_start_exit() {
  local rc=$?
  [ "$STARTED" -eq 1 ] && return
  trap - EXIT INT TERM
  log "start did not complete; stopping what was started and removing the state in $DIR"
  stop_cluster "$DIR" || true
  remove_state "$DIR"
  exit $((rc == 0 ? 1 : rc))
}

cmd_start() {
  mkdir -p "$DIR"
  DIR="$(cd "$DIR" && pwd)"
  if alive "$DIR"; then
    die "a cluster is already running in $DIR (pids $(pid_list "$DIR")); stop it first: bash test/support/ceph-rgw.sh stop $DIR"
  fi
  if [ -e "$DIR/ceph.conf" ] || [ -e "$DIR/run" ] || [ -e "$DIR/data" ]; then
    log "removing the stale state of a previous run in $DIR (no daemon of it is running)"
    remove_state "$DIR"
  fi

  warn_other_clusters
  ensure_packages
  local t0=$SECONDS
  trap on_start_exit EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$DIR/run" "$DIR/log" "$DIR/data/mon" "$DIR/data/osd" "$DIR/data/rgw" "$DIR/data/crash"
  export CEPH_CONF="$DIR/ceph.conf"

  FSID="$(cat /proc/sys/kernel/random/uuid)"
  read -r MON_V2 MON_V1 RGW_PORT < <(free_ports)
  [ -n "$RGW_PORT" ] || die "could not pick free ports"
  write_conf
  local bin="$CEPH_ROOT/usr/bin" conf="$DIR/ceph.conf"

  # Monitor.
  "$bin/ceph-authtool" --create-keyring "$DIR/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  "$bin/monmaptool" --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_V2,v1:127.0.0.1:$MON_V1]" "$DIR/monmap" >/dev/null
  "$bin/ceph-mon" -c "$conf" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/keyring" ||
    fail_with_log "ceph-mon --mkfs failed" "$DIR/log/mon.a.log"
  "$bin/ceph-mon" -c "$conf" -i a || fail_with_log "ceph-mon did not start" "$DIR/log/mon.a.log"
  wait_for "$WAIT" "the monitor" mon.a "$DIR/log/mon.a.log" ceph_cli mon stat
  log "monitor up ($((SECONDS - t0)) s)"

  # OSD on memstore (RAM), so nothing is left on disk and start is fast.
  local uuid id
  uuid="$(cat /proc/sys/kernel/random/uuid)"
  id="$(ceph_cli osd new "$uuid")" || fail_with_log "ceph osd new failed" "$DIR/log/mon.a.log"
  [ "$id" = 0 ] || die "expected OSD id 0, got '$id'"
  mkdir -p "$DIR/data/osd/ceph-$id"
  "$bin/ceph-osd" -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1 ||
    fail_with_log "ceph-osd --mkfs failed" "$DIR/log/osd.$id.log"
  "$bin/ceph-osd" -c "$conf" -i "$id" 2>/dev/null || fail_with_log "ceph-osd did not start" "$DIR/log/osd.$id.log"
  wait_for "$WAIT" "the OSD" "osd.$id" "$DIR/log/osd.$id.log" osd_up
  log "OSD up ($((SECONDS - t0)) s)"

  # Gateway.
  "$bin/radosgw" -c "$conf" -n client.rgw || fail_with_log "radosgw did not start" "$DIR/log/client.rgw.log"
  ENDPOINT="http://127.0.0.1:$RGW_PORT"
  wait_for "$WAIT" "radosgw on $ENDPOINT" client.rgw "$DIR/log/client.rgw.log" http_up "$ENDPOINT/"

  # A user with fresh random keys (S3-shaped: 20 upper-case, 40 lower-case).
  ACCESS_KEY="$(hex 10 | tr a-f A-F)"
  SECRET_KEY="$(hex 20)"
  timeout 60 "$bin/radosgw-admin" -c "$conf" user create --uid=slivingdoc-test --display-name=slivingdoc-test \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null 2>"$DIR/log/radosgw-admin.log" ||
    fail_with_log "radosgw-admin user create failed" "$DIR/log/radosgw-admin.log"
  create_bucket 2>"$DIR/log/create-bucket.log" || fail_with_log "creating bucket $BUCKET failed" "$DIR/log/create-bucket.log"
  # Two users who own nothing: the least-privilege tests (test/e2e/least-privilege.test.ts)
  # give them exactly docs/s3.md's writer and reader policies on a bucket of their own.
  local role
  for role in WRITER READER; do
    local ak sk
    ak="$(hex 10 | tr a-f A-F)"
    sk="$(hex 20)"
    timeout 60 "$bin/radosgw-admin" -c "$conf" user create --uid="slivingdoc-$(echo "$role" | tr A-Z a-z)" \
      --display-name="slivingdoc $role" --access-key="$ak" --secret-key="$sk" >/dev/null 2>>"$DIR/log/radosgw-admin.log" ||
      fail_with_log "radosgw-admin user create failed" "$DIR/log/radosgw-admin.log"
    printf -v "${role}_KEYS" '%s:%s' "$ak" "$sk"
  done

  umask 077 # the env file holds the secret key
  cat >"$DIR/env.tmp" <<EOF
AWS_ENDPOINT_URL_S3=$ENDPOINT
AWS_ACCESS_KEY_ID=$ACCESS_KEY
AWS_SECRET_ACCESS_KEY=$SECRET_KEY
AWS_REGION=us-east-1
S3_FORCE_PATH_STYLE=1
SLIVINGDOC_TEST_S3_BUCKET=$BUCKET
SLIVINGDOC_TEST_S3_WRITER=$WRITER_KEYS
SLIVINGDOC_TEST_S3_READER=$READER_KEYS
EOF
  mv "$DIR/env.tmp" "$DIR/env"
  STARTED=1
  trap - EXIT INT TERM
  log "Ceph RGW is up at $ENDPOINT in $((SECONDS - t0)) s; variables in $DIR/env; stop with: bash test/support/ceph-rgw.sh stop $DIR"
}

# ------------------------------------------------------------------ stop --

cmd_stop() {
  [ -d "$DIR" ] || {
    log "nothing to stop: $DIR does not exist"
    return 0
  }
  DIR="$(cd "$DIR" && pwd)"
  stop_cluster "$DIR"
  remove_state "$DIR"
  log "stopped; state removed from $DIR"
}

cmd_status() {
  [ -d "$DIR" ] || die "$DIR does not exist"
  DIR="$(cd "$DIR" && pwd)"
  if alive "$DIR"; then
    echo "running: pids $(pid_list "$DIR")"
  else
    echo "not running"
    return 1
  fi
}

[ $# -eq 2 ] || usage
DIR="$2"
[ -n "$DIR" ] || usage
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) usage ;;
esac
