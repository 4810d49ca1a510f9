#!/usr/bin/env bash
# h2-ab.sh — HTTP/2 (h2c, prior knowledge) segment serving before and after a change,
# with nginx's http2 beside it: two streambed binaries (A, B) and nginx serve the same
# packaged segments, one at a time, pinned to SERVER_CPU; h2load (pinned to LOAD_CPU,
# -m4 streams per connection) fetches them. The three alternate within each rep
# (rotated order). Per run: requests/s and the server's CPU µs per request (user+system
# from /proc, and user alone). The h1-ab.sh of HTTP/2.
#
# Usage: bench/h2-ab.sh A_BIN B_BIN   (env: CONNS="50 200" REPS=5 SECONDS_PER_RUN=4
#        SERVER_CPU=0 LOAD_CPU=1 PORT=18290 OUT=docs/results/origin/h2c-ab-DATE)
# Writes OUT.csv (every run) and prints per-rep pairs: B ÷ A and nginx ÷ each.
set -euo pipefail
cd "$(dirname "$0")/.."
A=$(realpath "${1:?usage: bench/h2-ab.sh A_BIN B_BIN}")
B=$(realpath "${2:?usage: bench/h2-ab.sh A_BIN B_BIN}")
CONNS=${CONNS:-"50 200"}
REPS=${REPS:-5}
DUR=${SECONDS_PER_RUN:-4}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
OUT=${OUT:-docs/results/origin/h2c-ab-$(date -u +%Y-%m-%dT%H:%MZ)}
ASSET=${ASSET:-.cache/bench/asset}
PORT=${PORT:-18290}
NAME_OF_BENCH=h2-ab
# shellcheck source=bench/ab-lib.sh
. bench/ab-lib.sh
ab_setup nginx h2load curl taskset
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#http://127.0.0.1:$PORT/vod/$NAME#" > "$work/urls"
ab_nginx_conf http2

# start WHO → streambed A or B, or nginx; the server's PID (nginx's worker) in $SPID
start() {
  ab_start "$1"
  for _ in $(seq 100); do curl -sf --http2-prior-knowledge "$(head -1 "$work/urls")" -o /dev/null && return; sleep 0.1; done
  echo "h2-ab: $1 did not start" >&2; cat "$work/sb.log" "$work/nginx-error.log" 2>/dev/null >&2; exit 1
}
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
# measure CONNS → "req/s cpu_us user_us" over one h2load run (after a 1 s warm-up)
measure() {
  taskset -c "$LOAD_CPU" h2load -t1 -c"$1" -m4 -D1 -i "$work/urls" > /dev/null 2>&1 || true
  local u0 s0 u1 s1
  read -r u0 s0 < <(ticks "$SPID")
  taskset -c "$LOAD_CPU" h2load -t1 -c"$1" -m4 -D"$DUR" -i "$work/urls" > "$work/h2load.out" 2>&1 || true
  read -r u1 s1 < <(ticks "$SPID")
  if ! grep -q ' 0 failed, 0 errored' "$work/h2load.out"; then echo "h2-ab: h2load saw failures:" >&2; grep '^requests:' "$work/h2load.out" >&2; fi
  awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" \
    -v n="$(awk '/^requests:/ {print $8}' "$work/h2load.out")" -v r="$(awk '/^finished in/ {gsub(",", ""); print $4}' "$work/h2load.out")" \
    'BEGIN {printf "%.0f %.2f %.2f\n", r, (n > 0) ? (u+s)*1e6/hz/n : 0, (n > 0) ? u*1e6/hz/n : 0}'
}
mkdir -p "$(dirname "$OUT")"
echo "rep,connections,server,req_per_s,cpu_us_per_req,user_us_per_req" > "$OUT.csv"
servers=(A B nginx)
for c in $CONNS; do
  for rep in $(seq "$REPS"); do
    for k in 0 1 2; do
      who=${servers[$(( (k + rep) % 3 ))]}
      start "$who"; read -r r cpu user < <(measure "$c"); stop
      echo "$rep,$c,$who,$r,$cpu,$user" >> "$OUT.csv"
      printf '\r  c=%-5s rep %d/%d %-6s %7s req/s %7s µs CPU/req (user %s)   ' "$c" "$rep" "$REPS" "$who" "$r" "$cpu" "$user" >&2
    done
  done
done
echo >&2
echo "A = $A, B = $B, nginx $(nginx -v 2>&1 | sed 's#.*/##'); $(nproc) cores, server on CPU $SERVER_CPU, h2load -t1 -m4 on CPU $LOAD_CPU, ${DUR}s runs, $REPS reps; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F, '
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR > 1 { k = $2; cs[k] = 1; cpu[$3, k, $1] = $5; if ($1 > reps[k]) reps[k] = $1 }
  END {
    print "| connections | CPU µs/req A, B, nginx (medians) | B ÷ A CPU, per-rep pairs (median) | nginx ÷ A | nginx ÷ B |"
    print "|---|---|---|---|---|"
    for (k in cs) {
      for (r = 1; r <= reps[k]; r++) { a[r] = cpu["A", k, r]; b[r] = cpu["B", k, r]; g[r] = cpu["nginx", k, r]; x[r] = b[r] / a[r]; ea[r] = g[r] / a[r]; eb[r] = g[r] / b[r] }
      n = reps[k]
      printf "| %s | %.1f, %.1f, %.1f | %.2f | %.2f | %.2f |\n", k, med(a, n), med(b, n), med(g, n), med(x, n), med(ea, n), med(eb, n)
    }
  }' "$OUT.csv"
