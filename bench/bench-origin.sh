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
# wrk on one core is the limit of the HTTP/1.1 table for both servers (its core is
# busy throughout), so there req/s mostly measures wrk and CPU per request is the
# comparison. SERVER_QUOTA=0.3 (root) adds a server-bound table: each server (nginx
# with all its workers) in a cgroup v1 CPU quota of that share of a core
# (bench/capacity-lib.sh), so the server, not wrk, is the limit and req/s is the
# server's capacity at that budget. Each run records the load CPU's busy share and
# the server's cores used and share of throttled quota periods, which show it, and
# a verdict per row (server-bound: yes, or no and why). wrk spends more CPU per
# request than either server (most at 1000 connections): at 0.5 of a core the load
# CPU saturated at 50 and 1000 connections here; 0.3 left it 67-78% busy.
# H1=0 skips the wrk-bound HTTP/1.1 table.
#
# Usage: bench/bench-origin.sh [ASSET_DIR]   (env: CONNS="50 200 1000" REPS=5 SECONDS_PER_RUN=5
#        H2=1 H2_CONNS="50 200" H2_STREAMS=4 SERVER_CPUS=0 LOAD_CPUS=1
#        H1=1 SERVER_QUOTA= QUOTA_CONNS="$CONNS" CG_PERIOD=10000
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
H1=${H1:-1}
SERVER_QUOTA=${SERVER_QUOTA:-}   # share of a core for each server's cgroup: the server-bound table
QUOTA_CONNS=${QUOTA_CONNS:-$CONNS}
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
GROUPS_=()
if [ -n "$SERVER_QUOTA" ]; then
  # shellcheck source=bench/capacity-lib.sh
  . bench/capacity-lib.sh
  [ "$(id -u)" = 0 ] || { echo "bench-origin: SERVER_QUOTA needs root (cgroup CPU quotas)" >&2; exit 1; }
  [ -d "$CG" ] || { echo "bench-origin: SERVER_QUOTA needs the cgroup v1 cpu controller at $CG" >&2; exit 1; }
  awk -v q="$SERVER_QUOTA" -v p="$CG_PERIOD" 'BEGIN {exit !(q > 0 && q * p >= 1000)}' ||
    { echo "bench-origin: SERVER_QUOTA=$SERVER_QUOTA: want a share of a core > 0 whose quota is at least 1000 µs of the ${CG_PERIOD} µs period" >&2; exit 1; }
  GROUPS_=("bench-origin-$$-sb" "bench-origin-$$-sbstd" "bench-origin-$$-ngx")
fi

if [ ! -f "$ASSET/stream.json" ]; then
  echo "== packaging a 2 s-segment asset into $ASSET"
  "$BIN" package --synthetic 40s --segment-duration 2s --name bench -o "$ASSET"
fi
ASSET=$(cd "$ASSET" && pwd)
NAME=$(basename "$ASSET")
work=$(mktemp -d)
cleanup() {
  set +e # every step runs, whatever failed before it (a server that died, no jobs left)
  local np=""
  [ -f "$work/nginx.pid" ] && np=$(cat "$work/nginx.pid") && kill "$np" 2>/dev/null
  # shellcheck disable=SC2046
  kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
  if [ ${#GROUPS_[@]} -gt 0 ]; then # a cgroup goes once its processes have
    for _ in $(seq 50); do [ -n "$np" ] && kill -0 "$np" 2>/dev/null || break; sleep 0.1; done
    cap_uncgroup "${GROUPS_[@]}"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

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

# SERVER_QUOTA: each server's processes (nginx's master and workers) in a group of
# their own, without a quota until the server-bound cells (set_quota).
group_of() { case $1 in sb) echo "${GROUPS_[0]}" ;; sbstd) echo "${GROUPS_[1]}" ;; *) echo "${GROUPS_[2]}" ;; esac; }
if [ -n "$SERVER_QUOTA" ]; then
  for who in sb sbstd ngx; do
    cap_cgroup "$(group_of $who)" "$SERVER_QUOTA"; echo -1 > "$CG/$(group_of $who)/cpu.cfs_quota_us"
    for p in $(server_pids $who); do echo "$p" > "$CG/$(group_of $who)/cgroup.procs"; done
  done
