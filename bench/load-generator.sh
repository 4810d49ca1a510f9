#!/bin/sh
# The workload generator's measurement (docs/results/load-generator.md): a local
# `streambed serve` demo channel pinned to core 0, `streambed load` pinned to core 1,
# 50 workers ramped 0 → 50 over 10 s for 60 s, in each mode; then the same 50 as two
# processes of 25 whose reports are merged. Results go to $OUT (default
# docs/results/load-generator). Needs bin/streambed (make build) and taskset.
set -eu
SB=${SB:-bin/streambed}
OUT=${OUT:-docs/results/load-generator}
ADDR=${ADDR:-127.0.0.1:18480}
BASE=http://$ADDR/live/demo
mkdir -p "$OUT"
taskset -c 0 "$SB" serve --http "$ADDR" --https "" >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
until curl -sf "$BASE/manifest.mpd" >/dev/null; do sleep 1; done
sleep 3

cpu() { awk '{print ($14+$15)/100}' /proc/$SERVER/stat; } # utime+stime in s (USER_HZ 100)

run() { # name, load arguments...
	name=$1
	shift
	c0=$(cpu)
	l0=$(cut -d' ' -f1-3 /proc/loadavg)
	taskset -c 1 "$SB" load "$@" --out "$OUT/$name" --host loadhost >"$OUT/$name.txt"
	c1=$(cpu)
	echo "origin cpu seconds: $(echo "$c1 $c0" | awk '{print $1 - $2}')" >>"$OUT/$name.txt"
	# The machine is shared: its load before and after says how quiet the run was.
	echo "loadavg before: $l0  after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/$name.txt"
	cat "$OUT/$name.txt"
	sleep 5
}

run dash-live-50 --mode dash-live "$BASE/manifest.mpd" --workers 50 --ramp 10 --duration 60
run dash-live-50-mpd32 --mode dash-live "$BASE/manifest.mpd" --workers 50 --ramp 10 --duration 60 --manifest-every 32
run dash-timeline-50 --mode dash-live "$BASE/manifest-timeline.mpd" --workers 50 --ramp 10 --duration 60
run hls-live-50 --mode hls-live "$BASE/master.m3u8" --workers 50 --ramp 10 --duration 60
run abr-50 --mode abr "$BASE/manifest.mpd" --workers 50 --ramp 10 --duration 60

# Two load processes of 25 at once (as two hosts would), merged.
c0=$(cpu)
l0=$(cut -d' ' -f1-3 /proc/loadavg)
taskset -c 1 "$SB" load --mode dash-live "$BASE/manifest.mpd" --workers 25 --ramp 10 --duration 60 --host hostA --out "$OUT/split-a" --quiet >"$OUT/split-a.txt" &
A=$!
taskset -c 1 "$SB" load --mode dash-live "$BASE/manifest.mpd" --workers 25 --ramp 10 --duration 60 --host hostB --out "$OUT/split-b" --quiet >"$OUT/split-b.txt"
wait $A
c1=$(cpu)
"$SB" load merge "$OUT/split-a/report.json" "$OUT/split-b/report.json" --out "$OUT/merged" >"$OUT/merged.txt"
echo "origin cpu seconds: $(echo "$c1 $c0" | awk '{print $1 - $2}')" >>"$OUT/merged.txt"
echo "loadavg before: $l0  after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/merged.txt"
cat "$OUT/merged.txt"
