#!/usr/bin/env bash
# h1-packets.sh — the packets a server puts on loopback per segment GET, by size: two
# streambed binaries (A, B) and nginx serve the same packaged segments one at a time,
# pinned to SERVER_CPU, while wrk (LOAD_CPU) fetches them over CONNS keep-alive
# connections; `perf record -e net:net_dev_xmit` on the server notes every packet it
# sends for DUR seconds. A response head sent apart from its body shows as a packet of
# a few hundred bytes (and the ACK that answers it as one under 100).
#
# Usage: bench/h1-packets.sh A_BIN B_BIN   (env: CONNS="200" SECONDS_PER_RUN=2
#        SERVER_CPU=0 LOAD_CPU=1 PORT=18190 OUT=docs/results/origin/h1-packets-DATE)
# Writes OUT.csv (server, connections, size class, packets, per request, mean bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "${1:?usage: bench/h1-packets.sh A_BIN B_BIN}")
B=$(realpath "${2:?usage: bench/h1-packets.sh A_BIN B_BIN}")
CONNS=${CONNS:-200}
DUR=${SECONDS_PER_RUN:-2}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-docs/results/origin/h1-packets-$(date -u +%Y-%m-%dT%H:%MZ)}
ASSET=${ASSET:-.cache/bench/asset}
PORT=${PORT:-18190}
NAME_OF_BENCH=h1-packets
# shellcheck source=bench/ab-lib.sh
. bench/ab-lib.sh
ab_setup nginx wrk curl taskset perf
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#/vod/$NAME#" > "$work/urls"
ab_nginx_conf
mkdir -p "$(dirname "$OUT")"
echo "server,connections,size,packets,per_request,mean_bytes" > "$OUT.csv"
for c in $CONNS; do
  for who in A B nginx; do
    ab_start "$who"
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$(head -1 "$work/urls")" -o /dev/null && break; sleep 0.1; done
    URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$c" -d1s -s bench/segments.lua "http://127.0.0.1:$PORT" > /dev/null
    # perf records DUR seconds in the middle of a wrk run of DUR+2: the requests in
    # its window are wrk's steady rate × DUR.
    URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$c" -d"$((DUR + 2))s" -s bench/segments.lua "http://127.0.0.1:$PORT" > "$work/wrk.out" &
    wp=$!
    sleep 1
    perf record -q -e net:net_dev_xmit -p "$SPID" -o "$work/xmit.data" -- sleep "$DUR" > /dev/null 2>&1
    wait $wp
    stop
    n=$(awk -v d="$DUR" '/^Requests\/sec/ {printf "%.0f", $2 * d}' "$work/wrk.out")
    perf script -i "$work/xmit.data" 2>/dev/null | grep -o 'len=[0-9]*' | cut -d= -f2 |
      awk -v who="$who" -v c="$c" -v n="$n" '
        { k = ($1 < 100) ? "1:<100" : ($1 < 1000) ? "2:100-999" : ($1 < 60000) ? "3:1000-59999" : "4:>=60000"; p[k]++; b[k] += $1; t++ }
        END { for (k in p) printf "%s,%s,%s,%d,%.3f,%.0f\n", who, c, substr(k, 3), p[k], (n > 0) ? p[k] / n : 0, b[k] / p[k]
              printf "%s,%s,all,%d,%.3f,\n", who, c, t, (n > 0) ? t / n : 0 }' | sort >> "$OUT.csv"
  done
done
{
  echo "A = $A, B = $B, nginx $(nginx -v 2>&1 | sed 's#.*/##'); ${DUR}s per server, server on CPU $SERVER_CPU, wrk -t1 on CPU $LOAD_CPU; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| connections | server | packets per request | <100 B (ACKs) | 100–999 B | 1000–59999 B | ≥ 60000 B |"
  echo "|---|---|---|---|---|---|---|"
  for c in $CONNS; do for who in A B nginx; do
    awk -F, -v c="$c" -v w="$who" '$1 == w && $2 == c { v[$3] = $5 } END {
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", c, w, v["all"], v["<100"] + 0, v["100-999"] + 0, v["1000-59999"] + 0, v[">=60000"] + 0 }' "$OUT.csv"
  done; done
} | tee "$OUT.md"
