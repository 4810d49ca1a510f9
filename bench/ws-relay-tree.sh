#!/usr/bin/env bash
# ws-relay-tree.sh — WebSocket relay edges (docs/results/relay.md): the same number
# of push viewers served (A) by one origin directly and (B) through a two-tier tree,
# origin → 2 relay edges → viewers (half on each edge), alternated ROUNDS times. Per
# run: the origin's CPU (from /proc, the same window as the viewers' sessions), the
# edges' CPU, the origin's push sessions, and the share of viewers receiving the
# encoded bitrate. Servers share core 0 (each GOMAXPROCS=1), the load generators
# core 1, so the CPU figures are CPU time, not a race for a core.
#
# Usage: bench/ws-relay-tree.sh            (`make bench-ws-relay`)
# env: OUT=docs/results/relay/DATE CLIENTS=2000 DURATION=20 ROUNDS=2 TRACKS=v360,a64
# Writes OUT/{direct,tree-origin,tree-edges}-RUN.json (streambed load --json) and
# OUT/summary.json; prints a table. About ROUNDS × 2 × (DURATION + 15 s).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
OUT=${OUT:-docs/results/relay/$(date -u +%Y-%m-%d)}
CLIENTS=${CLIENTS:-2000}
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-2}
TRACKS=${TRACKS:-v360,a64}
ASSETS=${ASSETS:-.cache/bench/capacity-assets}
PORT=${PORT:-18745}
for p in $PORT $((PORT + 1)) $((PORT + 2)); do ss -Htln "sport = :$p" | grep -q . && { echo "ws-relay-tree: port $p is already in use (another bench or server?): set PORT=... to a free port" >&2; exit 1; }; done
for c in taskset curl python3; do command -v $c >/dev/null || { echo "ws-relay-tree: $c not found (make bench-ws-relay installs it)" >&2; exit 1; }; done
[ -x "$BIN" ] || { echo "ws-relay-tree: $BIN missing (make build)" >&2; exit 1; }
if [ ! -f "$ASSETS/test/stream.json" ]; then
  "$BIN" package --synthetic 8s --ladder 180p:100k,360p:400k --audio-bitrate 64k --segment-duration 2s --preset ultrafast --name test -o "$ASSETS/test"
fi
ASSETS=$(cd "$ASSETS" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
pids=()
stop_all() { local p; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop_all; rm -rf "$work"' EXIT

# serve NAME PORT ARGS... — a server on core 0, GOMAXPROCS=1; its PID in $last.
serve() {
  local name=$1 port=$2; shift 2
  GOMAXPROCS=1 taskset -c 0 "$BIN" serve --http "127.0.0.1:$port" --https "" --assets "$ASSETS" --no-demo \
    --data-dir "$work/$name" --log-level warn "$@" > "$work/$name.log" 2>&1 &
  last=$!
  pids+=("$last")
  local i
  for i in $(seq 100); do curl -sf "http://127.0.0.1:$port/live/live/manifest.mpd" >/dev/null && return 0; sleep 0.2; done
  echo "$name did not start:"; cat "$work/$name.log"; exit 1
}
load() { # FILE URL CLIENTS SERVER_PIDS
  taskset -c 1 "$BIN" load "$2" --json --quiet --transport ws --tracks "$TRACKS" --clients "$3" \
    --duration "$DURATION" --ramp 4 --server-pids "$4" > "$OUT/$1.json"
}
sessions() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^streambed_ws_sessions\{state="streaming"\}/{print $2}'; }

printf '{"command":"bench/ws-relay-tree.sh","commit":"%s","clients":%s,"duration_s":%s,"rounds":%s,"tracks":"%s","loadavg_before":"%s"}\n' \
  "$(git rev-parse --short HEAD 2>/dev/null)" "$CLIENTS" "$DURATION" "$ROUNDS" "$TRACKS" "$(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/info.json"
half=$((CLIENTS / 2))
for r in $(seq "$ROUNDS"); do
  echo "== round $r: direct, $CLIENTS viewers on the origin"
  serve origin "$PORT" --channel live=test
  origin=$last
  load "direct-$r" "ws://127.0.0.1:$PORT/ws/live" "$CLIENTS" "$origin"
  stop_all

  echo "== round $r: tree, origin → 2 relay edges → $half viewers each"
  serve origin "$PORT" --channel live=test
  origin=$last
  serve edge1 $((PORT + 1)) --channel "" --relay "live=ws://127.0.0.1:$PORT/ws/live"
  e1=$last
  serve edge2 $((PORT + 2)) --channel "" --relay "live=ws://127.0.0.1:$PORT/ws/live"
  e2=$last
  sleep 7 # the edges store three segments before the viewers come
  load "tree-origin-$r" "ws://127.0.0.1:$((PORT + 1))/ws/live" "$half" "$origin" &
  l1=$!
  load "tree-edges-$r" "ws://127.0.0.1:$((PORT + 2))/ws/live" "$half" "$e1,$e2" &
  l2=$!
  sleep $((DURATION / 2 + 3))
  echo "origin push sessions mid-run: $(sessions "$PORT") (edges: $(sessions $((PORT + 1))), $(sessions $((PORT + 2))))" | tee "$OUT/tree-sessions-$r.txt"
  wait "$l1" "$l2"
  stop_all
done

python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
step = lambda f: json.load(open(f"{out}/{f}.json"))["steps"][0]
rows = []
for r in range(1, rounds + 1):
    d, o, e = step(f"direct-{r}"), step(f"tree-origin-{r}"), step(f"tree-edges-{r}")
    rows.append({
        "round": r,
        "direct_origin_cpu_s": d["server"]["cpu_s"], "direct_keeping_up": d["keeping_up"], "direct_clients": d["clients"],
        "tree_origin_cpu_s": o["server"]["cpu_s"], "tree_edges_cpu_s": e["server"]["cpu_s"],
        "tree_keeping_up": o["keeping_up"] + e["keeping_up"], "tree_clients": o["clients"] + e["clients"],
        "session_s": d["duration_s"],
    })
med = lambda k: statistics.median(r[k] for r in rows)
summary = {"rows": rows, "note": "CPU seconds over the step from /proc (10 ms ticks); servers on core 0, GOMAXPROCS=1",
           "median_direct_origin_cpu_s": med("direct_origin_cpu_s"),
           "median_tree_origin_cpu_s": med("tree_origin_cpu_s"),
           "median_tree_edges_cpu_s": med("tree_edges_cpu_s")}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print("CPU seconds over each step (/proc, 10 ms ticks)")
print("round  direct: origin CPU s, keeping up    tree: origin CPU s, both edges CPU s, keeping up")
for r in rows:
    print(f"{r['round']:5}  {r['direct_origin_cpu_s']:8.2f}  {r['direct_keeping_up']:5}/{r['direct_clients']}"
          f"           {r['tree_origin_cpu_s']:8.2f}  {r['tree_edges_cpu_s']:8.2f}  {r['tree_keeping_up']:5}/{r['tree_clients']}")
print(f"median origin CPU s: direct {summary['median_direct_origin_cpu_s']:.2f}, tree {summary['median_tree_origin_cpu_s']:.2f}; "
      f"the tree's edges together {summary['median_tree_edges_cpu_s']:.2f} "
      f"({summary['median_tree_edges_cpu_s'] / max(summary['median_direct_origin_cpu_s'], 1e-9):.2f}x the direct origin)")
EOF
