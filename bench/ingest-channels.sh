#!/usr/bin/env bash
# ingest-channels.sh — channels per machine (issue: live ingest, Performance): N
# publishing points (preset pure-live: archiving on, 30 s DVR window), each fed by
# the replay encoder with the published ladder (8 H.264 rungs and two AAC tracks:
# 10 tracks, 10.19 Mbit/s in per channel). For each N: the origin's CPU (cores) and RSS over a measured window,
# per channel, against the goal of RSS per channel ≤ 2× its DVR window's bytes; and
# whether every channel kept up in real time (each track's newest chunk at most 3 s
# old at the end). Origin on core 0, encoders on core 1 (taskset).
#
# With LOAD_CLIENTS=K, the same pull load runs in every step's measured window: K
# HTTP/1.1 clients (`streambed load`, on core 1) of channel ch1's top rung and audio,
# so output throughput can be compared as channels are added (the load tests found
# it flat).
#
# Usage: bench/ingest-channels.sh [N ...]        (default: 1 5 10 20)
#   env: STEP_S=30 (measured seconds per N)  LOAD_CLIENTS=0  OUT=docs/results/ingest  BIN=bin/streambed
# Output: OUT/channels-DATE.jsonl (one JSON object per N) and a markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
STEP_S=${STEP_S:-30}
LOAD_CLIENTS=${LOAD_CLIENTS:-0}
OUT=${OUT:-docs/results/ingest}
PORT=${PORT:-18771}
for p in $PORT; do ss -Htln "sport = :$p" | grep -q . && { echo "ingest-channels: port $p is already in use (another bench or server?): set PORT=... to a free port" >&2; exit 1; }; done
STEPS=("$@"); [ ${#STEPS[@]} -gt 0 ] || STEPS=(1 5 10 20)
for c in taskset curl jq; do command -v $c >/dev/null || { echo "ingest-channels: $c is missing (apt-get install util-linux curl jq)"; exit 1; }; done
[ -x "$BIN" ] || { echo "ingest-channels: $BIN is missing: run make build"; exit 1; }
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
out="$OUT/channels-$(date -u +%Y%m%dT%H%M%SZ).jsonl"

echo "== the published ladder, encoded once for the replay encoder (cached; minutes the first time)"
"$BIN" encode live --replay --ladder published --to "http://127.0.0.1:1/ingest/warm" --duration 900 >/dev/null 2>&1 || true

echo "| channels | in (Mbit/s) | origin CPU (cores) | CPU per channel | RSS (MiB) | RSS per channel (MiB) | 2× DVR window (MiB) | kept up | pull clients | pull out (Mbit/s) | clients at the encoded rate |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${STEPS[@]}"; do
  args=()
  for i in $(seq 1 "$n"); do args+=(--ingest "ch$i,preset=pure-live,token=T,segment=1.92s"); done # 1.92 s: the published ladder's GOP (48 frames at 25 fps)
  rm -rf "$work/data"
  GOMAXPROCS=1 taskset -c 0 "$BIN" serve --http 127.0.0.1:$PORT --https "" --no-demo --channel "" \
    --log-level warn --data-dir "$work/data" "${args[@]}" > "$work/sb.log" 2>&1 &
  sb=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/api/streams" >/dev/null && break; sleep 0.1; done
  encs=()
  for i in $(seq 1 "$n"); do
    taskset -c 1 "$BIN" encode live --replay --ladder published --to "http://127.0.0.1:$PORT/ingest/ch$i" --token T \
      --duration $((STEP_S + 15)) > "$work/enc$i.log" 2>&1 &
    encs+=($!)
  done
  printf '   N=%d: warming up 10 s, measuring %d s…\r' "$n" "$STEP_S" >&2
  sleep 10
  loadpid=""
  if [ "$LOAD_CLIENTS" -gt 0 ]; then
    taskset -c 1 "$BIN" load "http://127.0.0.1:$PORT/live/ch1/manifest.mpd" --transport http1 --clients "$LOAD_CLIENTS" \
      --duration "${STEP_S}s" --ramp 1s --json --quiet > "$work/load.json" 2> "$work/load.err" &
    loadpid=$!
  fi
  t0=$(ticks $sb); s0=$(date +%s.%N)
  sleep "$STEP_S"
  t1=$(ticks $sb); s1=$(date +%s.%N); rss=$(rss_kb $sb)
  out_mbps=0; share=0
  if [ -n "$loadpid" ]; then
    wait "$loadpid" || true
    out_mbps=$(jq '[.steps[0] | .media_bytes * 8 / .duration_s / 1e6] | .[0]' "$work/load.json" 2>/dev/null || echo 0)
    share=$(jq '.steps[0].share_at_encoded' "$work/load.json" 2>/dev/null || echo 0)
  fi
  tok=$(cat "$work/data/admin.token")
  # Kept up: every track of every channel received a chunk in the last 3 s.
  behind=$(curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/channels" |
    jq --arg now "$(date -u +%s)" '[.channels[].tracks[] | select((($now|tonumber) - (.last_chunk | sub("\\.[0-9]+";"") | fromdateiso8601)) > 3)] | length')
  tracks=$(curl -s -H "Authorization: Bearer $tok" "http://127.0.0.1:$PORT/api/channels" | jq '[.channels[].tracks[]] | length')
  kill "${encs[@]}" 2>/dev/null || true; kill $sb; wait $sb 2>/dev/null || true; wait "${encs[@]}" 2>/dev/null || true
  cores=$(echo "($t1 - $t0) / $hz / ($s1 - $s0)" | bc -l)
  mib=$(echo "$rss / 1024" | bc -l)
  dvr2=$(echo "2 * 10.19 * 30 / 8" | bc -l) # 2× 30 s of 10.19 Mbit/s, in MB ≈ MiB
  kept=$([ "$behind" = 0 ] && [ "$tracks" -ge $((n * 9)) ] && echo yes || echo "no ($behind of $tracks tracks behind)")
  printf '| %d | %.1f | %.3f | %.4f | %.0f | %.1f | %.0f | %s | %d | %.1f | %.0f%% |\n' "$n" "$(echo "$n*10.19" | bc -l)" "$cores" "$(echo "$cores/$n" | bc -l)" "$mib" "$(echo "$mib/$n" | bc -l)" "$dvr2" "$kept" "$LOAD_CLIENTS" "${out_mbps:-0}" "$(echo "${share:-0}*100" | bc -l)"
  jq -cn --argjson n "$n" --argjson cores "$cores" --argjson rss_mib "$mib" --argjson behind "$behind" --argjson tracks "$tracks" --arg step "$STEP_S" \
    --argjson clients "$LOAD_CLIENTS" --argjson out_mbps "${out_mbps:-0}" --argjson share "${share:-0}" \
    '{channels:$n, in_mbps:($n*10.19), origin_cores:$cores, cores_per_channel:($cores/$n), rss_mib:$rss_mib, rss_per_channel_mib:($rss_mib/$n), tracks:$tracks, tracks_behind:$behind, measured_s:($step|tonumber), pull_clients:$clients, pull_out_mbps:$out_mbps, pull_share_at_encoded:$share}' >> "$out"
done
echo "raw: $out" >&2
