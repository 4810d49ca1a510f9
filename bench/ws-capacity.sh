#!/usr/bin/env bash
# ws-capacity.sh — the WebSocket study's capacity test (test bed B) for Streambed
# alone: how many live viewers one origin keeps in real time over WebSocket push (ws),
# HTTP/1.1 pull (http1) and HTTP/2 pull (http2, h2c), what they cost it, and the
# memory per push socket. Every table of docs/results/wspush-capacity.md except the
# nginx one (bench/ws-capacity-nginx.sh) comes from one of these parts; each writes
# the JSON of `streambed load --json` (every step: clients keeping up, received
# bitrates, origin CPU and memory) to OUT/PART[-...].json:
#
#   equal-cpu      origin pinned to core 0, GOMAXPROCS=1, in a cgroup held to
#                  CPU_QUOTA of a core; v180 (≈ 100 kbit/s) in 2 s chunks (channel
#                  seg); ws, http1, http2 at CLIENTS, then ws alone at WS_MORE and
#                  http1 alone at HTTP1_MORE                 → equal-cpu*.json
#   unconstrained  the same origin without the quota, at UNCONSTRAINED clients;
#                  then v360+a64 (≈ 520 kbit/s) with GOMAXPROCS=2, not pinned; then
#                  the one-frame-chunk channel live, v360+a64, origin and clients
#                  sharing both cores                         → unconstrained*.json
#   memory         idle push sockets (never start) at IDLE clients; streaming push
#                  sessions, one-frame chunks v360+a64 and 2 s chunks v180, each
#                  client count on a fresh origin               → memory-*.json
#
# Usage: sudo bench/ws-capacity.sh [PART...]   (default: all three; `make bench-ws-capacity`)
# env: OUT=docs/results/wspush-capacity/DATE CPU_QUOTA=0.15 DURATION=20s
#      CLIENTS=500,1000,1500,2000,3000 WS_MORE=4000,5000,6000 HTTP1_MORE=2500
#      UNCONSTRAINED=1000,2000,4000,6000 IDLE=2000,10000 STREAMING=500,1000
# Needs root (cgroups), taskset, curl; about (steps × (DURATION + 10 s)) per part —
# an hour for all. Run it on a machine without other work: the figures are CPU costs.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
OUT=${OUT:-docs/results/wspush-capacity/$(date -u +%Y-%m-%d)}
CPU_QUOTA=${CPU_QUOTA:-0.15}
DURATION=${DURATION:-20s}
CLIENTS=${CLIENTS:-500,1000,1500,2000,3000}
WS_MORE=${WS_MORE-4000,5000,6000}
HTTP1_MORE=${HTTP1_MORE-2500}
UNCONSTRAINED=${UNCONSTRAINED:-1000,2000,4000,6000}
IDLE=${IDLE:-2000,10000}
STREAMING=${STREAMING:-500,1000}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
PORT=${PORT:-18731}
PARTS=("$@"); [ ${#PARTS[@]} -gt 0 ] || PARTS=(equal-cpu unconstrained memory)
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
cap_require ws-capacity taskset curl
cap_package "$ASSETS" test 180p:100k,360p:400k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'cap_stop; cap_uncgroup sb-cap-quota; rm -rf "$work"' EXIT
CHANNELS=(seg=test live=test,chunk=40ms)
SEG=http://127.0.0.1:$PORT/live/seg/manifest.mpd
run_info() { # the conditions of a part, beside its JSON
  printf '{"part":"%s","command":"bench/ws-capacity.sh %s","commit":"%s","cores":%s,"cpu_quota":%s,"duration":"%s","loadavg_before":"%s"}\n' \
    "$1" "$1" "$(git rev-parse --short HEAD 2>/dev/null)" "$(nproc)" "${2:-null}" "$DURATION" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/$1.info.json"
}

for part in "${PARTS[@]}"; do
  case $part in
  equal-cpu)
    run_info equal-cpu "$CPU_QUOTA"
    cap_cgroup sb-cap-quota "$CPU_QUOTA"
    cap_serve "$PORT" "$ASSETS" 1 0 "${CHANNELS[@]}"
    echo "$SB_PID" > "$CG/sb-cap-quota/cgroup.procs"
    common=(--tracks v180 --duration "$DURATION" --ramp 4s --pause 5s)
    cap_load equal-cpu "$SEG" --transport ws,http1,http2 --clients "$CLIENTS" "${common[@]}"
    [ -n "$WS_MORE" ] && cap_load equal-cpu-ws-more "$SEG" --transport ws --clients "$WS_MORE" "${common[@]}"
    [ -n "$HTTP1_MORE" ] && cap_load equal-cpu-http1-more "$SEG" --transport http1 --clients "$HTTP1_MORE" "${common[@]}"
    cap_stop
    cap_uncgroup sb-cap-quota
    ;;
  unconstrained)
    run_info unconstrained
    cap_serve "$PORT" "$ASSETS" 1 0 "${CHANNELS[@]}"
    cap_load unconstrained "$SEG" --tracks v180 --transport ws,http1,http2 --clients "$UNCONSTRAINED" --duration "$DURATION" --ramp 4s --pause 5s
    cap_stop
    cap_serve "$PORT" "$ASSETS" 2 "" "${CHANNELS[@]}"
    cap_load unconstrained-v360 "$SEG" --tracks v360,a64 --transport ws,http1,http2 --clients 1000,2000,4000 --duration "$DURATION" --ramp 4s --pause 5s
    LOAD_CORES="" cap_load unconstrained-lowlatency "ws://127.0.0.1:$PORT/ws/live" --tracks v360,a64 --transport ws --clients 500,1000,2000,3000 --duration "$DURATION" --ramp 4s --pause 5s
    cap_stop
    ;;
  memory)
    run_info memory
    cap_serve "$PORT" "$ASSETS" 1 0 "${CHANNELS[@]}"
    cap_load memory-idle "ws://127.0.0.1:$PORT/ws/live" --transport ws --idle --clients "$IDLE" --duration "$DURATION" --ramp 8s --pause 5s
    cap_stop
    # Each streaming count on an origin of its own: a step's baseline heap read after
    # an earlier step still holds that step's garbage (collected during the next
    # step, it made per-session figures negative).
    for n in ${STREAMING//,/ }; do
      cap_serve "$PORT" "$ASSETS" 1 0 "${CHANNELS[@]}"
      cap_load "memory-streaming-frames-$n" "ws://127.0.0.1:$PORT/ws/live" --tracks v360,a64 --transport ws --clients "$n" --duration 15s --ramp 4s
      cap_stop
      cap_serve "$PORT" "$ASSETS" 1 0 "${CHANNELS[@]}"
      cap_load "memory-streaming-seg-$n" "$SEG" --tracks v180 --transport ws --clients "$n" --duration 15s --ramp 4s
      cap_stop
    done
    ;;
  *) echo "ws-capacity: unknown part $part (equal-cpu, unconstrained, memory)" >&2; exit 2 ;;
  esac
done
echo "wrote $OUT"
