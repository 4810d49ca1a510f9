#!/usr/bin/env bash
# bench-origin.sh — wrk against Streambed and nginx serving the same packaged segments
# on loopback, at several keep-alive connection counts; prints requests/s and Gbit/s
# side by side with the ratio, as medians of REPS runs (with min–max spread).
#
# Every wrk run's figures go to RAW (JSON: the runs and the conditions), the table to
# OUT (markdown, appended).
#
# Usage: bench/bench-origin.sh [ASSET_DIR]   (env: CONNS="50 200 1000" REPS=3 SECONDS_PER_RUN=5
#        OUT=docs/results/origin.md RAW=docs/results/origin/DATE.json)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
ASSET=${1:-.cache/bench/asset}
CONNS=${CONNS:-"50 200 1000"}
REPS=${REPS:-3}
DUR=${SECONDS_PER_RUN:-5}
SB_PORT=${SB_PORT:-18080}
NGX_PORT=${NGX_PORT:-18081}
OUT=${OUT:-docs/results/origin.md}
STAMP=$(date -u +%Y-%m-%dT%H:%MZ)
RAW=${RAW:-docs/results/origin/$STAMP.json}

if [ ! -f "$ASSET/stream.json" ]; then
  echo "== packaging a 2 s-segment asset into $ASSET"
  "$BIN" package --synthetic 40s --segment-duration 2s --name bench -o "$ASSET"
fi
ASSET=$(cd "$ASSET" && pwd)
NAME=$(basename "$ASSET")
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; rm -rf "$work"' EXIT

# Every segment of every track, as the URL paths both servers answer.
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#/vod/$NAME#" > "$work/urls"
echo "== $(wc -l < "$work/urls") segment URLs, $(du -sh "$ASSET" | cut -f1) of media"

# nginx with what a streaming engineer would turn on for static segments.
cat > "$work/nginx.conf" <<NGX
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 120s;
  open_file_cache max=10000 inactive=60s;
  types { video/mp4 m4s mp4; application/dash+xml mpd; }
  server {
    listen 127.0.0.1:$NGX_PORT;
    location /vod/$NAME/ { alias $ASSET/; add_header Cache-Control "public, max-age=31536000, immutable"; }
  }
}
NGX
nginx -c "$work/nginx.conf" -e "$work/nginx-error.log"
mkdir -p "$work/assets" && ln -s "$ASSET" "$work/assets/$NAME"
"$BIN" serve --http 127.0.0.1:$SB_PORT --https "" --assets "$work/assets" --no-demo --channel "x=$NAME" --log-level warn > "$work/sb.log" 2>&1 &
SB_PID=$!
for i in $(seq 50); do curl -sf "http://127.0.0.1:$SB_PORT/api/streams" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$SB_PORT$(head -1 "$work/urls")" -o /dev/null || { echo "streambed did not start:"; cat "$work/sb.log"; exit 1; }
curl -sf "http://127.0.0.1:$NGX_PORT$(head -1 "$work/urls")" -o /dev/null || { echo "nginx did not start:"; cat "$work/nginx-error.log"; exit 1; }

# cpu_ticks PID... → user+system clock ticks of those processes and their threads.
cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }
server_pids() { if [ "$1" = sb ]; then echo "$SB_PID"; else echo "$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')"; fi; }

