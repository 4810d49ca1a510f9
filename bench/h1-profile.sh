#!/usr/bin/env bash
# h1-profile.sh — a Go CPU profile of Streambed's lean HTTP/1.1 path under wrk: the
# origin (SERVER_CPU) serves the packaged segments with --cpuprofile while wrk
# (LOAD_CPU, -t1) fetches them over CONNS keep-alive connections for DUR seconds.
# Writes OUT.pprof, OUT-top.txt (flat, the heaviest 60) and OUT-cum.txt (cumulative)
# and the run's req/s to OUT.txt.
#
# Usage: bench/h1-profile.sh BIN   (env: CONNS=200 SECONDS_PER_RUN=10 SERVER_CPU=0
#        LOAD_CPU=1 PORT=18190 OUT=docs/results/origin/profile-DATE)
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "${1:?usage: bench/h1-profile.sh BIN}")
B=$A
CONNS=${CONNS:-200}
DUR=${SECONDS_PER_RUN:-10}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-docs/results/origin/profile-$(date -u +%Y-%m-%dT%H:%MZ)}
ASSET=${ASSET:-.cache/bench/asset}
PORT=${PORT:-18190}
NAME_OF_BENCH=h1-profile
# shellcheck source=bench/ab-lib.sh
. bench/ab-lib.sh
ab_setup wrk curl taskset go
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#/vod/$NAME#" > "$work/urls"
[ -s "$work/urls" ] || { echo "$NAME_OF_BENCH: no segments under $ASSET" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"

taskset -c "$SERVER_CPU" "$A" serve --http "127.0.0.1:$PORT" --https "" --data-dir "$work/data" --assets "$work/assets" \
  --no-demo --channel "x=$NAME" --log-level warn --cpuprofile "$OUT.pprof" > "$work/sb.log" 2>&1 &
PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$(head -1 "$work/urls")" -o /dev/null && break; sleep 0.1; done
URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DUR}s" --timeout 10s -s bench/segments.lua "http://127.0.0.1:$PORT" > "$work/wrk.out"
stop # the profile is written at shutdown
{
  echo "binary $A (sha256 $(sha256sum < "$A" | cut -c1-16)); $CONNS connections, ${DUR}s, server on CPU $SERVER_CPU, wrk -t1 on CPU $LOAD_CPU; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -E "Requests/sec|requests in|Non-2xx|Socket errors" "$work/wrk.out"
} | tee "$OUT.txt"
go tool pprof -top -nodecount 60 "$A" "$OUT.pprof" > "$OUT-top.txt" 2>/dev/null
go tool pprof -top -cum -nodecount 80 "$A" "$OUT.pprof" > "$OUT-cum.txt" 2>/dev/null
echo "profile: $OUT.pprof, $OUT-top.txt, $OUT-cum.txt"
