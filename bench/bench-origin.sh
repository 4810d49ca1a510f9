#!/usr/bin/env bash
# bench-origin.sh — wrk against Streambed and nginx serving the same packaged segments
# on loopback, at several keep-alive connection counts; prints requests/s and Gbit/s
# side by side with the ratio, as medians of REPS runs (with min–max spread).
#
# Every run's figures go to RAW (JSON: the runs and the conditions), the tables to
# OUT (markdown, appended).
#
# The servers run on SERVER_CPUS and the load generators (wrk, h2load) on LOAD_CPUS
# (taskset), so load and server do not share a core; nginx gets one worker per server
# CPU. Streambed runs twice: as built (its lean HTTP/1.1 path for segments in front
# of net/http) and with net_http_only (every request through net/http, the path
# before the lean one), so the change is measured against its peer in the same run.
# HTTP/2 (H2=1): h2load against Streambed's h2c (prior knowledge) and TLS h2
# listeners and nginx's http2 listeners on the same files.
#
# Usage: bench/bench-origin.sh [ASSET_DIR]   (env: CONNS="50 200 1000" REPS=5 SECONDS_PER_RUN=5
#        H2=1 H2_CONNS="50 200" H2_STREAMS=4 SERVER_CPUS=0 LOAD_CPUS=1
#        OUT=docs/results/origin.md RAW=docs/results/origin/DATE.json)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/streambed}
ASSET=${1:-.cache/bench/asset}
CONNS=${CONNS:-"50 200 1000"}
REPS=${REPS:-5}
DUR=${SECONDS_PER_RUN:-5}
SB_PORT=${SB_PORT:-18080}
NGX_PORT=${NGX_PORT:-18081}
STD_PORT=${STD_PORT:-18082}    # Streambed with net_http_only
SB_TLS_PORT=${SB_TLS_PORT:-18443}
NGX_H2C_PORT=${NGX_H2C_PORT:-18083}
NGX_TLS_PORT=${NGX_TLS_PORT:-18444}
H2=${H2:-1}
H2_CONNS=${H2_CONNS:-"50 200"}
H2_STREAMS=${H2_STREAMS:-4}
if [ "$(nproc)" -ge 2 ]; then
  SERVER_CPUS=${SERVER_CPUS:-0}
  LOAD_CPUS=${LOAD_CPUS:-$(( $(nproc) - 1 ))}
else
  SERVER_CPUS=${SERVER_CPUS:-0}; LOAD_CPUS=${LOAD_CPUS:-0}
fi
# cpus_in LIST → how many CPUs a taskset list such as "0", "0-1" or "0,2" names.
cpus_in() { echo "$1" | tr ',' '\n' | awk -F- '{n += (NF == 2) ? $2 - $1 + 1 : 1} END {print n}'; }
NSERVER=$(cpus_in "$SERVER_CPUS"); NLOAD=$(cpus_in "$LOAD_CPUS")
OUT=${OUT-docs/results/origin.md}   # OUT= (empty): print the tables only
STAMP=$(date -u +%Y-%m-%dT%H:%MZ)
RAW=${RAW:-docs/results/origin/$STAMP.json}

for tool in nginx wrk curl openssl taskset $( [ "$H2" = 1 ] && echo h2load ); do
  command -v "$tool" >/dev/null || { echo "bench-origin: $tool is missing (make bench-origin installs it)" >&2; exit 1; }
done

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

# A certificate both servers use for TLS.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# nginx with what a streaming engineer would turn on for static segments.
cat > "$work/nginx.conf" <<NGX
worker_processes $NSERVER;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 120s;
  open_file_cache max=10000 inactive=60s;
  types { video/mp4 m4s mp4; application/dash+xml mpd; }
  ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
  server {
    listen 127.0.0.1:$NGX_PORT;
    listen 127.0.0.1:$NGX_H2C_PORT http2;
    listen 127.0.0.1:$NGX_TLS_PORT ssl http2;
    location /vod/$NAME/ { alias $ASSET/; add_header Cache-Control "public, max-age=31536000, immutable"; }
  }
}
NGX
taskset -c "$SERVER_CPUS" nginx -c "$work/nginx.conf" -e "$work/nginx-error.log"
mkdir -p "$work/assets" && ln -s "$ASSET" "$work/assets/$NAME"
echo "net_http_only: true" > "$work/std.yaml"
taskset -c "$SERVER_CPUS" "$BIN" serve --http 127.0.0.1:$SB_PORT --https 127.0.0.1:$SB_TLS_PORT --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
  --data-dir "$work/sb-data" --assets "$work/assets" --no-demo --channel "x=$NAME" --log-level warn > "$work/sb.log" 2>&1 &
