#!/usr/bin/env bash
# dash-schema.sh — where the MPD schema validation of `go test` finds the DASH schema,
# as internal/manifest/internal/manifesttest looks for it: $STREAMBED_DASH_SCHEMA, or
# shared/conformance/dash-schema/DASH-MPD.xsd in the repository's folder or a parent
# (CI has it at ../shared). Prints the path and exits 0 when it is there. Otherwise
# prints a banner on stderr — the Go tests that validate MPDs will be SKIPPED — and
# exits 0, or 1 under CI=true or when $STREAMBED_DASH_SCHEMA names a missing file,
# where those tests fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
rel=shared/conformance/dash-schema/DASH-MPD.xsd
if [ -n "${STREAMBED_DASH_SCHEMA:-}" ]; then
  [ -f "$STREAMBED_DASH_SCHEMA" ] && { echo "$STREAMBED_DASH_SCHEMA"; exit 0; }
  echo "STREAMBED_DASH_SCHEMA=$STREAMBED_DASH_SCHEMA: no such file; the MPD schema tests fail." >&2
  exit 1
else
  dir=$PWD
  while :; do
    [ -f "$dir/$rel" ] && { echo "$dir/$rel"; exit 0; }
    [ "$dir" = / ] && break
    dir=$(dirname "$dir")
  done
fi
where="$rel in $(pwd) or any parent folder"
{
  echo "************************************************************************"
  echo "* DASH schema not found ($where)."
  echo "* MPD schema validation (TestSchema and the other ValidateMPD checks in"
  echo "* internal/manifest) is SKIPPED: those tests check nothing on this clone."
  echo "* Put the MPEG DASH schema at ../$rel or set STREAMBED_DASH_SCHEMA."
  [ "${CI:-}" = true ] && echo "* CI=true: this is an error."
  echo "************************************************************************"
} >&2
[ "${CI:-}" = true ] && exit 1
exit 0
