#!/usr/bin/env bash
# ws-steady.sh — the steady state of the capacity bench, decomposed: server CPU per
# viewer per 2 s message with every viewer connected, for
#   push-A, push-B  Streambed pushing over WebSocket (two binaries, A and B, for A/Bs)
#   nginx           nginx serving the same live segments by pull (as in
#                   bench/ws-capacity-nginx.sh: Streambed writes the archive and
#                   answers the MPD, nginx serves the segment files)
#   floor           bench/ws-floor: one prebuilt frame of the segment's size
#                   writev()n to each of N loopback sockets every 2 s, read by N
#                   goroutines on the other core: the kernel's data path alone
#   floor-sendfile  the same, the header by send(MSG_MORE) and the payload from a
#                   memfd by sendfile: no copy on the sender's side, as nginx's sendfile
#   floor-sendfile1 header and payload in one memfd, one sendfile per socket
#   floor-sendfile1-file  the same from a regular file in /tmp (the page cache of a
#                   file written at once, as nginx's archive: large folios on ext4)
# Each server runs pinned to core 0 (Go ones with GOMAXPROCS=1) in a cpuacct cgroup of
# its own, no quota; the clients run on core 1. CLIENTS viewers start over RAMP and
# stay; after SETTLE the CPU is read over WINDOW_PERIODS whole 2 s periods, starting 1 s
# after a burst (so the window holds whole bursts): CPU per message = the cgroup's
# cpuacct.usage delta ÷ the messages (push: streambed_ws_chunks_total; nginx:
# stub_status requests; floor: frames written). perf stat (task-clock, context
# switches) runs over the same window. Runs alternate A/B order per pair.
#
# Usage: sudo A=/path/streambed-a B=/path/streambed-b bench/ws-steady.sh
# env: PAIRS=3 CLIENTS=4000 RAMP=16s SETTLE=8 WINDOW_PERIODS=10 KINDS="push-A push-B nginx floor"
#      PROFILE=1 (a last, unmeasured round with perf record -g and the Go CPU profile;
#      bench/perf-classify.py splits each server's samples into parts: KIND-profile.parts.md)
#      XMIT=1 (a last, unmeasured round with perf record -g -e net:net_dev_xmit: the
#      packets each server sends by size and cause, KIND-xmit.md)
#      A_GODEBUG= B_GODEBUG= PORT=19560 OUT=docs/results/wspush-capacity/DATE-steady
# Needs root (cgroups), nginx, perf, taskset, curl, python3, go (to build ws-floor).
set -euo pipefail
cd "$(dirname "$0")/.."
A=${A:?A=path of streambed binary A}
B=${B:-$A}
BIN=$A
PAIRS=${PAIRS:-3}
CLIENTS=${CLIENTS:-4000}
RAMP=${RAMP:-16s}
SETTLE=${SETTLE:-8}
WINDOW_PERIODS=${WINDOW_PERIODS:-10}
KINDS=${KINDS:-push-A push-B nginx floor}
PROFILE=${PROFILE:-0}
# Pull clients ask this long after a segment's nominal availability: nginx serves the
# archive, which has a video segment only once it is complete, up to ≈ 1 s later (at
# once, every pull client of a steady run fails on a 404 within two segments).
PULL_DELAY=${PULL_DELAY:-1500ms}
PORT=${PORT:-19560}
NGX_PORT=$((PORT + 1))
FLOOR_PORT=$((PORT + 2))
OUT=${OUT:-docs/results/wspush-capacity/$(date -u +%Y-%m-%d)-steady}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
ACCT=/sys/fs/cgroup/cpuacct
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
cap_require ws-steady nginx perf taskset curl python3 go
cap_package "$ASSETS" cap 180p:100k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
chmod 755 "$work"
go build -o "$work/ws-floor" ./bench/ws-floor
ramp_s=${RAMP%s}
duration=$((ramp_s + SETTLE + 2 * WINDOW_PERIODS + 8))
LOAD_PID= FLOOR_PID= NGX_MASTER=
cleanup() {
  cap_stop
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null || true
  [ -n "$FLOOR_PID" ] && kill "$FLOOR_PID" 2>/dev/null || true
  [ -n "$NGX_MASTER" ] && kill "$NGX_MASTER" 2>/dev/null || true
  sleep 0.5
  rmdir "$ACCT/sb-steady-srv" "$ACCT/sb-steady-aux" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$ACCT/sb-steady-srv" "$ACCT/sb-steady-aux"
printf '{"command":"bench/ws-steady.sh","a":"%s","b":"%s","a_godebug":"%s","b_godebug":"%s","commit":"%s","cores":%s,"pairs":%s,"clients":%s,"ramp":"%s","settle_s":%s,"window_periods":%s,"pull_delay":"%s","loadavg_before":"%s","note":"machine shared with four other engineers; load averages of the whole machine"}\n' \
  "$A" "$B" "${A_GODEBUG-}" "${B_GODEBUG-}" "$(git rev-parse --short HEAD 2>/dev/null)" "$(nproc)" "$PAIRS" "$CLIENTS" "$RAMP" "$SETTLE" "$WINDOW_PERIODS" "$PULL_DELAY" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/info.json"

# serve BIN GODEBUG PORT [CHANNEL...] — the origin on core 0, GOMAXPROCS=1 (SB_PID).
serve() {
  local bin=$1 gd=$2 port=$3; shift 3
  local args=(serve --http "127.0.0.1:$port" --https "" --assets "$ASSETS" --no-demo --log-level warn)
  local c; for c in "$@"; do args+=(--channel "$c"); done
  [ -n "${SB_CPUPROFILE:-}" ] && args+=(--cpuprofile "$SB_CPUPROFILE")
  GOMAXPROCS=1 GODEBUG=$gd taskset -c 0 "$bin" "${args[@]}" > "$work/sb-$port.log" 2>&1 &
  SB_PID=$!
  local i
  for i in $(seq 50); do curl -sf "http://127.0.0.1:$port/live/seg/manifest.mpd" >/dev/null && return 0; sleep 0.2; done
  echo "streambed did not start:"; cat "$work/sb-$port.log"; exit 1
}

usage_ns() { cat "$ACCT/sb-steady-srv/cpuacct.usage"; }
metric() { { curl -sf "http://127.0.0.1:$PORT/metrics" || true; } | awk -v m="$1" '$1==m{printf "%d\n", $2; f=1} END{if(!f) print 0}'; }
nginx_requests() { curl -sf "http://127.0.0.1:$NGX_PORT/nginx_status" | awk 'NR==3{print $3}'; }
floor_frames() { cat "$work/floor.status" 2>/dev/null || echo 0; }

# window KIND COUNTER PIDS — wait for a burst (COUNTER moves), then 1 s, then read CPU,
# counters and perf stat over WINDOW_PERIODS periods; writes OUT/KIND-I.window.json.
window() {
  local name=$1 counter=$2 pids=$3
  local c0 c i
  c0=$($counter)
  for i in $(seq 100); do c=$($counter); [ "$c" != "$c0" ] && break; sleep 0.1; done
  sleep 1
  local u0 m0 h0 u1 m1 h1 secs=$((2 * WINDOW_PERIODS))
  u0=$(usage_ns); m0=$($counter); h0=$(metric streambed_ws_fanout_handoffs_total)
  # net:net_dev_xmit counted (not sampled: no cost per packet worth measuring) in the
  # server's processes: the packets it puts on lo, its receivers' ACKs included when
  # the kernel sends them in its context.
  perf stat -x, -e task-clock,context-switches,cpu-migrations,net:net_dev_xmit -p "$pids" -o "$OUT/$name.perfstat.csv" -- sleep "$secs" 2>/dev/null
  u1=$(usage_ns); m1=$($counter); h1=$(metric streambed_ws_fanout_handoffs_total)
  local xmit
  xmit=$(awk -F, '$3=="net:net_dev_xmit"{printf "%d", $1; f=1} END{if(!f) print 0}' "$OUT/$name.perfstat.csv")
  printf '{"kind":"%s","clients":%s,"window_s":%s,"cpu_ns":%s,"messages":%s,"handoffs":%s,"us_per_message":%s,"packets":%s,"packets_per_message":%s,"cores":%s,"loadavg":"%s"}\n' \
    "$name" "$CLIENTS" "$secs" $((u1 - u0)) $((m1 - m0)) $((h1 - h0)) \
    "$(awk -v u=$((u1 - u0)) -v m=$((m1 - m0)) 'BEGIN{printf "%.2f", m ? u/1000/m : 0}')" \
    "$xmit" "$(awk -v x="$xmit" -v m=$((m1 - m0)) 'BEGIN{printf "%.3f", m ? x/m : 0}')" \
    "$(awk -v u=$((u1 - u0)) -v s="$secs" 'BEGIN{printf "%.4f", u/1e9/s}')" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/$name.window.json"
}

# xmit KIND COUNTER PIDS — an unmeasured window (XMIT=1): every packet the server puts
# on lo, with its call chain, by size and cause (bench/xmit-classify.py).
xmit() {
  local name=$1 counter=$2 pids=$3 m0 m1 c i
  m0=$($counter) # whole periods from 1 s after a burst, as window does
  for i in $(seq 100); do c=$($counter); [ "$c" != "$m0" ] && break; sleep 0.1; done
  sleep 1
  m0=$($counter)
  # the counter is read when the window ends, not after perf's exit (writing the
  # stacks out can take past the next burst)
  perf record -q -g -e net:net_dev_xmit -p "$pids" -o "$work/xmit.data" -- sleep $((2 * WINDOW_PERIODS)) >/dev/null 2>&1 &
  local rec=$!
  sleep $((2 * WINDOW_PERIODS))
  m1=$($counter)
  wait "$rec" || true
  perf script -i "$work/xmit.data" 2>/dev/null | tee >(gzip > "$OUT/$name-xmit.script.gz") | python3 bench/xmit-classify.py $((m1 - m0)) > "$OUT/$name-xmit.md" || true
}

# load URL TRANSPORT FILE — the clients on core 1, in the background (LOAD_PID).
load() {
  taskset -c 1 "$A" load "$1" --json --quiet --transport "$2" --tracks v180 --clients "$CLIENTS" --pull-delay "$PULL_DELAY" \
    --duration "${duration}s" --ramp "$RAMP" > "$OUT/$3.load.json" 2>"$work/load.err" &
  LOAD_PID=$!
}

run_push() { # run_push A|B I
  local bin=$A gd=${A_GODEBUG-}; [ "$1" = B ] && { bin=$B; gd=${B_GODEBUG-}; }
  serve "$bin" "$gd" "$PORT" seg=cap
  echo "$SB_PID" > "$ACCT/sb-steady-srv/cgroup.procs"
  load "http://127.0.0.1:$PORT/live/seg/manifest.mpd" ws "push-$1-$2"
  sleep $((ramp_s + SETTLE))
  if [ "$2" = xmit ]; then
    xmit "push-$1" "metric streambed_ws_chunks_total" "$SB_PID"
  elif [ "$2" = profile ]; then
    perf record -F 999 -g -p "$SB_PID" -o "$work/perf.data" -- sleep $((2 * WINDOW_PERIODS)) 2>/dev/null
    perf report -i "$work/perf.data" --no-children --percent-limit 0.5 --stdio 2>/dev/null | head -400 > "$OUT/push-$1-profile.perf.txt" || true
    perf script -i "$work/perf.data" 2>/dev/null | tee >(gzip > "$OUT/push-$1-profile.script.gz") | python3 bench/perf-classify.py > "$OUT/push-$1-profile.parts.md" || true
  else
    window "push-$1-$2" "metric streambed_ws_chunks_total" "$SB_PID"
  fi
  wait "$LOAD_PID" || true; LOAD_PID=
  cap_stop
}

run_nginx() { # run_nginx I
  local arch=$work/archive
  serve "$A" "" "$PORT" "seg=cap,archive=$arch"
  echo "$SB_PID" > "$ACCT/sb-steady-aux/cgroup.procs"
  cap_nginx "$arch" "$PORT" "$ACCT/sb-steady-srv" "location = /nginx_status { stub_status; }"
  NGX_MASTER=${NGX_PIDS%% *}
  load "http://127.0.0.1:$NGX_PORT/live/seg/manifest.mpd" http1 "nginx-$1"
  sleep $((ramp_s + SETTLE))
  if [ "$1" = xmit ]; then
    xmit nginx nginx_requests "$(echo $NGX_PIDS | tr ' ' ',')"
  elif [ "$1" = profile ]; then
    perf record -F 999 -g -p "$(echo $NGX_PIDS | tr ' ' ',')" -o "$work/perf.data" -- sleep $((2 * WINDOW_PERIODS)) 2>/dev/null
    perf report -i "$work/perf.data" --no-children --percent-limit 0.5 --stdio 2>/dev/null | head -400 > "$OUT/nginx-profile.perf.txt" || true
    perf script -i "$work/perf.data" 2>/dev/null | tee >(gzip > "$OUT/nginx-profile.script.gz") | python3 bench/perf-classify.py > "$OUT/nginx-profile.parts.md" || true
  else
    window "nginx-$1" nginx_requests "$(echo $NGX_PIDS | tr ' ' ',')"
  fi
  wait "$LOAD_PID" || true; LOAD_PID=
  kill "$NGX_MASTER"; NGX_MASTER=
  cap_stop
}

run_floor() { # run_floor I MODE — the frames have the asset's segment sizes, in turn
  local size name=floor mode=${2:-writev}
  [ "$mode" = writev ] || name=floor-$mode
  size=$(stat -c %s "$ASSETS/cap/v180/"[0-9]*.m4s | paste -sd, -)
  rm -f "$work/floor.status"
  taskset -c 0 env GOMAXPROCS=1 "$work/ws-floor" write -listen "127.0.0.1:$FLOOR_PORT" -n "$CLIENTS" -size "$size" -mode "$mode" \
    -for "$((SETTLE + 2 * WINDOW_PERIODS + 6))s" -status "$work/floor.status" > "$OUT/$name-$1.writer.json" &
  FLOOR_PID=$!
  echo "$FLOOR_PID" > "$ACCT/sb-steady-srv/cgroup.procs"
  sleep 0.3
  taskset -c 1 "$work/ws-floor" read -connect "127.0.0.1:$FLOOR_PORT" -n "$CLIENTS" &
  local rd=$!
  sleep $((SETTLE))
  if [ "$1" = xmit ]; then
    xmit "$name" floor_frames "$FLOOR_PID"
  elif [ "$1" = profile ]; then
    perf record -F 999 -g -p "$FLOOR_PID" -o "$work/perf.data" -- sleep $((2 * WINDOW_PERIODS)) 2>/dev/null
    perf report -i "$work/perf.data" --no-children --percent-limit 0.5 --stdio 2>/dev/null | head -400 > "$OUT/$name-profile.perf.txt" || true
    perf script -i "$work/perf.data" 2>/dev/null | tee >(gzip > "$OUT/$name-profile.script.gz") | python3 bench/perf-classify.py > "$OUT/$name-profile.parts.md" || true
  else
    window "$name-$1" floor_frames "$FLOOR_PID"
  fi
  wait "$FLOOR_PID" || true; FLOOR_PID=
  wait "$rd" || true
}

run_kind() { # run_kind KIND I
  case $1 in
  push-A) run_push A "$2" ;;
  push-B) run_push B "$2" ;;
  nginx) run_nginx "$2" ;;
  floor) run_floor "$2" writev ;;
  floor-sendfile) run_floor "$2" sendfile ;;
  floor-sendfile1) run_floor "$2" sendfile1 ;;
  floor-sendfile1-file) run_floor "$2" sendfile1-file ;;
  *) echo "ws-steady: unknown kind $1" >&2; exit 2 ;;
  esac
}