SB_PID=$!
taskset -c "$SERVER_CPUS" "$BIN" serve --config "$work/std.yaml" --http 127.0.0.1:$STD_PORT --https "" \
  --data-dir "$work/std-data" --assets "$work/assets" --no-demo --channel "x=$NAME" --log-level warn > "$work/std.log" 2>&1 &
STD_PID=$!
for port in $SB_PORT $STD_PORT; do
  for i in $(seq 50); do curl -sf "http://127.0.0.1:$port/api/streams" >/dev/null && break; sleep 0.2; done
  curl -sf "http://127.0.0.1:$port$(head -1 "$work/urls")" -o /dev/null || { echo "streambed on $port did not start:"; cat "$work/sb.log" "$work/std.log"; exit 1; }
done
curl -sf "http://127.0.0.1:$NGX_PORT$(head -1 "$work/urls")" -o /dev/null || { echo "nginx did not start:"; cat "$work/nginx-error.log"; exit 1; }
# h2load reads absolute URLs, one a line; each connection starts at a different one.
for p in $SB_PORT:sb-h2c $NGX_H2C_PORT:ngx-h2c; do sed "s#^#http://127.0.0.1:${p%%:*}#" "$work/urls" > "$work/urls.${p##*:}"; done
for p in $SB_TLS_PORT:sb-tls $NGX_TLS_PORT:ngx-tls; do sed "s#^#https://127.0.0.1:${p%%:*}#" "$work/urls" > "$work/urls.${p##*:}"; done

# cpu_ticks PID... → user+system clock ticks of those processes and their threads.
cpu_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }
server_pids() {
  case $1 in
    sb) echo "$SB_PID" ;;
    sbstd) echo "$STD_PID" ;;
    *) echo "$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')" ;;
  esac
}

# run_wrk WHO PORT CONNS → "req/s Gbit/s server-CPU-µs-per-request"
run_wrk() {
  local pids before after
  pids=$(server_pids "$1"); before=$(cpu_ticks $pids)
  URLS_FILE="$work/urls" taskset -c "$LOAD_CPUS" wrk -t"$NLOAD" -c"$3" -d"${DUR}s" --timeout 10s -s bench/segments.lua "http://127.0.0.1:$2" > "$work/wrk.out" 2>&1
  after=$(cpu_ticks $pids)
  local rps bytes_s reqs
  rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.out")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  bytes_s=$(awk '/^Transfer\/sec/ {v=$2; u=substr(v,length(v)-1); n=v+0; m=(u=="GB")?1e9:(u=="MB")?1e6:(u=="KB")?1e3:1; print n*m}' "$work/wrk.out")
  if grep -q "Non-2xx\|Socket errors" "$work/wrk.out"; then echo "wrk against $1 saw errors:" >&2; cat "$work/wrk.out" >&2; fi
  awk -v r="$rps" -v b="$bytes_s" -v n="$reqs" -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.0f %.3f %.1f\n", r, b*8/1e9, (n>0)?t*1e6/hz/n:0}'
}

# run_h2load WHO URLS CONNS → "req/s Gbit/s server-CPU-µs-per-request", like run_wrk.
run_h2load() {
  local pids before after
  pids=$(server_pids "$1"); before=$(cpu_ticks $pids)
  taskset -c "$LOAD_CPUS" h2load -t"$NLOAD" -c"$3" -m"$H2_STREAMS" -D"$DUR" -i "$2" > "$work/h2load.out" 2>&1 || true
  after=$(cpu_ticks $pids)
  local rps bytes_s reqs
  # "finished in 5.00s, 12345.60 req/s, 1.20GB/s" and "requests: N total, N started, N done, N succeeded, ..."
  rps=$(awk '/^finished in/ {gsub(",", ""); print $4}' "$work/h2load.out")
  bytes_s=$(awk '/^finished in/ {v=$6; u=substr(v,length(v)-3,2); n=v+0; m=(u=="GB")?1e9:(u=="MB")?1e6:(u=="KB")?1e3:1; print n*m}' "$work/h2load.out")
  reqs=$(awk '/^requests:/ {print $8}' "$work/h2load.out")
  if ! awk '/^requests:/ {exit !($10 == 0 && $12 == 0)}' "$work/h2load.out"; then echo "h2load against $1 saw failures:" >&2; grep -E "^(requests|status codes):" "$work/h2load.out" >&2; fi
  awk -v r="${rps:-0}" -v b="${bytes_s:-0}" -v n="${reqs:-0}" -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.0f %.3f %.1f\n", r, b*8/1e9, (n>0)?t*1e6/hz/n:0}'
}
# median_spread "v1 v2 v3" → "median (min–max)"
median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%s %s %s\n", m, a[1], a[NR]}'; }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
label() { case $1 in sb) echo streambed ;; sbstd) echo streambed-net-http-only ;; *) echo nginx ;; esac; }