fi
# set_quota SHARE|-1 → every server's group held to SHARE of a core, or unlimited.
set_quota() {
  local who
  for who in sb sbstd ngx; do
    if [ "$1" = -1 ]; then echo -1 > "$CG/$(group_of $who)/cpu.cfs_quota_us"; else cap_cgroup "$(group_of $who)" "$1"; fi
  done
}
# cpu_busy → "busy total" clock ticks of the load generator's CPUs (/proc/stat): its
# busy share over a run says whether wrk was the limit.
LOAD_CPU_LIST=$(echo "$LOAD_CPUS" | tr ',' '\n' | awk -F- '{for (i = $1; i <= ((NF == 2) ? $2 : $1); i++) printf "cpu%d ", i}')
cpu_busy() {
  awk -v want=" $LOAD_CPU_LIST" 'index(want, " " $1 " ") {busy += $2 + $3 + $4 + $7 + $8 + $9; total += $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9} END {print busy, total}' /proc/stat
}
# throttle_stat WHO → "periods throttled" of the server's group (0 0 without groups).
throttle_stat() {
  if [ -z "$SERVER_QUOTA" ]; then echo "0 0"; return; fi
  awk '$1 == "nr_periods" {p = $2} $1 == "nr_throttled" {t = $2} END {print p, t}' "$CG/$(group_of "$1")/cpu.stat"
}

# run_wrk WHO PORT CONNS → "req/s Gbit/s server-CPU-µs-per-request server-cores
# load-CPU-busy-share throttled-share wrk-cores"
run_wrk() {
  local pids before after b0 b1 t0 t1 wt
  pids=$(server_pids "$1"); before=$(cpu_ticks $pids)
  b0=$(cpu_busy); t0=$(throttle_stat "$1")
  # wrk's own CPU: the subshell's reaped children's user+system ticks (/proc stat
  # fields 16 and 17) once wrk has ended.
  wt=$(URLS_FILE="$work/urls" taskset -c "$LOAD_CPUS" wrk -t"$NLOAD" -c"$3" -d"${DUR}s" --timeout 10s -s bench/segments.lua "http://127.0.0.1:$2" > "$work/wrk.out" 2>&1
    awk '{print $16 + $17}' "/proc/$BASHPID/stat")
  after=$(cpu_ticks $pids)
  b1=$(cpu_busy); t1=$(throttle_stat "$1")
  local rps bytes_s reqs
  rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.out")
  reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  bytes_s=$(awk '/^Transfer\/sec/ {v=$2; u=substr(v,length(v)-1); n=v+0; m=(u=="GB")?1e9:(u=="MB")?1e6:(u=="KB")?1e3:1; print n*m}' "$work/wrk.out")
  if grep -q "Non-2xx\|Socket errors" "$work/wrk.out"; then echo "wrk against $1 saw errors:" >&2; cat "$work/wrk.out" >&2; fi
  awk -v r="$rps" -v b="$bytes_s" -v n="$reqs" -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v d="$DUR" \
    -v b0="$b0" -v b1="$b1" -v t0="$t0" -v t1="$t1" -v wt="${wt:-0}" \
    'BEGIN {split(b0, x, " "); split(b1, y, " "); split(t0, p, " "); split(t1, q, " ")
      printf "%.0f %.3f %.1f %.3f %.3f %.3f %.3f\n", r, b*8/1e9, (n>0)?t*1e6/hz/n:0, t/hz/d,
        (y[2] > x[2]) ? (y[1] - x[1]) / (y[2] - x[2]) : 0, (q[1] > p[1]) ? (q[2] - p[2]) / (q[1] - p[1]) : 0, wt/hz/d}'
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
declare -A R G C K L T W
cell() {
  local proto=$1 c=$2; shift 2
  local servers=("$@") n=$# rep k who r g cpu cores busy thr wrkc
  for who in "${servers[@]}"; do R[$who]=""; G[$who]=""; C[$who]=""; K[$who]=""; L[$who]=""; T[$who]=""; W[$who]=""; done
  for rep in $(seq "$REPS"); do
    for k in $(seq 0 $((n - 1))); do
      who=${servers[$(( (k + rep - 1) % n ))]}
      case $proto in
        http1 | http1-quota) read -r r g cpu cores busy thr wrkc < <(run_wrk "$who" "$(case $who in sb) echo $SB_PORT ;; sbstd) echo $STD_PORT ;; *) echo $NGX_PORT ;; esac)" "$c") ;;
        h2c) read -r r g cpu < <(run_h2load "$who" "$work/urls.$who-h2c" "$c") ;;
        h2-tls) read -r r g cpu < <(run_h2load "$who" "$work/urls.$who-tls" "$c") ;;
      esac
      extra=""
      case $proto in http1*) extra=$(printf ', "server_cores": %s, "wrk_cores": %s, "load_cpu_busy": %s, "throttled_share": %s, "quota": %s' "$cores" "$wrkc" "$busy" "$thr" \
        "$( [ "$proto" = http1-quota ] && echo "$SERVER_QUOTA" || echo null)") ;; esac
      printf '{"protocol": "%s", "connections": %s, "rep": %s, "server": "%s", "req_per_s": %s, "gbit_per_s": %s, "server_cpu_us_per_req": %s%s}\n' \
        "$proto" "$c" "$rep" "$(label "$who")" "$r" "$g" "$cpu" "$extra" >> "$work/runs.jsonl"
      R[$who]+="$r "; G[$who]+="$g "; C[$who]+="$cpu "; K[$who]+="${cores:-0} "; L[$who]+="${busy:-0} "; T[$who]+="${thr:-0} "; W[$who]+="${wrkc:-0} "
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
  if [ "$proto" = http1-quota ]; then # the evidence that the server was the limit
    local what vals
    for what in K W L T; do
      for who in "${servers[@]}"; do
        case $what in K) vals=${K[$who]} ;; W) vals=${W[$who]} ;; L) vals=${L[$who]} ;; *) vals=${T[$who]} ;; esac
        read -r m lo hi < <(echo $vals | median)
        row+=" | $(awk -v m="$m" -v lo="$lo" -v hi="$hi" -v pct="$(case $what in K | W) echo 0 ;; *) echo 1 ;; esac)" \
          'BEGIN {if (pct) printf "%.0f%% (%.0f–%.0f)", m*100, lo*100, hi*100; else printf "%.2f (%.2f–%.2f)", m, lo, hi}')"
      done
    done
    # The verdict: every server used ≥ 90% of its quota and the load CPU was not
    # saturated (< 95% busy), on the medians; else req/s still measured the load side.
    local why=""
    for who in "${servers[@]}"; do
      read -r m _ _ < <(echo ${K[$who]} | median)
      awk -v m="$m" -v q="$SERVER_QUOTA" 'BEGIN {exit !(m < 0.9 * q)}' && why+=" $(label "$who") used $m of $SERVER_QUOTA;"
      read -r m _ _ < <(echo ${L[$who]} | median)
      awk -v m="$m" 'BEGIN {exit !(m >= 0.95)}' && why+=" load CPU $(awk -v m="$m" 'BEGIN {printf "%.0f%%", m*100}') busy in $(label "$who")'s runs;"
    done
    if [ -z "$why" ]; then row+=" | yes"; else row+=" | **no**:${why%;}"; echo "bench-origin: c=$c not server-bound:$why" >&2; fi
  fi
  echo "$row |"
}

