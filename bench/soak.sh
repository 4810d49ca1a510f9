#!/usr/bin/env bash
# soak.sh — the 30-minute mixed soak (docs/results/soak.md): one origin held to the
# CPU budget of the capacity measurements (docs/results/wspush-capacity.md: 0.15 of a
# core, pinned to core 0, GOMAXPROCS=1), the 100 kbit/s channel in 2 s segments, and
# `streambed load --soak` (pinned to core 1) with WebSocket push, HTTP/1.1, HTTP/2 and
# HLS viewers at about half of that budget's measured capacity, joining and leaving,
# some vanishing, some reading slowly. Writes OUT/soak.json (the report: samples,
# slopes, response times per minute, viewers' skips and stalls), OUT/soak.txt (the
# summary) and OUT/soak.info.json (conditions).
#
# env: OUT=docs/results/soak/DATE DURATION=30m CPU_QUOTA=0.15 NICE=-10 WS=1000 HTTP1=1000
#      HTTP2=300 HLS=100 SESSION=60s VANISH=0.2 SLOW=0.02
# Needs root (cgroups), taskset, curl. Usage: sudo bench/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
OUT=${OUT:-docs/results/soak/$(date -u +%Y-%m-%d)}
DURATION=${DURATION:-30m}
CPU_QUOTA=${CPU_QUOTA:-0.15}
# At most half of this mix's measured capacity at this budget (bench/soak-steps.sh,
# docs/results/soak.md "Capacity": ×2 of this mix kept every viewer in real time with
# the origin at 81% of its quota; ×3 did not).
WS=${WS:-1000} HTTP1=${HTTP1:-1000} HTTP2=${HTTP2:-300} HLS=${HLS:-100}
SESSION=${SESSION:-60s} VANISH=${VANISH:-0.2} SLOW=${SLOW:-0.02}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
# The origin and the load generator run at nice NICE (inherited from this shell): on a
# machine shared with other work (Chromium raises its own priority to nice -8), a
# load generator at nice 0 waited seconds for its core and counted its own lateness
# as the origin's stalls (docs/results/soak.md, run 3). The origin stays held to
# CPU_QUOTA by its cgroup whatever its priority.
NICE=${NICE:--10}
PORT=${PORT:-18761}
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
cap_require soak taskset curl
cap_package "$ASSETS" test 180p:100k,360p:400k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'cap_stop; cap_uncgroup sb-soak; rm -rf "$work"' EXIT
printf '{"command":"sudo bench/soak.sh","env":"DURATION=%s CPU_QUOTA=%s NICE=%s WS=%s HTTP1=%s HTTP2=%s HLS=%s SESSION=%s VANISH=%s SLOW=%s","commit":"%s","cores":%s,"loadavg_before":"%s","started":"%s","shared_machine":true}\n' \
  "$DURATION" "$CPU_QUOTA" "$NICE" "$WS" "$HTTP1" "$HTTP2" "$HLS" "$SESSION" "$VANISH" "$SLOW" \
  "$(git rev-parse --short HEAD 2>/dev/null)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u +%FT%TZ)" > "$OUT/soak.info.json"
renice -n "$NICE" -p $$ >/dev/null
cap_cgroup sb-soak "$CPU_QUOTA"
# gctrace: every garbage collection of the origin with its time since start, kept in
# OUT/origin.log beside the run (docs/results/soak.md lays them beside the stalls).
date -u +%s.%N > "$OUT/origin.started"
GODEBUG=gctrace=1 cap_serve "$PORT" "$ASSETS" 1 0 seg=test
echo "$SB_PID" > "$CG/sb-soak/cgroup.procs"
echo "== soak: origin pid $SB_PID (core 0, $CPU_QUOTA of a core), load on core 1, $DURATION"
set +e
date -u +%s.%N > "$OUT/load.started"
taskset -c 1 "$BIN" load --soak "http://127.0.0.1:$PORT/live/seg/manifest.mpd" --tracks v180 \
  --ws "$WS" --http1 "$HTTP1" --http2 "$HTTP2" --hls "$HLS" --duration "$DURATION" \
  --session "$SESSION" --vanish "$VANISH" --slow "$SLOW" --origin-pid "$SB_PID" --origin-cgroup "$CG/sb-soak" \
  --out "$OUT/soak.json" | tee "$OUT/soak.txt"
status=${PIPESTATUS[0]}
set -e
cp "$CG/sb-soak/cpu.stat" "$OUT/soak.cpu.stat" # throttling of the origin's budget
cp "$work/sb-$PORT.log" "$OUT/origin.log"      # its warnings and gctrace lines
echo "== soak exit status $status; report in $OUT"
exit "$status"
