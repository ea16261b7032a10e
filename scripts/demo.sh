#!/usr/bin/env bash
# The main job: the quickstart pipeline on the project's fixtures with the
# embedded model, through score and report. Run through `make demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${RAGPROBE_BIN:-target/release/ragprobe}"
STORE="${STORE:-.ragprobe}"
OUT="${OUT:-report}"
"$BIN" --store "$STORE" run pipelines/quickstart.toml --set out="$OUT"
echo
case "$OUT" in /*) where="$OUT" ;; *) where="$(pwd)/$OUT" ;; esac
echo "report: $where/index.html   (tables: $OUT/tables/, charts: $OUT/charts/)"
if [ ! -x "$(dirname "$BIN")/ragprobe-query" ]; then
  echo "SQL over these artifacts (ragprobe query) is a separate binary: make build-release builds it (polars: 20 minutes or more on 2 cores)"
fi