h1rows=(); h2rows=(); qrows=()
if [ "$H1" = 1 ]; then
  for c in $CONNS; do h1rows+=("$(cell http1 "$c" sb sbstd ngx)"); done
fi
if [ -n "$SERVER_QUOTA" ]; then
  set_quota "$SERVER_QUOTA"
  for c in $QUOTA_CONNS; do qrows+=("$(cell http1-quota "$c" sb sbstd ngx)"); done
  set_quota -1
fi
if [ "$H2" = 1 ]; then
  for proto in h2c h2-tls; do
    for c in $H2_CONNS; do h2rows+=("$(cell "$proto" "$c" sb ngx | sed "s/^| /| $proto | /")"); done
  done
fi
echo >&2

mkdir -p "$(dirname "$RAW")"
{
  printf '{\n "command": "make bench-origin (bench/bench-origin.sh; CONNS=\\"%s\\" REPS=%s SECONDS_PER_RUN=%s H2=%s H2_CONNS=\\"%s\\" H2_STREAMS=%s H1=%s SERVER_QUOTA=%s QUOTA_CONNS=\\"%s\\")",\n' "$CONNS" "$REPS" "$DUR" "$H2" "$H2_CONNS" "$H2_STREAMS" "$H1" "$SERVER_QUOTA" "$QUOTA_CONNS"
  printf ' "server_quota": %s, "cg_period_us": %s,\n' "${SERVER_QUOTA:-null}" "$( [ -n "$SERVER_QUOTA" ] && echo "$CG_PERIOD" || echo null)"
  printf ' "date": "%s", "cores": %s, "loadavg_before": "%s", "loadavg_after": "%s", "server_cpus": "%s", "load_cpus": "%s",\n' "$STAMP" "$(nproc)" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)" "$SERVER_CPUS" "$LOAD_CPUS"
  printf ' "streambed": "%s", "nginx": "%s", "wrk": "%s", "h2load": "%s", "segments": %s,\n' "$(git rev-parse --short HEAD 2>/dev/null)" "$(nginx -v 2>&1 | sed 's#.*/##')" "$(wrk -v 2>&1 | head -1 | awk '{print $2}')" "$(h2load --version | awk '{print $2}')" "$(wc -l < "$work/urls")"
  printf ' "runs": [\n'
  sed '$!s/$/,/; s/^/  /' "$work/runs.jsonl"
  printf ' ]\n}\n'
} > "$RAW"
echo "runs in $RAW"

