#!/usr/bin/env bash
# ctx.sh BIN NAME — like prof.sh without perf; prints per-thread context switches of the origin after the run.
set -euo pipefail
BIN=$1; NAME=$2; CLIENTS=${3:-3000}; PORT=19511
OUT=/tmp/ws3/prof
GODEBUG=${SB_GODEBUG:-} GOMAXPROCS=1 taskset -c 0 "$BIN" serve --http "127.0.0.1:$PORT" --https "" --assets /tmp/ws3/assets --no-demo --log-level warn \
  --channel seg=test > "$OUT/$NAME-sb.log" 2>&1 &
SB=$!
for i in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/live/seg/manifest.mpd" >/dev/null && break; sleep 0.2; done
snap() { for t in /proc/$SB/task/*; do echo "$(basename $t) $(awk '/^voluntary/{v=$2}/^nonvoluntary/{n=$2}END{print v, n}' $t/status) $(awk '{print $14+$15}' $t/stat)"; done; }
snap > $OUT/$NAME.ctx0
taskset -c 1 "$BIN" load "http://127.0.0.1:$PORT/live/seg/manifest.mpd" --json --quiet --tracks v180 --transport ws --clients "$CLIENTS" --duration 6s --ramp 4s > "$OUT/$NAME.json"
snap > $OUT/$NAME.ctx1
kill $SB; wait $SB || true
python3 - $OUT/$NAME.ctx0 $OUT/$NAME.ctx1 $OUT/$NAME.json $NAME <<'PY'
import sys,json
a={l.split()[0]:list(map(int,l.split()[1:])) for l in open(sys.argv[1])}
b={l.split()[0]:list(map(int,l.split()[1:])) for l in open(sys.argv[2])}
rows=[]
for t,v in b.items():
    o=a.get(t,[0,0,0]); rows.append((v[0]-o[0],v[1]-o[1],v[2]-o[2],t))
rows.sort(reverse=True)
s=json.load(open(sys.argv[3]))['steps'][0]; srv=s.get('server') or {}
print(sys.argv[4],'us/session %.0f'%(srv['cpu_s']*1e6/s['clients']),'keep',s['share_at_encoded'],'threads (vol, invol, ticks):',rows[:4])
PY
