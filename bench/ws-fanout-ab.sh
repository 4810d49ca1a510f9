#!/usr/bin/env bash
# ws-fanout-ab.sh — WebSocket push's origin CPU per message, two binaries alternated
# in one run (A = OLD, B = NEW; issue 13's fan-out rework): the origin pinned to core
# 0 with GOMAXPROCS=1 and no quota, `streambed load` on core 1, the same live
# content, PAIRS alternating pairs per configuration. CPU per message = the origin's
# CPU seconds over the step ÷ the media messages the clients received. The last pair
# also writes Go CPU profiles (serve --cpuprofile) beside the JSON.
#
# Usage: sudo OLD=/path/to/old/streambed bench/ws-fanout-ab.sh
# env: NEW=bin/streambed PAIRS=3 DURATION=20s SEG_CLIENTS=4000 LL_CLIENTS=1000
#      OUT=docs/results/wspush-capacity/DATE-fanout-ab
# Configurations: seg (v180 ≈ 100 kbit/s in 2 s chunks, SEG_CLIENTS) and ll (v360+a64
# in one-frame chunks of 40 ms, LL_CLIENTS). The machine should be quiet; say in the
# results when it was not (loadavg_before in the info file).
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${OLD:?OLD=path of the binary to compare with}
NEW=${NEW:-bin/streambed}
BIN=$NEW
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-20s}
SEG_CLIENTS=${SEG_CLIENTS:-4000}
LL_CLIENTS=${LL_CLIENTS:-1000}
OUT=${OUT:-docs/results/wspush-capacity/$(date -u +%Y-%m-%d)-fanout-ab}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
PORT=${PORT:-18731}
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
cap_require ws-fanout-ab taskset curl python3
[ -x "$OLD" ] || { echo "ws-fanout-ab: $OLD is not an executable" >&2; exit 1; }
cap_package "$ASSETS" test 180p:100k,360p:400k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'cap_stop; rm -rf "$work"' EXIT
printf '{"command":"bench/ws-fanout-ab.sh","old":"%s","new":"%s","commit":"%s","cores":%s,"pairs":%s,"duration":"%s","loadavg_before":"%s","note":"machine shared with other engineers"}\n' \
  "$OLD" "$NEW" "$(git rev-parse --short HEAD 2>/dev/null)" "$(nproc)" "$PAIRS" "$DURATION" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/info.json"

# serve_ab BIN PROFILE — the origin (cap_serve's, with an optional CPU profile).
serve_ab() {
  local prof=(); [ -n "$2" ] && prof=(--cpuprofile "$2")
  GOMAXPROCS=1 taskset -c 0 "$1" serve --http "127.0.0.1:$PORT" --https "" --assets "$ASSETS" --no-demo --log-level warn \
    --channel seg=test --channel live=test,chunk=40ms "${prof[@]}" > "$work/sb.log" 2>&1 &
  SB_PID=$!
  local i
  for i in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/live/seg/manifest.mpd" >/dev/null && return 0; sleep 0.2; done
  echo "streambed did not start:"; cat "$work/sb.log"; exit 1
}

for i in $(seq "$PAIRS"); do
  for v in old new; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    for cfg in seg ll; do
      prof=""; [ "$i" = "$PAIRS" ] && prof="$OUT/$cfg-$v.pprof"
      serve_ab "$bin" "$prof"
      if [ $cfg = seg ]; then
        cap_load "$cfg-$v-$i" "http://127.0.0.1:$PORT/live/seg/manifest.mpd" --tracks v180 --transport ws --clients "$SEG_CLIENTS" --duration "$DURATION" --ramp 4s
      else
        cap_load "$cfg-$v-$i" "ws://127.0.0.1:$PORT/ws/live" --tracks v360,a64 --transport ws --clients "$LL_CLIENTS" --duration "$DURATION" --ramp 4s
      fi
      cap_stop
    done
  done
done

python3 - "$OUT" "$PAIRS" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def per_msg(name):
    s = json.load(open(os.path.join(out, name + ".json")))["steps"][0]
    srv = s.get("server") or {}
    return srv["cpu_s"] * 1e6 / max(s["chunks"], 1), s["share_at_encoded"], srv.get("memory_bytes_per_client")
for cfg in ("seg", "ll"):
    rows = {v: [per_msg(f"{cfg}-{v}-{i}") for i in range(1, pairs + 1)] for v in ("old", "new")}
    ratios = [n[0] / o[0] for o, n in zip(rows["old"], rows["new"])]
    for v in ("old", "new"):
        us = [r[0] for r in rows[v]]
        print(f"{cfg} {v}: origin CPU per message {statistics.median(us):.1f} us (runs {', '.join(f'{u:.1f}' for u in us)}), "
              f"keeping up {', '.join(f'{r[1]*100:.1f}%' for r in rows[v])}, memory per client "
              f"{', '.join(f'{(r[2] or 0)/1024:.1f}' for r in rows[v])} KiB")
    print(f"{cfg} new / old per pair: {', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})")
PY
echo "wrote $OUT"