h1table=""
[ "$H1" = 1 ] && h1table=$(printf '%s\n' "| connections | Streambed req/s (min–max) | Streambed net/http only req/s | nginx req/s | req/s Streambed ÷ nginx (per-rep pairs) | net/http only ÷ nginx (pairs) | Streambed CPU µs/req | net/http only CPU µs/req | nginx CPU µs/req | efficiency Streambed ÷ nginx (pairs) | net/http only ÷ nginx (pairs) | Gbit/s Streambed | net/http only | nginx |" "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" "${h1rows[@]}")
echo "$h1table"
qtable=""
if [ -n "$SERVER_QUOTA" ]; then
  qtable=$(printf '%s\n' "| connections | Streambed req/s (min–max) | Streambed net/http only req/s | nginx req/s | req/s Streambed ÷ nginx (per-rep pairs) | net/http only ÷ nginx (pairs) | Streambed CPU µs/req | net/http only CPU µs/req | nginx CPU µs/req | efficiency Streambed ÷ nginx (pairs) | net/http only ÷ nginx (pairs) | Gbit/s Streambed | net/http only | nginx | cores used Streambed | net/http only | nginx | wrk cores, Streambed's runs | net/http only's | nginx's | load CPU busy, Streambed's runs | net/http only's | nginx's | quota periods throttled Streambed | net/http only | nginx | server-bound |" "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" "${qrows[@]}")
  echo "$qtable"
fi
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
    echo "Command: \`make bench-origin\` (bench/bench-origin.sh; CONNS=\"$CONNS\" REPS=$REPS SECONDS_PER_RUN=$DUR H2=$H2 H2_CONNS=\"$H2_CONNS\" H2_STREAMS=$H2_STREAMS$( [ "$H1" != 1 ] && echo " H1=$H1")$( [ -n "$SERVER_QUOTA" ] && echo " SERVER_QUOTA=$SERVER_QUOTA QUOTA_CONNS=\"$QUOTA_CONNS\"")). The machine may have been shared: see the load averages. Every run: [${RAW#docs/results/}](${RAW#docs/results/})."
    echo "Asset: $(wc -l < "$work/urls") segments (2 s, all renditions), keep-alive, loopback. Servers pinned to CPU $SERVER_CPUS, load generator (wrk -t$NLOAD; h2load -t$NLOAD -m$H2_STREAMS) to CPU $LOAD_CPUS (taskset). Load average before/after: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "nginx $(nginx -v 2>&1 | sed 's#.*/##') ($NSERVER worker), sendfile on, tcp_nopush, access_log off, open_file_cache, http2 on its h2c and TLS listeners; Streambed $(git rev-parse --short HEAD 2>/dev/null), as built and with \`net_http_only: true\`."
    echo
    if [ -n "$h1table" ]; then
      echo "HTTP/1.1 (wrk):"
      echo
      echo "$h1table"
      echo
    fi
    if [ -n "$qtable" ]; then
      echo "HTTP/1.1, server-bound (wrk; each server, nginx with all its workers, in a cgroup v1 CPU quota of $SERVER_QUOTA of a core, period ${CG_PERIOD} µs): req/s is the server's capacity at that budget when its cores used sit at the quota, its quota periods are throttled and wrk has CPU to spare (wrk's own cores, and the load CPU's busy share, others' work on it included; these twelve columns: median (min–max) over the runs). The last column says yes when every server used at least 90% of its quota and the load CPU was under 95% busy (medians); where it says no, req/s there still measured the load side:"
      echo
      echo "$qtable"
      echo
    fi
    if [ -n "$h2table" ]; then
      echo "HTTP/2 (h2load, same files):"
      echo
      echo "$h2table"
      echo
    fi
  } >> "$OUT"
  echo "recorded in $OUT"
fi