# run_wrk WHO PORT CONNS → "req/s Gbit/s server-CPU-µs-per-request"
run_wrk() {
  local pids before after
  pids=$(server_pids "$1"); before=$(cpu_ticks $pids)
  URLS_FILE="$work/urls" wrk -t2 -c"$3" -d"${DUR}s" --timeout 10s -s bench/segments.lua "http://127.0.0.1:$2" > "$work/wrk.out" 2>&1
  after=$(cpu_ticks $pids)
  local rps bytes_s reqs
  rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.out")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  bytes_s=$(awk '/^Transfer\/sec/ {v=$2; u=substr(v,length(v)-1); n=v+0; m=(u=="GB")?1e9:(u=="MB")?1e6:(u=="KB")?1e3:1; print n*m}' "$work/wrk.out")
  awk -v r="$rps" -v b="$bytes_s" -v n="$reqs" -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.0f %.3f %.1f\n", r, b*8/1e9, (n>0)?t*1e6/hz/n:0}'
}
# median_spread "v1 v2 v3" → "median (min–max)"
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%s %s %s\n", m, a[1], a[NR]}'; }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for c in $CONNS; do
  sb_r=(); sb_g=(); ng_r=(); ng_g=(); sb_c=(); ng_c=()
  for rep in $(seq "$REPS"); do
    # Alternate the order so neither server always runs on a warmer machine.
    if (( rep % 2 )); then order="sb ngx"; else order="ngx sb"; fi
    for who in $order; do
      port=$SB_PORT; [ "$who" = ngx ] && port=$NGX_PORT
      read -r r g cpu < <(run_wrk "$who" "$port" "$c")
      printf '{"connections": %s, "rep": %s, "server": "%s", "req_per_s": %s, "gbit_per_s": %s, "server_cpu_us_per_req": %s}\n' \
        "$c" "$rep" "$( [ "$who" = sb ] && echo streambed || echo nginx )" "$r" "$g" "$cpu" >> "$work/runs.jsonl"
      if [ "$who" = sb ]; then sb_r+=("$r"); sb_g+=("$g"); sb_c+=("$cpu"); else ng_r+=("$r"); ng_g+=("$g"); ng_c+=("$cpu"); fi
      printf '\r  c=%-5s run %d/%d %-4s %8s req/s %6s Gbit/s %6s µs CPU/req   ' "$c" "$rep" "$REPS" "$who" "$r" "$g" "$cpu" >&2
    done
  done
  read -r sbm sbmin sbmax < <(echo "${sb_r[*]}" | median)
  read -r ngm ngmin ngmax < <(echo "${ng_r[*]}" | median)
  read -r sbg _ _ < <(echo "${sb_g[*]}" | median)
  read -r ngg _ _ < <(echo "${ng_g[*]}" | median)
  read -r sbc sbcmin sbcmax < <(echo "${sb_c[*]}" | median)
  read -r ngc ngcmin ngcmax < <(echo "${ng_c[*]}" | median)
  ratio=$(awk -v a="$sbm" -v b="$ngm" 'BEGIN {printf "%.2f", (b>0)?a/b:0}')
  cratio=$(awk -v a="$sbc" -v b="$ngc" 'BEGIN {printf "%.2f", (a>0)?b/a:0}')
  rows+=("| $c | $sbm ($sbmin–$sbmax) | $sbg | $ngm ($ngmin–$ngmax) | $ngg | **$ratio** | $sbc ($sbcmin–$sbcmax) | $ngc ($ngcmin–$ngcmax) | **$cratio** |")
done
echo >&2

mkdir -p "$(dirname "$RAW")"
{
  printf '{\n "command": "make bench-origin (bench/bench-origin.sh; CONNS=\\"%s\\" REPS=%s SECONDS_PER_RUN=%s)",\n' "$CONNS" "$REPS" "$DUR"
  printf ' "date": "%s", "cores": %s, "loadavg_before": "%s",\n' "$STAMP" "$(nproc)" "$LOAD_BEFORE"
  printf ' "streambed": "%s", "nginx": "%s", "segments": %s,\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$(nginx -v 2>&1 | sed 's#.*/##')" "$(wc -l < "$work/urls")"
  printf ' "runs": [\n'
  sed '$!s/$/,/; s/^/  /' "$work/runs.jsonl"
  printf ' ]\n}\n'
} > "$RAW"
echo "runs in $RAW"

table=$(printf '%s\n' "| connections | Streambed req/s (min–max) | Streambed Gbit/s | nginx req/s (min–max) | nginx Gbit/s | req/s Streambed ÷ nginx | Streambed CPU µs/req | nginx CPU µs/req | efficiency Streambed ÷ nginx |" "|---|---|---|---|---|---|---|---|---|" "${rows[@]}")
echo "$table"
if [ -n "$OUT" ]; then
  mkdir -p "$(dirname "$OUT")"
  if [ ! -f "$OUT" ]; then
    printf '# Origin throughput: Streambed vs nginx\n\nSegment serving on loopback, measured by `make bench-origin`. Each section is one run, newest last.\nThe goal is Streambed ÷ nginx ≥ 1. wrk shares the 2 cores with the server, so absolute numbers are low and noisy; compare ratios within a run.\nServer CPU µs per request (user+system time of the server processes over the requests wrk counted) is steadier than req/s when other work shares the machine; efficiency = nginx µs ÷ Streambed µs, so > 1 means Streambed spends less CPU per segment.\n\n' > "$OUT"
  fi
  {
    echo "## $(date -u +%Y-%m-%dT%H:%MZ) — $(nproc) cores, ${DUR}s × $REPS runs per cell, medians"
    echo
    echo "Command: \`make bench-origin\` (bench/bench-origin.sh; CONNS=\"$CONNS\" REPS=$REPS SECONDS_PER_RUN=$DUR). Every run: [${RAW#docs/results/}](${RAW#docs/results/})."
    echo "Asset: $(wc -l < "$work/urls") segments (2 s, all renditions), wrk -t2 on the same machine, keep-alive, loopback."
    echo "nginx $(nginx -v 2>&1 | sed 's#.*/##'), sendfile on, access_log off, open_file_cache; Streambed $(git rev-parse --short HEAD 2>/dev/null)."
    echo
    echo "$table"
    echo
  } >> "$OUT"
  echo "recorded in $OUT"
fi
