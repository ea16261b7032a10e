#!/usr/bin/env bash
# The three reproductions (make reproduce-imperfect / -nomiracl / -stress)
# end to end on the project's fixtures, against the built-in
# OpenAI-compatible mock with scripted replies (no GPU, no model server).
# Every table the studies report is filled; the reports land in $OUT.
#   bash scripts/reproduce-check.sh            # RAGPROBE_BIN, OUT, STORE may be set
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${RAGPROBE_BIN:-${CARGO_TARGET_DIR:-target}/debug/ragprobe}"
[ -x "$BIN" ] || cargo build --workspace
OUT="${OUT:-reproduce-check}"
STORE="${STORE:-$OUT/store}"
mkdir -p "$OUT/data"
for pair in nq:nq-mini.jsonl tqa:nq-mini.jsonl webq:nq-mini.jsonl popqa:popqa-mini.jsonl; do
  cp "fixtures/${pair#*:}" "$OUT/data/${pair%%:*}.jsonl"
done
URLFILE="$OUT/mock.url"
"$BIN" mock-server --replies scripted --max-seconds 1800 > "$URLFILE" &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$URLFILE" ] && break; sleep 0.1; done
URL=$(head -1 "$URLFILE")
COMMON=(--set base_url="$URL" --set model=mock-model --set concurrency=16)
"$BIN" --store "$STORE" run pipelines/imperfect-retrieval.toml "${COMMON[@]}" --set data="$OUT/data" --set conflict_share=0.6 --set out="$OUT/imperfect"
"$BIN" --store "$STORE" run pipelines/nomiracl.toml "${COMMON[@]}" --set data=fixtures/nomiracl-mini --set langs=en,de --set ext=.dev.jsonl --set out="$OUT/nomiracl"
"$BIN" --store "$STORE" run pipelines/rag-stress.toml "${COMMON[@]}" --set data=fixtures/rc --set triviaqa=triviaqa-mini.json \
  --set hotpotqa=hotpotqa-mini.json --set searchqa=searchqa-mini.jsonl --set medqa=medqa-mini-en.jsonl \
  --set medqa_zh=medqa-mini-zh.jsonl --set backend=openai --set bootstrap=2000 --set out="$OUT/stress"
echo "reports: $OUT/imperfect $OUT/nomiracl $OUT/stress" >&2
