#!/usr/bin/env bash
# Fails when fixtures/ differs from what the fixture generators write
# (scripts/make-fixtures.py and scripts/make-fixtures-rc.py); the
# hand-labelled fixtures/ner/ is the one directory no generator writes.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
FIXTURES_OUT="$fresh" python3 scripts/make-fixtures.py >/dev/null
FIXTURES_OUT="$fresh" python3 scripts/make-fixtures-rc.py >/dev/null
cp -r fixtures/ner "$fresh/ner"
if ! diff -r "$fresh" fixtures; then
  echo "fixtures/ differs from what scripts/make-fixtures*.py write: run \`make fixtures\` and commit the result" >&2
  exit 1
fi
echo "fixtures: up to date with their generators"
