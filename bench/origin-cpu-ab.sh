#!/usr/bin/env bash
# origin-cpu-ab.sh — the origin's CPU for the same live load, two binaries alternating:
# the A/B comparison behind "Live segments from memory" in docs/results/origin.md.
# For each of PAIRS pairs (A then B, then B then A, ...), one binary serves the live
# channel seg (the 100 kbit/s stream of bench/ws-capacity-nginx.sh, 2 s segments)
# pinned to core 0 with GOMAXPROCS=1, and `streambed load` (NEW's) on core 1 runs one
# step of CLIENTS viewers over TRANSPORT; the origin's CPU seconds come from that
# step's JSON (server.cpu_s), written to OUT/pairN-{a,b}.json, with a summary
# (OUT/summary.json: both CPU figures and B ÷ A per pair, and the median).
#
# Usage: sudo bench/origin-cpu-ab.sh BIN_A BIN_B
#        (env: PAIRS=3 CLIENTS=3000 TRANSPORT=http1 DURATION=20s
#         OUT=docs/results/origin-ab/DATE)
# Needs taskset, curl, python3 (no root: no cgroup here).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
A=$(realpath "$1"); B=$(realpath "$2")
PAIRS=${PAIRS:-3}
CLIENTS=${CLIENTS:-3000}
TRANSPORT=${TRANSPORT:-http1}
DURATION=${DURATION:-20s}
OUT=${OUT:-docs/results/origin-ab/$(date -u +%Y-%m-%d)}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
PORT=${PORT:-18751}
BIN=$B
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
for c in taskset curl python3; do command -v $c >/dev/null || { echo "origin-cpu-ab: $c not found" >&2; exit 1; }; done
[ -x "$A" ] && [ -x "$B" ] || { echo "origin-cpu-ab: $A or $B is not executable" >&2; exit 1; }
cap_package "$ASSETS" cap 180p:100k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'cap_stop; rm -rf "$work"' EXIT
printf '{"command":"bench/origin-cpu-ab.sh %s %s","a":"%s","b":"%s","pairs":%s,"clients":%s,"transport":"%s","duration":"%s","cores":%s,"loadavg_before":"%s"}\n' \
  "$1" "$2" "$A sha256 $(sha256sum < "$A" | cut -c1-16)" "$B sha256 $(sha256sum < "$B" | cut -c1-16)" \
  "$PAIRS" "$CLIENTS" "$TRANSPORT" "$DURATION" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/info.json"
for pair in $(seq "$PAIRS"); do
  order="a b"; (( pair % 2 )) || order="b a"
  for who in $order; do
    BIN=$A; [ "$who" = b ] && BIN=$B
    cap_serve "$PORT" "$ASSETS" 1 0 seg=cap
    BIN=$B cap_load "pair$pair-$who" "http://127.0.0.1:$PORT/live/seg/manifest.mpd" --tracks v180 --transport "$TRANSPORT" \
      --clients "$CLIENTS" --duration "$DURATION" --ramp 4s
    cap_stop
  done
done
python3 - "$OUT" "$PAIRS" <<'PY'
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
rows = []
for p in range(1, pairs + 1):
    cpu = {w: json.load(open(os.path.join(out, f"pair{p}-{w}.json")))["steps"][0]["server"]["cpu_s"] for w in "ab"}
    ratio = round(cpu["b"] / cpu["a"], 3) if cpu["a"] > 0 else None
    rows.append({"pair": p, "a_cpu_s": cpu["a"], "b_cpu_s": cpu["b"], "b_over_a": ratio})
    print(f"| {p} | {cpu['a']:.2f} s | {cpu['b']:.2f} s | {ratio} |")
ratios = [r["b_over_a"] for r in rows if r["b_over_a"] is not None]
med = statistics.median(ratios) if ratios else None
print(f"median B ÷ A: {med}")
json.dump({"pairs": rows, "median_b_over_a": med}, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "wrote $OUT"
