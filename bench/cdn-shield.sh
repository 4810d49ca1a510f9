#!/usr/bin/env bash
# cdn-shield.sh [PLAYERS...] — origin load behind a shield cache (docs/results/cdn.md).
# For each player count (default: 50 and 1000), emulated live DASH players fetch one
# looped channel for 60 s through an nginx shield and then through a Varnish shield
# in front of one Streambed origin (all on loopback, in one Go test process:
# internal/cdn TestMeasureShieldReduction). Each run's JSON goes to
# docs/results/cdn/shield-PLAYERS.json. With EDGES=N the players use N edge caches
# (same program) in front of the shield instead: docs/results/cdn/edgesN-PLAYERS.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-deb.sh nginx:nginx varnishd:varnish
mkdir -p docs/results/cdn
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(50 1000)
for n in "${counts[@]}"; do
  out="docs/results/cdn/shield-$n.json"
  [ -n "${EDGES:-}" ] && out="docs/results/cdn/edges$EDGES-$n.json"
  echo "== $n players, 60 s, nginx then Varnish${EDGES:+, through $EDGES edges}"
  STREAMBED_CDN_MEASURE=1 STREAMBED_CDN_PLAYERS="$n" STREAMBED_CDN_SECONDS="${SECONDS_PER_RUN:-60}" \
  STREAMBED_CDN_EDGES="${EDGES:-}" STREAMBED_CDN_OUT="$PWD/$out" \
    go test -count=1 -timeout 20m -run '^TestMeasureShieldReduction$' ./internal/cdn
  jq -r '.[] | "\(.cache): \(.players) players, \(.total.shield_requests) requests at the shield, \(.total.origin_requests) at the origin (\(.total.objects) objects, max \(.total.origin_requests_max_per_object) per object): \(.total.request_reduction_percent*100|round/100)% fewer requests, \(.byte_reduction_percent*100|round/100)% fewer bytes (\(.shield_mbit_per_s*100|round/100) → \(.origin_mbit_per_s*100|round/100) Mbit/s), errors \(.errors)"' \
    "$out"
done
