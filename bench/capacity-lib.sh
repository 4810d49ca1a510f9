# capacity-lib.sh — what bench/ws-capacity.sh and bench/ws-capacity-nginx.sh share:
# root and tool checks, packaging an asset once, cgroup v1 CPU quotas, starting
# `streambed serve` pinned to core 0, and running `streambed load` pinned to core 1
# with its JSON written to a file. Sourced, not run. Expects BIN, OUT and a work folder
# $work; sets SB_PID.

CG=/sys/fs/cgroup/cpu
CG_PERIOD=${CG_PERIOD:-10000} # µs; the kernel wants a quota of at least 1000 µs (0.05 core: CG_PERIOD=20000)

# cap_require NAME TOOL... — root, the tools, the cgroup controller, the binary.
cap_require() {
  local name=$1; shift
  [ "$(id -u)" = 0 ] || { echo "$name: run as root (it puts the servers in cgroups with a CPU quota)" >&2; exit 1; }
  local c
  for c in "$@"; do command -v "$c" >/dev/null || { echo "$name: $c not found (make bench-ws-capacity installs it)" >&2; exit 1; }; done
  [ -d "$CG" ] || { echo "$name: no cgroup v1 cpu controller at $CG" >&2; exit 1; }
  [ -x "$BIN" ] || { echo "$name: $BIN missing (make build)" >&2; exit 1; }
}

# cap_package DIR NAME LADDER — package an 8 s synthetic asset with 2 s segments once.
cap_package() {
  if [ ! -f "$1/$2/stream.json" ]; then
    echo "== packaging $2 ($3 + 64 kbit/s audio, 8 s, 2 s segments) into $1/$2"
    "$BIN" package --synthetic 8s --ladder "$3" --audio-bitrate 64k --segment-duration 2s --preset ultrafast --name "$2" -o "$1/$2"
  fi
}

# cap_cgroup NAME QUOTA — a cgroup holding its processes to QUOTA of a core.
cap_cgroup() {
  mkdir -p "$CG/$1"
  echo $CG_PERIOD > "$CG/$1/cpu.cfs_period_us"
  awk -v q="$2" -v p=$CG_PERIOD 'BEGIN{printf "%d\n", q*p}' > "$CG/$1/cpu.cfs_quota_us"
}

# cap_uncgroup NAME... — remove cgroups (their processes must have ended).
cap_uncgroup() { local g; for g in "$@"; do rmdir "$CG/$g" 2>/dev/null || true; done; }

# cap_serve PORT ASSETS GOMAXPROCS TASKSET CHANNEL... — start the origin in the
# background (TASKSET: a core list for taskset, or "" for none) and wait for its MPD.
cap_serve() {
  local port=$1 assets=$2 procs=$3 cores=$4; shift 4
  # A server already on the port would answer the readiness check below and be
  # measured instead of ours (soak run 3 measured another engineer's load that way).
  if ss -Htln "sport = :$port" | grep -q .; then
    echo "port $port is already in use (another bench or server?): set PORT=... to a free port" >&2; exit 1
  fi
  local args=(serve --http "127.0.0.1:$port" --https "" --assets "$assets" --no-demo --log-level warn)
  local c; for c in "$@"; do args+=(--channel "$c"); done
  local pin=(); [ -n "$cores" ] && pin=(taskset -c "$cores")
  # SB_GODEBUG, when set, is the origin's GODEBUG (not the load generator's): e.g.
  # schedtrace=3600000, which keeps Go's monitor thread from sleeping deeply and being
  # woken at every idle-to-busy turn (docs/results/wspush-capacity.md, 2026-11-24 night).
  local genv=(); [ -n "${SB_GODEBUG+x}" ] && genv=(env "GODEBUG=$SB_GODEBUG")
  GOMAXPROCS=$procs "${genv[@]}" "${pin[@]}" "$BIN" "${args[@]}" > "$work/sb-$port.log" 2>&1 &
  SB_PID=$!
  local ch=${1%%=*} i
  for i in $(seq 50); do curl -sf "http://127.0.0.1:$port/live/$ch/manifest.mpd" >/dev/null && return 0; sleep 0.2; done
  echo "streambed did not start:"; cat "$work/sb-$port.log"; exit 1
}

# cap_stop — stop the origin started by cap_serve.
cap_stop() {
  if [ -n "${SB_PID:-}" ]; then
    kill "$SB_PID" 2>/dev/null || true
    wait "$SB_PID" 2>/dev/null || true
  fi
  SB_PID=
}

# cap_load FILE URL [streambed load flags] — streambed load on core 1 (LOAD_CORES, ""
# for no pinning), its JSON into $OUT/FILE.json.
cap_load() {
  local file=$1 url=$2; shift 2
  local pin=(); [ -n "${LOAD_CORES-1}" ] && pin=(taskset -c "${LOAD_CORES-1}")
  echo "== $file: streambed load $url $*"
  "${pin[@]}" "$BIN" load "$url" --json "$@" > "$OUT/$file.json"
}


# cap_nginx ARCHIVE ORIGIN_PORT CGROUP_DIR [EXTRA_LOCATIONS] — nginx (one worker, on
# core 0) pulling the live channel's MPD from the origin and serving its segments from
# the origin's archive on $NGX_PORT, its processes put in CGROUP_DIR; waits for its
# pid file and a few archived segments. Sets NGX_PIDS.
cap_nginx() {
  local arch=$1 origin=$2 cg=$3 extra=${4-}
  cat > "$work/nginx.conf" <<NGX
worker_processes 1;
worker_rlimit_nofile $(ulimit -Hn);
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections $(( $(ulimit -Hn) - 100 )); }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 120s;
  open_file_cache max=10000 inactive=60s;
  types { video/mp4 m4s mp4; application/dash+xml mpd; }
  server {
    listen 127.0.0.1:$NGX_PORT backlog=8192;
    $extra
    location = /live/seg/manifest.mpd { proxy_pass http://127.0.0.1:$origin; }
    location /live/seg/ { alias $arch/; add_header Cache-Control "public, max-age=31536000, immutable"; }
  }
}
NGX
  ulimit -n "$(ulimit -Hn)" # nginx keeps its soft limit; worker_rlimit_nofile asks for more
  rm -f "$work/nginx.pid"
  taskset -c 0 nginx -c "$work/nginx.conf" -e "$work/nginx-error.log"
  local i p; for i in $(seq 50); do [ -s "$work/nginx.pid" ] && break; sleep 0.1; done
  NGX_PIDS="$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')"
  for p in $NGX_PIDS; do echo "$p" > "$cg/cgroup.procs"; done
  sleep 4 # a few segments in the archive
}
