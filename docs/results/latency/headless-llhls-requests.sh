#!/bin/sh
# Run from the repository root after `make build` and `make test-assets`, with the
# binary of commit ed2c8cd (before) built as /tmp/llhls3-old/streambed:
#   sh docs/results/latency/headless-llhls-requests.sh docs/results/latency/headless-llhls-requests.jsonl
# A/B: headless player's LL-HLS requests per second, before (ed2c8cd) and after (HEAD), same server, alternated.
OUT=$1
bin/streambed serve --http 127.0.0.1:19101 --https "" --assets .cache/test-assets --data-dir /tmp/llhls3-data --channel demo-ll=demo,dvr=60s,chunk=40ms > /tmp/llhls3-ab-serve.log 2>&1 &
SRV=$!
for i in $(seq 1 60); do curl -sf http://127.0.0.1:19101/api/streams >/dev/null && break; sleep 0.5; done
: > $OUT
for round in 1 2 3; do
  for v in before after; do
    bin=bin/streambed; [ $v = before ] && bin=/tmp/llhls3-old/streambed
    load=$(cut -d' ' -f1 /proc/loadavg)
    json=$(taskset -c 1 $bin play --json --duration 20s http://127.0.0.1:19101/live/demo-ll/master.m3u8 2>/dev/null | tr -d "\n")
    printf '{"round":%s,"binary":"%s","load1":%s,"report":%s}\n' $round $v $load "$json" >> $OUT
  done
done
kill $SRV; wait $SRV 2>/dev/null
