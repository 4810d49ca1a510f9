#!/bin/sh
# The origin's TCP congestion control, BBR (this machine's default) against CUBIC (the
# Linux default), for LL-HLS with hls.js on the lossy link: the two sets alternated
# round by round (the lab starts one origin per experiment). docs/results/latency.md,
# "Where the lossy LL-HLS stalls come from". Run as root after make build:
#
#   sh experiments/latency-cc.sh [ROUNDS]
set -eu
out=docs/results/latency/lab-browser-hls-cc
rounds=${1:-6}
i=1
while [ "$i" -le "$rounds" ]; do
	for cc in cubic bbr; do
		bin/streambed lab run experiments/latency-browser-hls-cc-$cc.yaml --out $out/$cc-r$i
	done
	i=$((i + 1))
done
