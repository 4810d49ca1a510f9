#!/usr/bin/env bash
# ensure-go.sh — make sure `go` builds this module: the version go.mod names (its
# `toolchain` line, else its `go` line). A Go of 1.21 or later fetches that version
# itself through the module proxy (GOTOOLCHAIN=auto, which the Makefile exports), so
# an older distribution Go is enough; Go before 1.21 cannot, and this says what to
# install. With no Go at all, as root on Debian, it installs golang-go first.
# Prints nothing when the Go on PATH already is new enough.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
want=$(sed -n 's/^toolchain go//p' go.mod)
[ -n "$want" ] || want=$(sed -n 's/^go //p' go.mod)
dl="https://go.dev/dl"

if ! command -v "$GO" >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Go is missing: installing Debian's golang-go (go.mod needs go$want; a Go of 1.21 or later fetches it)"
    scripts/ensure-deb.sh go:golang-go
  fi
  command -v "$GO" >/dev/null 2>&1 || {
    echo "Go is missing. go.mod needs go$want: install Go 1.21 or later (it fetches go$want through the module proxy) or go$want itself from $dl." >&2
    exit 1
  }
fi

# The Go installed here, not the one GOTOOLCHAIN would switch to.
local_v=$(GOTOOLCHAIN=local "$GO" env GOVERSION 2>/dev/null || "$GO" version | awk '{print $3}')
local_v=${local_v#go}
older() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }
older "$local_v" "$want" || exit 0
if older "$local_v" 1.21; then
  echo "Go $local_v is too old: go.mod needs go$want, and only Go 1.21 or later can fetch it by itself. Install go$want from $dl (or Go ≥ 1.21 from your distribution)." >&2
  exit 1
fi
echo "Go $local_v here; go.mod needs go$want: the go command fetches it through the module proxy (GOTOOLCHAIN=${GOTOOLCHAIN:-auto}), once."
if ! got=$(GOTOOLCHAIN=${GOTOOLCHAIN:-auto} "$GO" env GOVERSION) || older "${got#go}" "$want"; then
  echo "Could not get go$want through the module proxy (${got:-no answer}; GOPROXY=$("$GO" env GOPROXY), GOTOOLCHAIN=${GOTOOLCHAIN:-auto}). Install go$want from $dl." >&2
  exit 1
fi
echo "Using $got."
