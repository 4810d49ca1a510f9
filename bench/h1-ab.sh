#!/usr/bin/env bash
# h1-ab.sh — the lean HTTP/1.1 path before and after a change, with nginx beside it:
# two streambed binaries (A, B) and nginx serve the same packaged segments, one at a
# time, pinned to SERVER_CPU; wrk (pinned to LOAD_CPU) fetches them over CONNS
# keep-alive connections. The three alternate within each rep (rotated order), so a
# busy moment of the machine falls on all of them. Per run: requests/s and the
# server's CPU µs per request (user+system from /proc, and user alone).
# SYSCALLS=1 adds one run per server under `perf stat` counting the socket system
# calls and the packets sent per request (perf slows the server: those runs' rates
# are not reported).
#
# Usage: bench/h1-ab.sh A_BIN B_BIN   (env: CONNS="50 1000" REPS=5 SECONDS_PER_RUN=4
#        SYSCALLS=1 SERVER_CPU=0 LOAD_CPU=1 OUT=docs/results/origin/h1-ab-DATE)
# Writes OUT.csv (every run), OUT-syscalls.csv and prints medians (min–max).
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "${1:?usage: bench/h1-ab.sh A_BIN B_BIN}")
B=$(realpath "${2:?usage: bench/h1-ab.sh A_BIN B_BIN}")
CONNS=${CONNS:-"50 1000"}
REPS=${REPS:-5}
DUR=${SECONDS_PER_RUN:-4}
SYSCALLS=${SYSCALLS:-1}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-docs/results/origin/h1-ab-$(date -u +%Y-%m-%dT%H:%MZ)}
ASSET=${ASSET:-.cache/bench/asset}
PORT=${PORT:-18190}
NAME_OF_BENCH=h1-ab
# shellcheck source=bench/ab-lib.sh
. bench/ab-lib.sh
ab_setup nginx wrk curl taskset
if [ "$SYSCALLS" = 1 ] && ! command -v perf >/dev/null; then echo "h1-ab: perf is missing: SYSCALLS=0 or install linux-perf" >&2; exit 1; fi
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#/vod/$NAME#" > "$work/urls"
[ -s "$work/urls" ] || { echo "$NAME_OF_BENCH: no segments under $ASSET" >&2; exit 1; }
ab_nginx_conf

# start WHO → streambed A or B, or nginx; the server's PID (nginx's worker) in $SPID
start() {
  ab_start "$1"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$(head -1 "$work/urls")" -o /dev/null && return; sleep 0.1; done
  echo "h1-ab: $1 did not start" >&2; cat "$work/sb.log" "$work/nginx-error.log" 2>/dev/null >&2; exit 1
}
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
# measure WHO CONNS → "req/s cpu_us user_us" over one wrk run (after a 1 s warm-up)
measure() {
  URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$2" -d1s -s bench/segments.lua "http://127.0.0.1:$PORT" > /dev/null
  local u0 s0 u1 s1
  read -r u0 s0 < <(ticks "$SPID")
  URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$2" -d"${DUR}s" --timeout 10s -s bench/segments.lua "http://127.0.0.1:$PORT" > "$work/wrk.out"
  read -r u1 s1 < <(ticks "$SPID")
  if grep -q "Non-2xx\|Socket errors" "$work/wrk.out"; then echo "h1-ab: wrk saw errors against $1:" >&2; cat "$work/wrk.out" >&2; fi
  awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" \
    -v n="$(awk '/requests in/ {print $1}' "$work/wrk.out")" -v r="$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.out")" \
    'BEGIN {printf "%.0f %.2f %.2f\n", r, (u+s)*1e6/hz/n, u*1e6/hz/n}'
}
# syscalls WHO CONNS → one CSV row per counted system call: calls per request
syscalls() {
  local ev="" sc
  for sc in read recvfrom sendto sendfile64 writev setsockopt epoll_wait epoll_pwait futex; do ev+=" -e syscalls:sys_enter_$sc"; done
  # perf counts DUR seconds in the middle of a wrk run of DUR+2: the requests in its
  # window are wrk's steady rate × DUR.
  URLS_FILE="$work/urls" taskset -c "$LOAD_CPU" wrk -t1 -c"$2" -d"$((DUR + 2))s" -s bench/segments.lua "http://127.0.0.1:$PORT" > "$work/wrk.out" &
  local wp=$!
  sleep 1
  # shellcheck disable=SC2086
  # net_dev_xmit: the packets put on loopback in the server's context (its responses,
  # and the ACKs it sends): a head sent apart from its body shows here.
  perf stat $ev -e net:net_dev_xmit -e context-switches -e page-faults -p "$SPID" -o "$work/stat.txt" -- sleep "$DUR" > /dev/null 2>&1
  wait $wp
  local n
  n=$(awk -v d="$DUR" '/^Requests\/sec/ {printf "%.0f", $2 * d}' "$work/wrk.out")
  awk -v who="$1" -v c="$2" -v n="$n" '$2 ~ /syscalls:|net:|context-switches|page-faults/ {gsub(",", "", $1); name=$2; sub("syscalls:sys_enter_", "", name); sub("net:", "", name); printf "%s,%s,%s,%.3f\n", who, c, name, (n > 0) ? $1 / n : 0}' "$work/stat.txt"
}
mkdir -p "$(dirname "$OUT")"
echo "rep,connections,server,req_per_s,cpu_us_per_req,user_us_per_req" > "$OUT.csv"
label() { case $1 in A) echo "A:$A" ;; B) echo "B:$B" ;; *) echo nginx ;; esac; }
servers=(A B nginx)
for c in $CONNS; do
  for rep in $(seq "$REPS"); do
    for k in 0 1 2; do
      who=${servers[$(( (k + rep) % 3 ))]}
      start "$who"; read -r r cpu user < <(measure "$who" "$c"); stop
      echo "$rep,$c,$who,$r,$cpu,$user" >> "$OUT.csv"
      printf '\r  c=%-5s rep %d/%d %-6s %7s req/s %6s µs CPU/req (user %s)   ' "$c" "$rep" "$REPS" "$who" "$r" "$cpu" "$user" >&2
    done
  done
