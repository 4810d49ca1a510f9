#!/usr/bin/env bash
# ab-origin.sh — the same origin workloads against two streambed binaries, A and B,
# alternated REPS times: a before/after pair for a change (docs/results/hub-ab.md).
#
# Workloads (origin pinned to core 0 with GOMAXPROCS=1, clients to core 1):
#   ws-live     streambed load: CLIENTS WebSocket push sessions of the looped channel
#               "live" (one-frame chunks, 40 ms), one track, 20 s → origin CPU µs per chunk
#   http1-seg   streambed load: CLIENTS HTTP/1.1 pull clients of channel "seg" (one chunk
#               per segment), one track, 20 s → origin CPU µs per segment response
#   wrk-live    wrk: 50 keep-alive connections fetching the newest complete live
#               segments for 10 s → requests/s and origin CPU µs per request
#   wrk-vod     wrk: 50 connections over every packaged segment file for 10 s
# Raw JSON and wrk output go to OUT/; the summary (medians, min–max) to OUT/summary.md.
#
# Usage: bench/ab-origin.sh A_BIN B_BIN   (env: REPS=3 CLIENTS=1000 OUT=docs/results/hub-ab)
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench/ab-origin.sh A_BIN B_BIN}
B=${2:?usage: bench/ab-origin.sh A_BIN B_BIN}
REPS=${REPS:-3}
CLIENTS=${CLIENTS:-1000}
OUT=${OUT:-docs/results/hub-ab}
PORT=${PORT:-18741}
for p in $PORT; do ss -Htln "sport = :$p" | grep -q . && { echo "ab-origin: port $p is already in use (another bench or server?): set PORT=... to a free port" >&2; exit 1; }; done
ASSET=${ASSET:-.cache/bench/ab-asset/test}
for c in taskset wrk curl jq; do command -v $c >/dev/null || { echo "ab-origin: $c is missing (apt-get install util-linux wrk curl jq)"; exit 1; }; done
mkdir -p "$OUT"
if [ ! -f "$ASSET/stream.json" ]; then
  echo "== packaging an 8 s, 2 s-segment asset into $ASSET"
  "$B" package --synthetic 8s --segment-duration 2s --ladder 180p:128k,360p:400k --audio-bitrate 64k --preset ultrafast --name test -o "$ASSET"
fi
ASSETS=$(cd "$(dirname "$ASSET")" && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

serve() { # BIN → starts the origin, sets SB_PID
  GOMAXPROCS=1 taskset -c 0 "$1" serve --http 127.0.0.1:$PORT --https "" --assets "$ASSETS" --no-demo \
    --channel seg=test --channel live=test,chunk=40ms --log-level warn --data-dir "$work/data" > "$work/sb.log" 2>&1 &
  SB_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/live/seg/manifest.mpd" -o /dev/null && return; sleep 0.1; done
  echo "origin did not start:"; cat "$work/sb.log"; exit 1
}

# wrk over a URL list (Lua from bench/segments.lua), origin CPU measured around it.
wrk_run() { # NAME URLS_FILE → prints "req/s µs/req"
  local t0 t1 out
  t0=$(cpu_ticks "$SB_PID")
  out=$(URLS_FILE="$2" taskset -c 1 wrk -t1 -c50 -d10s -s bench/segments.lua "http://127.0.0.1:$PORT" 2>&1)
  t1=$(cpu_ticks "$SB_PID")
  local rps reqs
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$out" > "$work/last-wrk.txt"
  awk -v r="$rps" -v n="$reqs" -v d="$((t1 - t0))" -v hz="$hz" 'BEGIN {printf "%s %.1f\n", r, d / hz * 1e6 / n}'
}

echo "rep,bin,workload,value,unit,cpu_us_per_unit" > "$OUT/raw.csv"
for rep in $(seq "$REPS"); do
  for side in A B; do
    bin=$A; [ $side = B ] && bin=$B
    echo "== rep $rep, $side ($bin)"
    serve "$bin"
    for wl in ws-live http1-seg; do
      if [ $wl = ws-live ]; then url="ws://127.0.0.1:$PORT/ws/live" tr=ws; else url="http://127.0.0.1:$PORT/live/seg/manifest.mpd" tr=http1; fi
      taskset -c 1 "$bin" load "$url" --transport $tr --tracks v180 --clients "$CLIENTS" --duration 20s --quiet --json > "$OUT/$wl-$side-$rep.json"
      jq -r --arg rep "$rep" --arg side "$side" --arg wl "$wl" \
        '.steps[0] as $s | [$rep, $side, $wl, $s.share_at_encoded, "share keeping up", ($s.server.cpu_s / $s.chunks * 1e6)] | @csv' \
        "$OUT/$wl-$side-$rep.json" >> "$OUT/raw.csv"
    done
    # The newest complete live segments (they are in memory) and every VOD file.
    curl -sf "http://127.0.0.1:$PORT/live/seg/v180/playlist.m3u8" | grep -v '^#' | sed "s#^#/live/seg/v180/#" > "$work/live-urls"
    find "$ASSET" -name '*.m4s' | sed "s#^$ASSET#/vod/test#" > "$work/vod-urls"
    read -r rps us < <(wrk_run live "$work/live-urls"); cp "$work/last-wrk.txt" "$OUT/wrk-live-$side-$rep.txt"
    echo "\"$rep\",\"$side\",\"wrk-live\",$rps,\"req/s\",$us" >> "$OUT/raw.csv"
    read -r rps us < <(wrk_run vod "$work/vod-urls"); cp "$work/last-wrk.txt" "$OUT/wrk-vod-$side-$rep.txt"
    echo "\"$rep\",\"$side\",\"wrk-vod\",$rps,\"req/s\",$us" >> "$OUT/raw.csv"
    kill "$SB_PID"; wait "$SB_PID" 2>/dev/null || true
    sleep 2
  done
done

# Medians and spreads per workload and side; B/A ratios.
python3 - "$OUT/raw.csv" > "$OUT/summary.md" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def agg(wl, side, key):
    v = [float(r[key]) for r in rows if r['workload'] == wl and r['bin'] == side]
    return st.median(v), min(v), max(v)
print("| workload | value A | value B | CPU µs/unit A | CPU µs/unit B | CPU B/A |")
print("|---|---|---|---|---|---|")
for wl in ["ws-live", "http1-seg", "wrk-live", "wrk-vod"]:
    if not any(r['workload'] == wl for r in rows): continue
    unit = next(r['unit'] for r in rows if r['workload'] == wl)
    va, vb = agg(wl, 'A', 'value'), agg(wl, 'B', 'value')
    ca, cb = agg(wl, 'A', 'cpu_us_per_unit'), agg(wl, 'B', 'cpu_us_per_unit')
    f = lambda m: f"{m[0]:.3g} ({m[1]:.3g}–{m[2]:.3g})"
    print(f"| {wl} ({unit}) | {f(va)} | {f(vb)} | {f(ca)} | {f(cb)} | {cb[0]/ca[0]:.2f} |")
PY
cat "$OUT/summary.md"
