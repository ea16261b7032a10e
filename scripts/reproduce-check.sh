#!/usr/bin/env bash
# The four reproductions (make reproduce-imperfect / -nomiracl / -stress / -rgb)
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
# RGB with its data fetched by name: the fixtures laid out as RGB's
# repository paths on a local mirror (RAGPROBE_MIRROR), `data get --study`.
MIRROR="$OUT/mirror/chen700564/RGB/d2293eec8c76467c1572b3ebedcaca4e9b4e82f4/data"
mkdir -p "$MIRROR"
for pair in en:rgb-mini zh:rgb-zh-mini en_int:rgb-int-mini zh_int:rgb-int-mini en_fact:rgb-mini zh_fact:rgb-zh-mini; do
  cp "fixtures/${pair#*:}.jsonl" "$MIRROR/${pair%%:*}.json"
done
MURLFILE="$OUT/mirror.url"
"$BIN" data mirror-server --root "$OUT/mirror" --max-seconds 1800 > "$MURLFILE" &
MIRRORPID=$!
trap 'kill $MOCK $MIRRORPID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$MURLFILE" ] && break; sleep 0.1; done
RAGPROBE_MIRROR=$(head -1 "$MURLFILE") "$BIN" --store "$STORE" data get --study rgb > /dev/null
"$BIN" --store "$STORE" run pipelines/rgb.toml "${COMMON[@]}" --set data="$STORE/datasets/rgb" --set out="$OUT/rgb"
# NoMIRACL by name through the hub protocol: the distribution fixture laid
# out as miracl/nomiracl at the registry's revision (English and German).
HUB="$OUT/mirror/datasets/miracl/nomiracl/resolve/ecd08778d0426a5ca28ac99763b0c9ddc2c78e68/data"
for lang in english german; do
  mkdir -p "$HUB/$lang"
  cp -r fixtures/nomiracl-dist/en/topics fixtures/nomiracl-dist/en/qrels "$HUB/$lang/"
  gzip -c fixtures/nomiracl-dist/en/corpus.jsonl > "$HUB/$lang/corpus.jsonl.gz"
done
kill $MIRRORPID 2>/dev/null || true
"$BIN" data mirror-server --root "$OUT/mirror" --max-seconds 1800 > "$MURLFILE" &
MIRRORPID=$!
for _ in $(seq 100); do [ -s "$MURLFILE" ] && break; sleep 0.1; done
HF_ENDPOINT=$(head -1 "$MURLFILE") HF_HUB_CACHE="$OUT/hub-cache" "$BIN" --store "$STORE" data get nomiracl --only en,de > /dev/null
"$BIN" --store "$STORE" run pipelines/nomiracl.toml "${COMMON[@]}" --set data="$STORE/datasets/nomiracl" --set ext= --set langs=en,de --set out="$OUT/nomiracl-by-name"
echo "reports: $OUT/imperfect $OUT/nomiracl $OUT/stress $OUT/rgb $OUT/nomiracl-by-name" >&2