for i in $(seq "$PAIRS"); do
  kinds=($KINDS)
  if [ $((i % 2)) = 0 ]; then # alternate the order: B before A in even pairs
    mapfile -t kinds < <(printf '%s\n' "${kinds[@]}" | tac)
  fi
  for k in "${kinds[@]}"; do echo "== pair $i: $k"; run_kind "$k" "$i"; done
done
if [ "$PROFILE" = 1 ]; then
  for k in $KINDS; do
    echo "== profile: $k"
    if [ "$k" = push-A ] || [ "$k" = push-B ]; then
      SB_CPUPROFILE="$OUT/$k.pprof" run_kind "$k" profile
      bin=$A; [ "$k" = push-B ] && bin=$B
      go tool pprof -top -nodecount 60 "$bin" "$OUT/$k.pprof" > "$OUT/$k.pprof.txt" 2>/dev/null || true
    else
      run_kind "$k" profile
    fi
  done
fi
if [ "${XMIT:-0}" = 1 ]; then
  for k in $KINDS; do echo "== packets: $k"; run_kind "$k" xmit; done
fi
cut -d' ' -f1-3 /proc/loadavg > "$OUT/loadavg-after.txt"

python3 bench/ws-steady-summary.py "$OUT" "$PAIRS" "$KINDS" | tee "$OUT/summary.txt"