# paired "A1 A2 ..." "B1 B2 ..." → "median (min–max)" of Ai ÷ Bi: each rep's two
# runs were back to back, so their ratio is less moved by the machine's other load
# than the ratio of the medians.
paired() {
  awk -v a="$1" -v b="$2" 'BEGIN {n = split(a, x, " "); split(b, y, " "); for (i = 1; i <= n; i++) printf "%.3f\n", (y[i] > 0) ? x[i] / y[i] : 0}' |
    median | awk '{printf "%.2f (%.2f–%.2f)", $1, $2, $3}'
}

# cell PROTO CONNS SERVERS... → one table row; each rep runs every server once, the
# order rotated per rep so no server always runs on a warmer (or busier) machine.
declare -A R G C
cell() {
  local proto=$1 c=$2; shift 2
  local servers=("$@") n=$# rep k who r g cpu
  for who in "${servers[@]}"; do R[$who]=""; G[$who]=""; C[$who]=""; done
  for rep in $(seq "$REPS"); do
    for k in $(seq 0 $((n - 1))); do
      who=${servers[$(( (k + rep - 1) % n ))]}
      case $proto in
        http1) read -r r g cpu < <(run_wrk "$who" "$(case $who in sb) echo $SB_PORT ;; sbstd) echo $STD_PORT ;; *) echo $NGX_PORT ;; esac)" "$c") ;;
        h2c) read -r r g cpu < <(run_h2load "$who" "$work/urls.$who-h2c" "$c") ;;
        h2-tls) read -r r g cpu < <(run_h2load "$who" "$work/urls.$who-tls" "$c") ;;
      esac
      printf '{"protocol": "%s", "connections": %s, "rep": %s, "server": "%s", "req_per_s": %s, "gbit_per_s": %s, "server_cpu_us_per_req": %s}\n' \
        "$proto" "$c" "$rep" "$(label "$who")" "$r" "$g" "$cpu" >> "$work/runs.jsonl"
      R[$who]+="$r "; G[$who]+="$g "; C[$who]+="$cpu "
      printf '\r  %-6s c=%-5s run %d/%d %-5s %8s req/s %6s Gbit/s %6s µs CPU/req   ' "$proto" "$c" "$rep" "$REPS" "$who" "$r" "$g" "$cpu" >&2
    done
  done
  local row="| $c"
  for who in "${servers[@]}"; do
    read -r m lo hi < <(echo ${R[$who]} | median); row+=" | $m ($lo–$hi)"
  done
  read -r ngm _ _ < <(echo ${R[ngx]} | median)
  read -r ngc _ _ < <(echo ${C[ngx]} | median)
  for who in "${servers[@]}"; do
    [ "$who" = ngx ] && continue
    read -r m _ _ < <(echo ${R[$who]} | median)
    row+=" | **$(awk -v a="$m" -v b="$ngm" 'BEGIN {printf "%.2f", (b>0)?a/b:0}')** (pairs $(paired "${R[$who]}" "${R[ngx]}"))"
  done
  for who in "${servers[@]}"; do
    read -r m lo hi < <(echo ${C[$who]} | median); row+=" | $m ($lo–$hi)"
  done
  for who in "${servers[@]}"; do
    [ "$who" = ngx ] && continue
    read -r m _ _ < <(echo ${C[$who]} | median)
    row+=" | **$(awk -v a="$m" -v b="$ngc" 'BEGIN {printf "%.2f", (a>0)?b/a:0}')** (pairs $(paired "${C[ngx]}" "${C[$who]}"))"
  done
  for who in "${servers[@]}"; do
    read -r m _ _ < <(echo ${G[$who]} | median); row+=" | $m"
  done
  echo "$row |"
}

h1rows=(); h2rows=()
for c in $CONNS; do h1rows+=("$(cell http1 "$c" sb sbstd ngx)"); done
if [ "$H2" = 1 ]; then
  for proto in h2c h2-tls; do
    for c in $H2_CONNS; do h2rows+=("$(cell "$proto" "$c" sb ngx | sed "s/^| /| $proto | /")"); done
  done
