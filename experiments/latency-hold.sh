#!/bin/sh
# PART-HOLD-BACK 600ms (today's) against 1s on the lossy link, alternated run by run
# (the lab starts one origin per experiment, so each value is its own one-run set),
# then the clean-link reference and the HTTP/2 arm with 1s.
# docs/results/latency.md, "PART-HOLD-BACK on the lossy link". Run as root after make build:
#
#   sh experiments/latency-hold.sh [ROUNDS]
set -eu
out=docs/results/latency/lab-browser-hls-hold
rounds=${1:-3}
i=1
while [ "$i" -le "$rounds" ]; do
	for v in 0.6 1.0; do
		bin/streambed lab run experiments/latency-browser-hls-hold-h1-$v.yaml --out $out/h1-$v-r$i
	done
	i=$((i + 1))
done
bin/streambed lab run experiments/latency-browser-hls-hold-clean-1.0.yaml --out $out/clean-1.0
bin/streambed lab run experiments/latency-browser-hls-hold-h2-1.0.yaml --out $out/h2-1.0
