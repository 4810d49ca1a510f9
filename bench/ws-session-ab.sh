#!/usr/bin/env bash
# ws-session-ab.sh — WebSocket push's origin CPU per session (set-up and tear-down:
# accept, the upgrade, the start message, the join, the close), two binaries
# alternated in one run (A = OLD, B = NEW). Short sessions on the 2 s-chunk channel,
# so a session's own cost dominates its few messages: CPU per session = the origin's
# CPU seconds over the step ÷ sessions. Origin pinned to core 0 with GOMAXPROCS=1 and
# no quota, `streambed load` on core 1. The last pair also writes Go CPU profiles.
#
# Usage: sudo OLD=/path/to/old/streambed bench/ws-session-ab.sh
# env: NEW=bin/streambed PAIRS=3 CLIENTS=3000 DURATION=3s RAMP=3s
#      OLD_GODEBUG, NEW_GODEBUG: each origin's GODEBUG (one binary both ways: OLD=NEW)
#      OUT=docs/results/wspush-capacity/DATE-session-ab
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${OLD:?OLD=path of the binary to compare with}
NEW=${NEW:-bin/streambed}
BIN=$NEW
PAIRS=${PAIRS:-3}
CLIENTS=${CLIENTS:-3000}
DURATION=${DURATION:-3s}
RAMP=${RAMP:-3s}
OUT=${OUT:-docs/results/wspush-capacity/$(date -u +%Y-%m-%d)-session-ab}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
PORT=${PORT:-18733}
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
cap_require ws-session-ab taskset curl python3
[ -x "$OLD" ] || { echo "ws-session-ab: $OLD is not an executable" >&2; exit 1; }
cap_package "$ASSETS" test 180p:100k,360p:400k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'cap_stop; rm -rf "$work"' EXIT
printf '{"command":"bench/ws-session-ab.sh","old":"%s","new":"%s","commit":"%s","cores":%s,"pairs":%s,"clients":%s,"duration":"%s","ramp":"%s","loadavg_before":"%s","old_godebug":"%s","new_godebug":"%s","note":"machine shared with other engineers"}\n' \
  "$OLD" "$NEW" "$(git rev-parse --short HEAD 2>/dev/null)" "$(nproc)" "$PAIRS" "$CLIENTS" "$DURATION" "$RAMP" "$(cut -d' ' -f1-3 /proc/loadavg)" "${OLD_GODEBUG-}" "${NEW_GODEBUG-}" > "$OUT/info.json"

serve_ab() {
  local prof=(); [ -n "$2" ] && prof=(--cpuprofile "$2")
  local genv=(); [ -n "${3+x}" ] && genv=(env "GODEBUG=$3")
  GOMAXPROCS=1 "${genv[@]}" taskset -c 0 "$1" serve --http "127.0.0.1:$PORT" --https "" --assets "$ASSETS" --no-demo --log-level warn \
    --channel seg=test "${prof[@]}" > "$work/sb.log" 2>&1 &
  SB_PID=$!
  local i
  for i in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/live/seg/manifest.mpd" >/dev/null && return 0; sleep 0.2; done
  echo "streambed did not start:"; cat "$work/sb.log"; exit 1
}

for i in $(seq "$PAIRS"); do
  for v in old new; do
    bin=$OLD; [ $v = new ] && bin=$NEW
    prof=""; [ "$i" = "$PAIRS" ] && prof="$OUT/session-$v.pprof"
    if [ $v = old ] && [ -n "${OLD_GODEBUG+x}" ]; then serve_ab "$bin" "$prof" "$OLD_GODEBUG"
    elif [ $v = new ] && [ -n "${NEW_GODEBUG+x}" ]; then serve_ab "$bin" "$prof" "$NEW_GODEBUG"
    else serve_ab "$bin" "$prof"; fi
    cap_load "session-$v-$i" "http://127.0.0.1:$PORT/live/seg/manifest.mpd" --tracks v180 --transport ws --clients "$CLIENTS" --duration "$DURATION" --ramp "$RAMP"
    cap_stop
  done
done

python3 - "$OUT" "$PAIRS" <<'PY' | tee "$OUT/summary.txt"
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def row(name):
    s = json.load(open(os.path.join(out, name + ".json")))["steps"][0]
    srv = s.get("server") or {}
    return srv["cpu_s"] * 1e6 / max(s["clients"], 1), srv["cpu_s"] * 1e6 / max(s["chunks"], 1), s["share_at_encoded"]
rows = {v: [row(f"session-{v}-{i}") for i in range(1, pairs + 1)] for v in ("old", "new")}
for v in ("old", "new"):
    us = [r[0] for r in rows[v]]
    print(f"{v}: origin CPU per session {statistics.median(us):.1f} us (runs {', '.join(f'{u:.1f}' for u in us)}, spread {max(us)-min(us):.1f}); "
          f"per message {', '.join(f'{r[1]:.1f}' for r in rows[v])} us; keeping up {', '.join(f'{r[2]*100:.1f}%' for r in rows[v])}")
ratios = [n[0] / o[0] for o, n in zip(rows["old"], rows["new"])]
print(f"new / old per pair: {', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})")
PY
echo "wrote $OUT"