fi
echo >&2

mkdir -p "$(dirname "$RAW")"
{
  printf '{\n "command": "make bench-origin (bench/bench-origin.sh; CONNS=\\"%s\\" REPS=%s SECONDS_PER_RUN=%s H2=%s H2_CONNS=\\"%s\\" H2_STREAMS=%s)",\n' "$CONNS" "$REPS" "$DUR" "$H2" "$H2_CONNS" "$H2_STREAMS"
  printf ' "date": "%s", "cores": %s, "loadavg_before": "%s", "loadavg_after": "%s", "server_cpus": "%s", "load_cpus": "%s",\n' "$STAMP" "$(nproc)" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)" "$SERVER_CPUS" "$LOAD_CPUS"
  printf ' "streambed": "%s", "nginx": "%s", "wrk": "%s", "h2load": "%s", "segments": %s,\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$(nginx -v 2>&1 | sed 's#.*/##')" "$(wrk -v 2>&1 | head -1 | awk '{print $2}')" "$(h2load --version | awk '{print $2}')" "$(wc -l < "$work/urls")"
  printf ' "runs": [\n'
  sed '$!s/$/,/; s/^/  /' "$work/runs.jsonl"
  printf ' ]\n}\n'
} > "$RAW"
echo "runs in $RAW"

h1table=$(printf '%s\n' "| connections | Streambed req/s (min–max) | Streambed net/http only req/s | nginx req/s | req/s Streambed ÷ nginx (per-rep pairs) | net/http only ÷ nginx (pairs) | Streambed CPU µs/req | net/http only CPU µs/req | nginx CPU µs/req | efficiency Streambed ÷ nginx (pairs) | net/http only ÷ nginx (pairs) | Gbit/s Streambed | net/http only | nginx |" "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" "${h1rows[@]}")
echo "$h1table"
h2table=""
if [ "$H2" = 1 ]; then
  h2table=$(printf '%s\n' "| protocol | connections | Streambed req/s (min–max) | nginx req/s | req/s Streambed ÷ nginx (per-rep pairs) | Streambed CPU µs/req | nginx CPU µs/req | efficiency Streambed ÷ nginx (pairs) | Gbit/s Streambed | nginx |" "|---|---|---|---|---|---|---|---|---|---|" "${h2rows[@]}")
  echo "$h2table"
fi
if [ -n "$OUT" ]; then
  mkdir -p "$(dirname "$OUT")"
  if [ ! -f "$OUT" ]; then
    printf '# Origin throughput: Streambed vs nginx\n\nSegment serving on loopback, measured by `make bench-origin`. Each section is one run, newest last.\nThe goal is Streambed ÷ nginx ≥ 1.\nServer CPU µs per request (user+system time of the server processes over the requests the load generator counted) is steadier than req/s when other work shares the machine; efficiency = nginx µs ÷ Streambed µs, so > 1 means Streambed spends less CPU per segment.\n\n' > "$OUT"
  fi
  {
    echo "## $(date -u +%Y-%m-%dT%H:%MZ) — $(nproc) cores, ${DUR}s × $REPS runs per cell, medians"
    echo
    echo "Command: \`make bench-origin\` (bench/bench-origin.sh; CONNS=\"$CONNS\" REPS=$REPS SECONDS_PER_RUN=$DUR H2=$H2 H2_CONNS=\"$H2_CONNS\" H2_STREAMS=$H2_STREAMS). Every run: [${RAW#docs/results/}](${RAW#docs/results/})."
    echo "Asset: $(wc -l < "$work/urls") segments (2 s, all renditions), keep-alive, loopback. Servers pinned to CPU $SERVER_CPUS, load generator (wrk -t$NLOAD; h2load -t$NLOAD -m$H2_STREAMS) to CPU $LOAD_CPUS (taskset). Load average before/after: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "nginx $(nginx -v 2>&1 | sed 's#.*/##') ($NSERVER worker), sendfile on, tcp_nopush, access_log off, open_file_cache, http2 on its h2c and TLS listeners; Streambed $(git rev-parse --short HEAD 2>/dev/null), as built and with \`net_http_only: true\`."
    echo
    echo "HTTP/1.1 (wrk):"
    echo
    echo "$h1table"
    echo
    if [ -n "$h2table" ]; then
      echo "HTTP/2 (h2load, same files):"
      echo
      echo "$h2table"
      echo
    fi
  } >> "$OUT"
  echo "recorded in $OUT"
fi
