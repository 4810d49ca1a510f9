#!/usr/bin/env bash
# sysc.sh BIN — syscalls per viewer: push on streambed vs nginx pull (strace -c), 300 viewers of 6 s.
set -uo pipefail
BIN=$1; N=${N:-300}; SB_PORT=19540; NGX_PORT=19541; OUT=/tmp/ws3/sysc; mkdir -p $OUT
work=$(mktemp -d); chmod 755 $work
GOMAXPROCS=1 taskset -c 0 "$BIN" serve --http "127.0.0.1:$SB_PORT" --https "" --assets /tmp/ws3/assets --no-demo --log-level warn --channel "seg=cap,archive=$work/archive" > "$work/sb.log" 2>&1 &
SB=$!
for k in $(seq 50); do curl -sf "http://127.0.0.1:$SB_PORT/live/seg/manifest.mpd" >/dev/null && break; sleep 0.2; done
sleep 4
cat > "$work/nginx.conf" <<NGX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4000; }
http {
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 120s; open_file_cache max=10000 inactive=60s;
  types { video/mp4 m4s mp4; application/dash+xml mpd; }
  server {
    listen 127.0.0.1:$NGX_PORT backlog=8192;
    location = /live/seg/manifest.mpd { proxy_pass http://127.0.0.1:$SB_PORT; }
    location /live/seg/ { alias $work/archive/; }
  }
}
NGX
taskset -c 0 nginx -c "$work/nginx.conf" -e "$work/nginx-error.log"; sleep 0.5
W=$(pgrep -P "$(cat $work/nginx.pid)")
strace -c -f -p $SB -o $OUT/sb.txt & S1=$!
sleep 1
taskset -c 1 "$BIN" load "http://127.0.0.1:$SB_PORT/live/seg/manifest.mpd" --json --quiet --tracks v180 --transport ws --clients $N --duration 6s --ramp 2s > $OUT/ws.json
kill -INT $S1; wait $S1
strace -c -p $W -o $OUT/ngx.txt & S2=$!
sleep 1
taskset -c 1 "$BIN" load "http://127.0.0.1:$NGX_PORT/live/seg/manifest.mpd" --json --quiet --tracks v180 --transport http1 --clients $N --duration 6s --ramp 2s > $OUT/ngx.json
kill -INT $S2; wait $S2
kill $(cat $work/nginx.pid); kill $SB; wait $SB 2>/dev/null
for f in ws ngx; do python3 -c "
import json;s=json.load(open('$OUT/$f.json'))['steps'][0];print('$f keep',s['share_at_encoded'],'chunks/client',s['chunks']/s['clients'],'failed',s.get('failed'))"; done
echo "== streambed (push)"; awk 'NR>2 && $NF!~/total/ {print}' $OUT/sb.txt | sort -k4 -nr | head -20
echo "== nginx (pull)"; awk 'NR>2' $OUT/ngx.txt | sort -k4 -nr | head -16
rm -rf $work
