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
"$BIN" --store "$STORE" run pipelines/imperfect-retrieval.toml "${COMMON[@]}" --set data="$OUT/data" --set conflict_share=0.6 --set out="$OUT/imperfect" | tee "$OUT/imperfect.steps"
# The judge tier on one study: NQ's Normal-prompt responses judged by the
# mock (scripted verdicts) where the string matchers disagree, and the
# report's matcher agreement table.
RESP=$(awk -F'\t' '$1 == "nq_normal" && $2 == "responses" {print $3}' "$OUT/imperfect.steps")
"$BIN" --store "$STORE" score --responses "$RESP" --judge "openai:mock-model@$URL" --bootstrap 200 | tee "$OUT/judge.steps"
"$BIN" --store "$STORE" report --metrics "$(awk -F'\t' '$1 == "metrics" {print $2}' "$OUT/judge.steps")" --out "$OUT/judge"
grep -q "Acc (verdicts)" "$OUT/judge/tables/matcher_agreement.md"
"$BIN" --store "$STORE" run pipelines/nomiracl.toml "${COMMON[@]}" --set data=fixtures/nomiracl-mini --set langs=en,de --set ext=.dev.jsonl --set out="$OUT/nomiracl"
"$BIN" --store "$STORE" run pipelines/rag-stress.toml "${COMMON[@]}" --set data=fixtures/rc --set triviaqa=triviaqa-mini.json \
  --set hotpotqa=hotpotqa-mini.json --set searchqa=searchqa-mini.jsonl --set medqa=medqa-mini-en.jsonl \
  --set medqa_zh=medqa-mini-zh.jsonl --set backend=openai --set bootstrap=2000 --set out="$OUT/stress"
# The four studies again with their data by name (no `--set data=`), the
# local mirror server standing in for the internet: the pipelines' ingest
# steps fetch what they name (`fetch = ...`) through RAGPROBE_MIRROR (plain
# URLs, their paths kept) and HF_ENDPOINT (the hub protocol). The fixtures
# are laid out at the registry's sources: RGB's repository files, DPR's NQ
# results, HotpotQA's file, NoMIRACL's hub layout (English and German), SearchQA's zip.
M="$OUT/mirror"
# The by-name half starts from nothing each time (its first assertion is
# that a dry run lists the downloads, true only of an empty store).
rm -rf "$M" "$OUT/hub-cache" "$OUT/named-store"
RGB="$M/chen700564/RGB/d2293eec8c76467c1572b3ebedcaca4e9b4e82f4/data"
mkdir -p "$RGB" "$M/dpr/data/retriever_results/single" "$M/datasets/hotpot"
for pair in en:rgb-mini zh:rgb-zh-mini en_int:rgb-int-mini zh_int:rgb-int-mini en_fact:rgb-mini zh_fact:rgb-zh-mini; do
  cp "fixtures/${pair#*:}.jsonl" "$RGB/${pair%%:*}.json"
done
cp fixtures/nq-mini.jsonl.gz "$M/dpr/data/retriever_results/single/nq-test.json.gz"
cp fixtures/rc/hotpotqa-mini.json "$M/datasets/hotpot/hotpot_dev_distractor_v1.json"
HUB="$M/datasets/miracl/nomiracl/resolve/ecd08778d0426a5ca28ac99763b0c9ddc2c78e68/data"
for lang in english german; do
  mkdir -p "$HUB/$lang"
  cp -r fixtures/nomiracl-dist/en/topics fixtures/nomiracl-dist/en/qrels "$HUB/$lang/"
  gzip -c fixtures/nomiracl-dist/en/corpus.jsonl > "$HUB/$lang/corpus.jsonl.gz"
done
# SearchQA's val.zip: one JSON file per question, as the hub repository ships it.
SQA="$M/datasets/kyunghyuncho/search_qa/resolve/06907e45883b7cae435453b65d598447039fde79/data/train_test_val"
mkdir -p "$SQA"
python3 - fixtures/rc/searchqa-mini.jsonl "$SQA/val.zip" <<'PY'
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
    for i, line in enumerate(open(sys.argv[1], encoding="utf-8")):
        z.writestr(f"q{i:03}.json", json.dumps(json.loads(line), indent=1))
PY
MURLFILE="$OUT/mirror.url"
"$BIN" data mirror-server --root "$M" --max-seconds 1800 > "$MURLFILE" &
MIRRORPID=$!
trap 'kill $MOCK $MIRRORPID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$MURLFILE" ] && break; sleep 0.1; done
export RAGPROBE_MIRROR HF_ENDPOINT HF_HUB_CACHE="$OUT/hub-cache"
RAGPROBE_MIRROR=$(head -1 "$MURLFILE"); HF_ENDPOINT=$RAGPROBE_MIRROR
NAMED="$OUT/named-store"
# Datasets no host serves in the pipelines' format are placed by hand where
# `ragprobe data get NAME` says (TriviaQA/WebQ retrieval results, MedQA);
# TriviaQA-RC's archive is pinned by the real file's SHA-256, so its
# unpacked files are placed where `data get` unpacks them (which then
# fetches nothing).
D="$NAMED/datasets"
mkdir -p "$D/imperfect-retrieval" "$D/rag-stress/triviaqa"
cp fixtures/nq-mini.jsonl "$D/imperfect-retrieval/tqa.jsonl"
cp fixtures/nq-mini.jsonl "$D/imperfect-retrieval/webq.jsonl"
cp fixtures/rc/triviaqa-mini.json "$D/rag-stress/triviaqa/wikipedia-dev.json"
cp -r fixtures/rc/triviaqa-evidence "$D/rag-stress/triviaqa-evidence"
cp fixtures/rc/medqa-mini-en.jsonl "$D/rag-stress/medqa-test.jsonl"
cp fixtures/rc/medqa-mini-zh.jsonl "$D/rag-stress/medqa-test-zh.jsonl"
# PopQA's file is pinned by SHA-256 (the real one): a fixture cannot stand
# in for it on the mirror, so it is read from a local directory, which wins
# for that step while the others fetch.
mkdir -p "$OUT/popqa-only"
cp fixtures/popqa-mini.jsonl "$OUT/popqa-only/popqa.jsonl"
"$BIN" --store "$NAMED" run pipelines/rgb.toml "${COMMON[@]}" --dry-run | grep -q "rgb en.jsonl"
"$BIN" --store "$NAMED" run pipelines/rgb.toml "${COMMON[@]}" --set out="$OUT/rgb"
"$BIN" --store "$NAMED" run pipelines/nomiracl.toml "${COMMON[@]}" --set langs=en,de --set out="$OUT/nomiracl-by-name"
"$BIN" --store "$NAMED" run pipelines/imperfect-retrieval.toml "${COMMON[@]}" --set data="$OUT/popqa-only" --set conflict_share=0.6 --set out="$OUT/imperfect-by-name"
"$BIN" --store "$NAMED" run pipelines/rag-stress.toml "${COMMON[@]}" --set backend=openai --set bootstrap=2000 --set out="$OUT/stress-by-name"
echo "reports: $OUT/imperfect $OUT/judge $OUT/nomiracl $OUT/stress $OUT/rgb $OUT/nomiracl-by-name $OUT/imperfect-by-name $OUT/stress-by-name" >&2
