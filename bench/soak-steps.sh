#!/usr/bin/env bash
# soak-steps.sh — the origin's capacity for the soak's exact mix at the soak's CPU
# budget (docs/results/soak.md, "Capacity"): bench/soak.sh at SCALES × the base mix
# (WS/HTTP1/HTTP2/HLS viewer slots, same sessions, vanishing and slow readers), STEP
# long each, a fresh origin per step. bench/soak-steps.py summarises OUT/step-*/ into
# OUT/steps.json and a table: per step the origin's CPU against its quota, its
# throttled periods, p99 segment response, stalls split by cause, errors.
#
# env: OUT=docs/results/soak/DATE-steps SCALES="1 1.5 2 2.5" STEP=2m
#      WS=1000 HTTP1=1000 HTTP2=300 HLS=100 (the base mix), and bench/soak.sh's others.
# Needs root. Usage: bench/soak-steps.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-docs/results/soak/$(date -u +%Y-%m-%d)-steps}
SCALES=${SCALES:-1 1.5 2 2.5}
STEP=${STEP:-2m}
WS=${WS:-1000} HTTP1=${HTTP1:-1000} HTTP2=${HTTP2:-300} HLS=${HLS:-100} # the base mix (run 1 and 2)
mkdir -p "$OUT"
scale() { awk -v n="$1" -v f="$2" 'BEGIN{printf "%d\n", n*f+0.5}'; }
for s in $SCALES; do
  echo "== step ×$s: ws $(scale "$WS" "$s"), http1 $(scale "$HTTP1" "$s"), http2 $(scale "$HTTP2" "$s"), hls $(scale "$HLS" "$s") for $STEP"
  # A step whose viewers stall exits 1: that is a measurement, not a failure here.
  OUT="$OUT/step-$s" DURATION="$STEP" WS=$(scale "$WS" "$s") HTTP1=$(scale "$HTTP1" "$s") \
    HTTP2=$(scale "$HTTP2" "$s") HLS=$(scale "$HLS" "$s") bench/soak.sh > "$OUT/step-$s.txt" 2>&1
  echo "   exit $? (1: healthy viewers stalled or failed)"
done
python3 bench/soak-steps.py "$OUT"
