#!/usr/bin/env bash
# The main job on the project's fixtures. Run through `make demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${RAGPROBE_BIN:-target/release/ragprobe}"
STORE="${STORE:-.ragprobe}"
rp() { "$BIN" --store "$STORE" "$@"; }

echo "== ingest the fixtures (each format) ==" >&2
nq=$(rp ingest --format dpr fixtures/nq-mini.jsonl)
echo "$nq"
rp ingest --format dpr fixtures/nq-mini-array.json
rp ingest --format selfrag fixtures/popqa-mini.jsonl
rp ingest --format rgb fixtures/rgb-mini.jsonl
rp ingest --format rgb fixtures/rgb-zh-mini.jsonl
rp ingest --format nomiracl fixtures/nomiracl-mini/en.dev.jsonl fixtures/nomiracl-mini/de.dev.jsonl --dataset nomiracl-mini
rp ingest --format beir fixtures/corpus
rp ingest --format table fixtures/table-mini.csv --col-id id --answers-sep '|' --col-lang lang

echo "== the NQ questions artifact ==" >&2
rp artifacts show "$(echo "$nq" | awk -F'\t' '$1=="questions"{print $2}')" --rows 2
echo "== the store ==" >&2
rp artifacts ls
rp artifacts verify
