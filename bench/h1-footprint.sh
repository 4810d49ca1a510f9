#!/usr/bin/env bash
# h1-footprint.sh — what changes per request between few and many keep-alive
# connections, for Streambed's lean HTTP/1.1 path and for nginx on the same files.
# Per server and connection count: one wrk run (LOAD_CPU) against the server
# (SERVER_CPU), with `perf stat` (the counters this CPU exposes; a VM without a PMU has
# software events only) and `perf record` (cpu-clock samples) of the server over DUR
# seconds in the middle of it; reported per request. With PROFILE=1 Streambed also
# writes a Go CPU profile of its 1000-connection run.
#
# Usage: bench/h1-footprint.sh BIN   (env: CONNS="50 1000" SECONDS_PER_RUN=6
#        SERVER_CPU=0 LOAD_CPU=1 PORT=18190 OUT=docs/results/origin/footprint-DATE)
# Writes OUT.csv (counter per request), OUT-top-SERVER-C.txt (perf report) and OUT.md.
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "${1:?usage: bench/h1-footprint.sh BIN}")
B=$A
CONNS=${CONNS:-"50 1000"}
DUR=${SECONDS_PER_RUN:-6}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PROFILE=${PROFILE:-1}
OUT=${OUT:-docs/results/origin/footprint-$(date -u +%Y-%m-%dT%H:%MZ)}
ASSET=${ASSET:-.cache/bench/asset}
PORT=${PORT:-18190}
NAME_OF_BENCH=h1-footprint
# shellcheck source=bench/ab-lib.sh
. bench/ab-lib.sh
ab_setup nginx wrk curl taskset perf
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#/vod/$NAME#" > "$work/urls"
[ -s "$work/urls" ] || { echo "$NAME_OF_BENCH: no segments under $ASSET" >&2; exit 1; }
ab_nginx_conf
mkdir -p "$(dirname "$OUT")"

# The counters: hardware ones where the CPU has them, else what perf can count.
events=""
for ev in cycles instructions cache-misses LLC-load-misses L1-dcache-load-misses task-clock context-switches cpu-migrations page-faults; do
  case $(perf stat -e "$ev" -- true 2>&1) in *"not supported"* | *"not counted"* | *rror*) ;; *) events+="${events:+,}$ev" ;; esac
done

start() {
  ab_start "$1"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$(head -1 "$work/urls")" -o /dev/null && return; sleep 0.1; done
  echo "h1-footprint: $1 did not start" >&2; cat "$work/sb.log" "$work/nginx-error.log" 2>/dev/null >&2; exit 1
}

echo "server,connections,counter,per_request" > "$OUT.csv"
for c in $CONNS; do
  for who in streambed nginx; do
    if [ "$who" = streambed ]; then
      extra=()
      [ "$PROFILE" = 1 ] && [ "$c" -ge 1000 ] && extra=(--cpuprofile "$OUT-c$c.pprof")
      rm -rf "$work/data"
      taskset -c "$SERVER_CPU" "$A" serve --http "127.0.0.1:$PORT" --https "" --data-dir "$work/data" --assets "$work/assets" \
        --no-demo --channel "x=$NAME" --log-level warn "${extra[@]}" > "$work/sb.log" 2>&1 &
      PID=$!; SPID=$PID
      for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$(head -1 "$work/urls")" -o /dev/null && break; sleep 0.1; done
    else
      start nginx
    fi
    URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$c" -d1s -s bench/segments.lua "http://127.0.0.1:$PORT" > /dev/null
    URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$c" -d"$((2 * DUR + 3))s" --timeout 10s -s bench/segments.lua "http://127.0.0.1:$PORT" > "$work/wrk.out" &
    wp=$!
    sleep 1
    perf stat -e "$events" -p "$SPID" -o "$work/stat.txt" -- sleep "$DUR" > /dev/null 2>&1
    perf record -e cpu-clock -F 4999 -g -p "$SPID" -o "$work/perf.data" -- sleep "$DUR" > /dev/null 2>&1
    wait $wp
    n=$(awk -v d="$DUR" '/^Requests\/sec/ {printf "%.0f", $2 * d}' "$work/wrk.out")
    awk -v who="$who" -v c="$c" -v n="$n" '$1 ~ /^[0-9.,]+$/ && NF >= 2 {v=$1; gsub(",", "", v); name=$2; if (name == "msec") { name = $3 "_us"; v *= 1000 }; if (name != "seconds") printf "%s,%s,%s,%.4f\n", who, c, name, (n > 0) ? v / n : 0}' "$work/stat.txt" >> "$OUT.csv"
    echo "$who,$c,requests_per_s,$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.out")" >> "$OUT.csv"
    # Samples per request by where they fell: all, user space, and the heaviest symbols.
    perf report -i "$work/perf.data" --no-children --sort sym --stdio 2>/dev/null | grep -v '^#' | grep '%' | grep -v '^ *|' | head -60 > "$OUT-top-$who-c$c.txt" || true
    perf report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -v '^#' | grep '%' | head -10 >> "$OUT-top-$who-c$c.txt" || true
    samples=$(perf script -F time -i "$work/perf.data" 2>/dev/null | wc -l)
    echo "$who,$c,sampled_cpu_us,$(awk -v s="${samples:-0}" -v n="$n" 'BEGIN {printf "%.4f", (n > 0) ? s / 4999 * 1e6 / n : 0}')" >> "$OUT.csv"
    stop
    printf '  %s c=%s done\n' "$who" "$c" >&2
  done
done
{
  echo "binary $A (sha256 $(sha256sum < "$A" | cut -c1-16)), nginx $(nginx -v 2>&1 | sed 's#.*/##'); counters: $events"
  echo "$(nproc) cores, server on CPU $SERVER_CPU, wrk -t1 on CPU $LOAD_CPU; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| counter per request | $(for c in $CONNS; do printf 'Streambed c=%s | nginx c=%s | ' "$c" "$c"; done | sed 's/ | $//') |"
  echo "|---|$(for c in $CONNS; do printf -- '---|---|'; done)"
  for k in $(cut -d, -f3 "$OUT.csv" | tail -n +2 | awk '!s[$0]++'); do
    printf '| %s |' "$k"
    for c in $CONNS; do for who in streambed nginx; do
      printf ' %s |' "$(awk -F, -v w="$who" -v c="$c" -v k="$k" '$1 == w && $2 == c && $3 == k {print $4}' "$OUT.csv")"
    done; done
    echo
  done
} | tee "$OUT.md"
