#!/usr/bin/env bash
# prof.sh BIN NAME [CLIENTS] — origin on core 0 GOMAXPROCS=1 (no quota), 4 s ramp of ws viewers; pprof + perf during the ramp.
set -euo pipefail
BIN=$1; NAME=$2; CLIENTS=${3:-3000}; PORT=19510
OUT=/tmp/ws3/prof
GODEBUG=${SB_GODEBUG:-} GOMAXPROCS=1 taskset -c 0 "$BIN" serve --http "127.0.0.1:$PORT" --https "" --assets /tmp/ws3/assets --no-demo --log-level warn \
  --channel seg=test --cpuprofile "$OUT/$NAME.pprof" > "$OUT/$NAME-sb.log" 2>&1 &
SB=$!
for i in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/live/seg/manifest.mpd" >/dev/null && break; sleep 0.2; done
( sleep 0.5; perf record -F 2000 -g -p $SB -o "$OUT/$NAME.perf" -- sleep 4 >/dev/null 2>&1 ) &
PERF=$!
taskset -c 1 "$BIN" load "http://127.0.0.1:$PORT/live/seg/manifest.mpd" --json --quiet --tracks v180 --transport ws --clients "$CLIENTS" --duration 6s --ramp 4s > "$OUT/$NAME.json"
wait $PERF || true
kill $SB; wait $SB || true
python3 -c "
import json;s=json.load(open('$OUT/$NAME.json'))['steps'][0];srv=s.get('server') or {}
print('$NAME', 'clients',s['clients'],'cpu_s',srv.get('cpu_s'),'us/session',srv.get('cpu_s',0)*1e6/s['clients'],'keep',s['share_at_encoded'])"
