#!/usr/bin/env bash
# ensure-deb.sh CMD:PACKAGE ... — make sure each command exists, installing its Debian
# package when we are root on a machine with apt; otherwise say exactly what to install.
set -euo pipefail
missing=()
for pair in "$@"; do
  cmd=${pair%%:*}; pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
# de-duplicate
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian packages: ${missing[*]}"
  stamp=/var/lib/apt/periodic/streambed-update-stamp
  if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
    apt-get update -qq
    mkdir -p "$(dirname "$stamp")" && touch "$stamp"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "Missing: ${missing[*]}." >&2
echo "Install them (Debian/Ubuntu: sudo apt-get install ${missing[*]}), then run make again." >&2
exit 1
