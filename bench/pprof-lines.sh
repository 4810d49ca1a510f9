#!/usr/bin/env bash
# pprof-lines.sh — the lean path's handler chain in a Go CPU profile: each selected
# function's cumulative time, share of samples and µs per request (so two profiles of
# different lengths compare; a layer's own cost is its line minus the next one's).
# Usage: bench/pprof-lines.sh BIN PROFILE REQUESTS  (the profile of bench/h1-profile.sh; REQUESTS from its .txt)
set -euo pipefail
bin=$1 prof=$2 n=$3
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
go tool pprof -top -cum -nodecount 3000 -nodefraction 0 -edgefraction 0 "$bin" "$prof" 2>/dev/null > "$tmp"
total=$(awk '/Total samples/ {gsub("s","",$6); print $6}' "$tmp")
echo "total $total s, $n requests: $(awk -v t=$total -v n=$n 'BEGIN{printf "%.2f", t*1e6/n}') µs sampled per request"
for f in 'internal/runtime/syscall/linux.Syscall6' 'server.(*h1Conn).serveRequest' 'server.(*Server).Handler.(*metrics).wrap.func2' 'server.(*Server).Handler.cors.func1' 'h2push.(*Pusher).serve' 'server.(*trackRouter).ServeHTTP' 'server.(*Server).serveFile' 'layout.Parse' 'h2push.(*Pusher).plan' 'time.Now' 'runtime.mallocgc' 'server.(*metrics).sawViewer' 'hub.(*FileCache).GetAt' 'hub.(*FileCache).Get' 'server.(*h1Conn).idleDeadline' 'server.(*dateCache).append' 'internal/poll.(*FD).RawWrite' 'runtime.gcBgMarkWorker'; do
  awk -v f="$f" -v n=$n '{name=$6; for (i=7;i<=NF;i++) name=name" "$i} (name == f || substr(name, length(name) - length(f)) == ("/" f) || substr(name, length(name) - length(f)) == ("." f)) && !done { s=$4; ms = (s ~ /ms$/); gsub(/m?s$/, "", s); v = s + 0; if (ms) v /= 1000; printf "| `%s` | %s | %s | %.3f |\n", f, $4, $5, v*1e6/n; done=1 } END { if (!done) printf "| `%s` | 0 | 0%% | 0 |\n", f }' "$tmp"
done
