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

echo "== retrieval over the fixture corpus: BM25 and dense (MiniLM), top-5 ==" >&2
beir=$(rp ingest --format beir fixtures/corpus)
corpus=$(echo "$beir" | awk -F'\t' '$1=="corpus"{print $2}')
bq=$(echo "$beir" | awk -F'\t' '$1=="questions"{print $2}')
rp retrieve --corpus "$corpus" --questions "$bq" -k 5 --extra 1 --method bm25
rp retrieve --corpus "$corpus" --questions "$bq" -k 5 --extra 1 --method dense

echo "== Recall@5 of the contexts that came with NQ-mini (seed 000 Table 3 columns) ==" >&2
rp recall --questions "$(echo "$nq" | awk -F'\t' '$1=="questions"{print $2}')" --contexts "$(echo "$nq" | awk -F'\t' '$1=="contexts"{print $2}')" -k 5

echo "== the NQ questions artifact ==" >&2
rp artifacts show "$(echo "$nq" | awk -F'\t' '$1=="questions"{print $2}')" --rows 2
echo "== the store ==" >&2
rp artifacts ls
rp artifacts verify
