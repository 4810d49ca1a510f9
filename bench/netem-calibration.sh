#!/usr/bin/env bash
# netem-calibration.sh — the link emulator's calibration benchmarks (RTT 2d ± 1 ms on
# the median, rate ± 5 %; docs/netem.md) as raw `go test -bench` output, which
# benchstat reads: OUT/YYYY-MM-DDTHH:MMZ.txt, headed by the machine's load.
#
# Usage: sudo bench/netem-calibration.sh   (env: OUT=docs/results/netem-calibration
#        BENCHTIME=5x COUNT=1 BENCH='CalibrationRTT|CalibrationRate')
# Needs root (network namespaces). Light: a few UDP probes and ≤ 20 Mbit/s of TCP.
# Run it on a machine without other work: the figures are the emulator's accuracy,
# and other jobs on the cores delay its wake-ups (the tests allow for that; this
# does not).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-docs/results/netem-calibration}
BENCHTIME=${BENCHTIME:-5x}
COUNT=${COUNT:-1}
BENCH=${BENCH:-CalibrationRTT|CalibrationRate}
[ "$(id -u)" = 0 ] || { echo "netem-calibration: run as root (network namespaces)" >&2; exit 1; }
mkdir -p "$OUT"
file="$OUT/$(date -u +%Y-%m-%dT%H:%MZ).txt"
{
  echo "# bench/netem-calibration.sh: go test -run '^\$' -bench '$BENCH' -benchtime $BENCHTIME -count $COUNT ./internal/lab/netem/"
  echo "# commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+changes'); $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  go test -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" -count "$COUNT" ./internal/lab/netem/
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$file"
echo "recorded in $file"