done
echo >&2
if [ "$SYSCALLS" = 1 ]; then
  echo "server,connections,counter,per_request" > "$OUT-syscalls.csv"
  for c in $CONNS; do for who in A B nginx; do start "$who"; syscalls "$who" "$c" >> "$OUT-syscalls.csv"; stop; done; done
fi
{
  echo "A = $A (sha256 $(sha256sum < "$A" | cut -c1-16)), B = $B (sha256 $(sha256sum < "$B" | cut -c1-16)), nginx $(nginx -v 2>&1 | sed 's#.*/##')"
  echo "$(nproc) cores, server on CPU $SERVER_CPU, wrk -t1 on CPU $LOAD_CPU, ${DUR}s runs, $REPS reps; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| connections | server | req/s median (min–max) | CPU µs/req median (min–max) | user µs/req median | nginx µs ÷ this µs (median of per-rep pairs) |"
  echo "|---|---|---|---|---|---|"
  for c in $CONNS; do
    for who in A B nginx; do
      awk -F, -v c="$c" -v w="$who" '
        function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        NR > 1 && $2 == c && $3 == "nginx" { ng[$1] = $5 }
        NR > 1 && $2 == c && $3 == w { n++; r[n] = $4; cp[n] = $5; us[n] = $6; rep[n] = $1 }
        END {
          for (i = 1; i <= n; i++) { rr[i] = r[i]; cc[i] = cp[i]; q[i] = ng[rep[i]] / cp[i] }
          printf "| %s | %s | %.0f (%.0f–%.0f) | %.1f (%.1f–%.1f) | %.1f | %.2f |\n", c, w, med(rr, n), rmin(r, n), rmax(r, n), med(cc, n), rmin(cp, n), rmax(cp, n), med(us, n), med(q, n)
        }
        function rmin(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
        function rmax(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }' "$OUT.csv"
    done
  done
  echo
  echo "B ÷ A, median of per-rep pairs (min–max): CPU µs/req, and req/s"
  echo
  for c in $CONNS; do
    awk -F, -v c="$c" '
      function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
      NR > 1 && $2 == c && $3 == "A" { ac[$1] = $5; ar[$1] = $4 }
      NR > 1 && $2 == c && $3 == "B" { bc[$1] = $5; br[$1] = $4 }
      END {
        for (k in ac) if ((k in bc) && ac[k] > 0 && ar[k] > 0) { n++; q[n] = bc[k] / ac[k]; r[n] = br[k] / ar[k] }
        if (n) { mq = med(q, n); mr = med(r, n); printf "- %s connections: CPU %.2f (%.2f–%.2f), req/s %.2f (%.2f–%.2f)\n", c, mq, q[1], q[n], mr, r[1], r[n] }
      }' "$OUT.csv"
  done
  if [ "$SYSCALLS" = 1 ]; then
    echo
    echo "System calls per request (perf stat, one run per server):"
    echo
    echo "| connections | server | $(cut -d, -f3 "$OUT-syscalls.csv" | tail -n +2 | awk '!s[$0]++' | paste -sd'|' | sed 's/|/ | /g') |"
    echo "|---|---|$(cut -d, -f3 "$OUT-syscalls.csv" | tail -n +2 | awk '!s[$0]++' | sed 's/.*/---|/' | tr -d '\n')"
    for c in $CONNS; do for who in A B nginx; do
      echo "| $c | $who | $(awk -F, -v c="$c" -v w="$who" '$1 == w && $2 == c {printf "%s | ", $4}' "$OUT-syscalls.csv" | sed 's/ | $//') |"
    done; done
  fi
} | tee "$OUT.md"
