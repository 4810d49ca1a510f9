#!/usr/bin/env bash
# ws-capacity-nginx.sh — the WebSocket study's capacity test (test bed B) with nginx as
# the pull peer: how many live viewers one server keeps in real time, for
#   ws          Streambed pushing over WebSocket      (streambed load --transport ws)
#   http1       Streambed serving the segments by pull (--transport http1)
#   nginx-http1 nginx serving the same live segments by pull: Streambed writes the
#               channel's segments to an archive folder (channel option archive=DIR)
#               as they are made, nginx serves that folder as static files (sendfile,
#               open_file_cache) and proxies only the MPD to Streambed.
# Each server is pinned to core 0 and held to the same CPU budget (cgroup v1 cpu quota,
# CPU_QUOTA of a core); the clients run on core 1. The stream is the study's 100 kbit/s
# in 2 s segments (one video rung; the audio track is not received). Prints the inflexion point per server
# and writes the JSON of every step to OUT.
#
# Usage: sudo bench/ws-capacity-nginx.sh   (`make bench-ws-capacity-nginx`; env:
#        CLIENTS="500,1000,2000,3000,4000" CPU_QUOTA=0.15 DURATION=20s RAMP=4s PULL_DELAY=1500ms
#        OUT=docs/results/wspush-capacity-nginx/DATE SB_TRANSPORTS=ws,http1)
# Needs root (cgroups), nginx, taskset, curl, python3; about (steps × 3 × (DURATION + 10 s)).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
CLIENTS=${CLIENTS:-500,1000,2000,3000,4000}
CPU_QUOTA=${CPU_QUOTA:-0.15}
DURATION=${DURATION:-20s}
RAMP=${RAMP:-4s} # client starts spread over this (a longer ramp measures the steady state rather than the set-up rate)
# Pull clients ask for each segment this long after its nominal availability (a player
# a little behind the live edge): nginx serves the archive, which has a video segment
# only once it is complete, and a client asking at once got a 404 and counted as failed
# (the "404" column of the 2026-11-24 tables). 0 asks at once, as those runs did.
PULL_DELAY=${PULL_DELAY:-1500ms}
OUT=${OUT:-docs/results/wspush-capacity-nginx/$(date -u +%Y-%m-%d)}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
SB_PORT=${SB_PORT:-18731}
NGX_PORT=${NGX_PORT:-18732}
SB_TRANSPORTS=${SB_TRANSPORTS:-ws,http1} # Streambed's transports measured (ws alone: a shorter run)
# shellcheck source=bench/capacity-lib.sh
. bench/capacity-lib.sh
cap_require ws-capacity-nginx nginx taskset curl python3
cap_package "$ASSETS" cap 180p:100k
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
chmod 755 "$work" # nginx workers (not root) read the archive inside it
cleanup() {
  cap_stop
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  sleep 0.5
  cap_uncgroup sb-cap-origin sb-cap-nginx
  rm -rf "$work"
}
trap cleanup EXIT
cap_cgroup sb-cap-origin "$CPU_QUOTA"
cap_cgroup sb-cap-nginx "$CPU_QUOTA"

ARCH="$work/archive"
cap_serve "$SB_PORT" "$ASSETS" 1 0 "seg=cap,archive=$ARCH"
echo "$SB_PID" > "$CG/sb-cap-origin/cgroup.procs"

cap_nginx "$ARCH" "$SB_PORT" "$CG/sb-cap-nginx"
curl -sf "http://127.0.0.1:$NGX_PORT/live/seg/manifest.mpd" -o /dev/null || { echo "nginx does not answer:"; cat "$work/nginx-error.log"; exit 1; }
echo "== origin pid $SB_PID, nginx pids $NGX_PIDS; each held to $CPU_QUOTA core on core 0; clients on core 1"

printf '{"command":"bench/ws-capacity-nginx.sh","bin":"%s","commit":"%s","cpu_quota":%s,"cg_period_us":%s,"clients":"%s","ramp":"%s","pull_delay":"%s","sb_godebug":"%s","loadavg_before":"%s","note":"load averages of the whole machine, shared with other work"}\n' \
  "$BIN" "$(git rev-parse --short HEAD 2>/dev/null)" "$CPU_QUOTA" "$CG_PERIOD" "$CLIENTS" "$RAMP" "$PULL_DELAY" "${SB_GODEBUG-}" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/info.json"
common=(--tracks v180 --clients "$CLIENTS" --duration "$DURATION" --ramp "$RAMP" --pause 5s --pull-delay "$PULL_DELAY")
cap_load streambed "http://127.0.0.1:$SB_PORT/live/seg/manifest.mpd" --transport "$SB_TRANSPORTS" "${common[@]}"
cap_load nginx "http://127.0.0.1:$NGX_PORT/live/seg/manifest.mpd" --transport http1 "${common[@]}" --server-pids "$(echo $NGX_PIDS | tr ' ' ',')"

cut -d' ' -f1-3 /proc/loadavg > "$OUT/loadavg-after.txt"
echo "== clients keeping up (share ≥ 95% of the encoded bitrate), server CPU (cores)"
python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
rows = {}
for name in ("streambed", "nginx"):
    d = json.load(open(os.path.join(out, name + ".json")))
    for s in d["steps"]:
        key = ("nginx-" if name == "nginx" else "") + s["transport"]
        cpu = (s.get("server") or {}).get("cpu_share")
        rows.setdefault(s["clients"], {})[key] = (s["share_at_encoded"], cpu)
cols = ["ws", "http1", "nginx-http1"]
print("| clients | " + " | ".join(cols) + " |")
print("|---:|" + "---:|" * len(cols))
infl = {c: 0 for c in cols}
for n in sorted(rows):
    cells = []
    for c in cols:
        share, cpu = rows[n].get(c, (None, None))
        if share is None:
            cells.append("—")
            continue
        if share >= 0.9:
            infl[c] = max(infl[c], n)
        cells.append(f"{share*100:.1f}% ({cpu if cpu is not None else '?'} cores)")
    print(f"| {n} | " + " | ".join(cells) + " |")
print("inflexion (≥ 90% keep up):", ", ".join(f"{c} {infl[c]}" for c in cols))
if infl["nginx-http1"]:
    print(f"ws ÷ nginx-http1 = {infl['ws']/infl['nginx-http1']:.2f}; ws ÷ streambed http1 = {infl['ws']/max(infl['http1'],1):.2f}")
PY
