#!/usr/bin/env bash
# run.sh WHO(streambed binary or nginx) CONNS MODE(stat|trace|ev|record|rec2|rec3): the investigation of 2026-11-25T05Z
# (docs/results/origin.md): one server pinned to CPU 0, wrk on CPU 1, perf on the server; outputs to OUTDIR (/tmp).
set -euo pipefail
cd "$(dirname "$0")/../../../.." && OUTDIR=${OUTDIR:-/tmp}
WHO=$1; C=$2; MODE=$3; PORT=19401; DUR=${DUR:-4}
ASSET=$(realpath .cache/bench/asset); NAME=asset
work=$(mktemp -d); mkdir -p $work/assets; ln -s $ASSET $work/assets/$NAME
find "$ASSET" -name '*.m4s' | sort | sed "s#^$ASSET#/vod/$NAME#" > "$work/urls"
if [ "$WHO" = nginx ]; then
cat > "$work/nginx.conf" <<NGX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 120s;
  open_file_cache max=10000 inactive=60s;
  types { video/mp4 m4s mp4; }
  server { listen 127.0.0.1:$PORT; location /vod/$NAME/ { alias $ASSET/; add_header Cache-Control "public, max-age=31536000, immutable"; } }
}
NGX
  taskset -c 0 nginx -c $work/nginx.conf -e $work/nginx-error.log; sleep 0.5
  SPID=$(pgrep -P "$(cat $work/nginx.pid)" | head -1); KILL=$(cat $work/nginx.pid)
else
  taskset -c 0 $WHO serve --http 127.0.0.1:$PORT --https "" --data-dir $work/data --assets $work/assets --no-demo --channel x=$NAME --log-level warn > $work/sb.log 2>&1 &
  SPID=$!; KILL=$SPID
fi
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT$(head -1 $work/urls)" -o /dev/null && break; sleep 0.1; done
URLS_FILE=$work/urls taskset -c 1 wrk -t1 -c$C -d1s -s bench/segments.lua http://127.0.0.1:$PORT >/dev/null
URLS_FILE=$work/urls taskset -c 1 wrk -t1 -c$C -d$((DUR+2))s --timeout 10s -s bench/segments.lua http://127.0.0.1:$PORT > $work/wrk.out &
WP=$!; sleep 1
case $MODE in
 stat) perf stat -e cycles:u -e cycles:k -e instructions:u -e instructions:k -e context-switches -e syscalls:sys_enter_recvfrom -e syscalls:sys_enter_read -e syscalls:sys_enter_epoll_pwait -e syscalls:sys_enter_epoll_wait -e syscalls:sys_enter_sendfile64 -e syscalls:sys_enter_sendto -e syscalls:sys_enter_writev -e syscalls:sys_enter_setsockopt -e syscalls:sys_enter_futex -e syscalls:sys_enter_nanosleep -e net:net_dev_xmit -e skb:consume_skb -e net:netif_receive_skb -e syscalls:sys_enter_getsockopt -e syscalls:sys_enter_epoll_ctl -p $SPID -o $work/stat.txt -- sleep $DUR >/dev/null 2>&1; cp $work/stat.txt $OUTDIR/stat-$(basename $WHO)-$C.txt ;;
 trace) timeout -s INT $DUR perf trace -s -p $SPID -o $work/trace.txt >/dev/null 2>&1 || true; cp $work/trace.txt $OUTDIR/trace-$(basename $WHO)-$C.txt ;;
 ev) timeout -s INT $DUR perf trace -e epoll_pwait,epoll_wait,recvfrom,read -p $SPID -o $work/ev.txt >/dev/null 2>&1 || true; cp $work/ev.txt $OUTDIR/ev-$(basename $WHO)-$C.txt ;;
 record) perf record -g -p $SPID -o $OUTDIR/perf-$(basename $WHO)-$C.data -- sleep $DUR >/dev/null 2>&1 ;;
 rec2) perf record -e net:net_dev_xmit -p $SPID -o $OUTDIR/xmit-$(basename $WHO)-$C.data -- sleep 2 >/dev/null 2>&1 ;;
 rec3) perf record -g -e net:net_dev_xmit -p $SPID -o $OUTDIR/xmitg-$(basename $WHO)-$C.data -- sleep 1 >/dev/null 2>&1 ;;
esac
wait $WP
awk -v d=$DUR '/^Requests\/sec/ {printf "%.0f\n", $2 * d}' $work/wrk.out > $OUTDIR/reqs-$MODE-$(basename $WHO)-$C.txt
grep -E "Requests/sec|Non-2xx|Socket" $work/wrk.out
kill $KILL; sleep 0.5; rm -rf $work
