#!/bin/sh
# The origin's pacing guard on against off, for LL-HLS with hls.js on the lossy link
# (50 ms RTT, 1 % loss): the two sets alternated round by round, the first of each
# round swapped every round (the lab starts one origin per experiment).
# docs/results/latency.md, "The pacing guard". Run as root after make build:
#
#   sh experiments/latency-guard.sh [ROUNDS [FIRST]]   # rounds FIRST..ROUNDS (FIRST 1)
set -eu
out=docs/results/latency/lab-browser-hls-guard
rounds=${1:-6}
i=${2:-1}
while [ "$i" -le "$rounds" ]; do
	order="on off"
	[ $((i % 2)) -eq 0 ] && order="off on"
	for arm in $order; do
		bin/streambed lab run experiments/latency-browser-hls-guard-$arm.yaml --out $out/$arm-r$i
	done
	i=$((i + 1))
done
