#!/usr/bin/env bash
# stress-suite.sh — the whole suite (`make test`, as CI runs it: a fresh clone with
# CI=true) RUNS times in a row while stress-ng keeps one core busy; stops at the first
# failure. Each run's log and a summary line go to OUT (docs/results/stress-suite/).
#
# Usage: scripts/stress-suite.sh [RUNS]   (env: REV=HEAD OUT=docs/results/stress-suite)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
REV=$(git rev-parse --short "${REV:-HEAD}")
OUT=${OUT:-docs/results/stress-suite}
command -v stress-ng >/dev/null || { echo "stress-suite: stress-ng is missing (apt-get install stress-ng)"; exit 1; }
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'kill "$hog" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q . "$work/clone" && git -C "$work/clone" checkout -q "$REV"
[ -d ../shared ] && ln -s "$(cd ../shared && pwd)" "$work/shared"
stress-ng --cpu 1 --timeout 0 --quiet &
hog=$!
stamp=$(date -u +%Y-%m-%dT%H%MZ)
summary="$OUT/$stamp-$REV.txt"
echo "make test ×$RUNS at $REV with stress-ng --cpu 1 beside it ($(nproc) cores), $(date -u)" | tee "$summary"
for i in $(seq "$RUNS"); do
  t0=$(date +%s)
  if (cd "$work/clone" && CI=true make test) > "$work/run-$i.log" 2>&1; then rc=0; else rc=$?; fi
  t1=$(date +%s)
  tests=$(grep -c '^ok ' "$work/run-$i.log" || true)
  web=$(grep -E '^(# )?(pass|fail) [0-9]+' "$work/run-$i.log" | tr '\n' ' ' || true)
  line="run $i: rc=$rc in $((t1 - t0)) s, $tests Go packages ok; browser tests: ${web:-none}"
  echo "$line" | tee -a "$summary"
  if [ "$rc" != 0 ]; then
    cp "$work/run-$i.log" "$OUT/$stamp-$REV-run-$i.log"
    tail -30 "$work/run-$i.log"
    echo "FAILED: log in $OUT/$stamp-$REV-run-$i.log" | tee -a "$summary"
    exit 1
  fi
done
echo "all $RUNS runs passed" | tee -a "$summary"
