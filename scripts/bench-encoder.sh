#!/usr/bin/env bash
# The MiniLM encoder, before and after it moved onto the engine's kernels,
# on the same texts in one run:
#  - "engine": this tree's encoder (crates/engine/src/encoder.rs: unpadded,
#    batch-invariant BERT);
#  - "candle": candle's BERT (candle-transformers), the encoder up to the
#    commit before 9ee25ed, built from that commit in a git worktree.
# Both run `crates/models/examples/encoder_bench.rs` (same source, same
# tokenizer, same batch size and threads) and write their vectors; the
# script first checks that every text's two vectors agree (cosine >= 1 -
# 1e-5) and that the engine's vectors are the same whatever the batch
# size, and prints a ratio only then.
#
#   TEXTS=texts.txt bash scripts/bench-encoder.sh     # one text per line
# Without TEXTS: the 2,495 first passages and 100 first questions of
# NQ_ORACLE (default ../shared/data/nq-open-oracle/nq-open-oracle.jsonl.gz,
# Wikipedia passages of ~100 words like PopQA's), else the fixtures'.
# BENCH_PROFILE (default release) is the cargo profile of both builds;
# THREADS (default 2) the threads both use.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-encoder}"
BEFORE_REV="${BEFORE_REV:-9ee25ed^}"
PROFILE="${BENCH_PROFILE:-release}"
THREADS="${THREADS:-2}"
BATCH="${BATCH:-32}"
mkdir -p "$WORK"
bash scripts/fetch-models.sh
MODELS="${RAGPROBE_MODELS:-$HOME/.cache/ragprobe/models}/all-minilm-l6-v2"

TXT="$WORK/texts.txt"
if [ -n "${TEXTS:-}" ]; then
  cp "$TEXTS" "$TXT"
else
  NQ="${NQ_ORACLE:-$ROOT/../shared/data/nq-open-oracle/nq-open-oracle.jsonl.gz}"
  python3 - "$NQ" "$ROOT/fixtures/nq-mini.jsonl" "$TXT" <<'PY'
import gzip, json, os, sys
nq, fixture, out = sys.argv[1:]
src = nq if os.path.exists(nq) else fixture
opener = gzip.open if src.endswith(".gz") else open
passages, questions = [], []
with opener(src, "rt", encoding="utf-8") as f:
    for line in f:
        r = json.loads(line)
        if len(questions) < 100:
            questions.append(r["question"])
        for c in r.get("ctxs", []):
            if len(passages) < 2495:
                t = (c.get("title", "") + ". " + c["text"]).replace("\n", " ").strip()
                passages.append(t)
        if len(passages) >= 2495 and len(questions) >= 100:
            break
with open(out, "w", encoding="utf-8") as o:
    for t in passages + questions:
        o.write(t + "\n")
print(f"texts: {len(passages)} passages and {len(questions)} questions from {src}", file=sys.stderr)
PY
fi

# The tree before: a worktree at BEFORE_REV with this tree's example copied in.
BEFORE="$WORK/before"
if [ ! -d "$BEFORE/.git" ] && [ ! -f "$BEFORE/.git" ]; then
  git worktree add -f --detach "$BEFORE" "$BEFORE_REV" >/dev/null
fi
mkdir -p "$BEFORE/crates/models/examples"
cp crates/models/examples/encoder_bench.rs "$BEFORE/crates/models/examples/"

export RAYON_NUM_THREADS="$THREADS"
dir_of() { [ "$PROFILE" = dev ] && echo debug || echo "$PROFILE"; }
T="${CARGO_TARGET_DIR:-target}"
cargo build -q --profile "$PROFILE" -p ragprobe-models --example encoder_bench
cp "$T/$(dir_of)/examples/encoder_bench" "$WORK/engine_bench"
(cd "$BEFORE" && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$WORK/before-target}" cargo build -q --profile "$PROFILE" -p ragprobe-models --example encoder_bench)
cp "${CARGO_TARGET_DIR:-$WORK/before-target}/$(dir_of)/examples/encoder_bench" "$WORK/candle_bench"

"$WORK/engine_bench" "$TXT" "$WORK/engine.f32" "$BATCH" "$MODELS" > "$WORK/engine.json"
"$WORK/engine_bench" "$TXT" "$WORK/engine-b1.f32" 1 "$MODELS" > "$WORK/engine-b1.json"
"$WORK/candle_bench" "$TXT" "$WORK/candle.f32" "$BATCH" "$MODELS" > "$WORK/candle.json"

python3 - "$WORK" <<'PY'
import json, struct, sys, math
w = sys.argv[1]
def vecs(name):
    b = open(f"{w}/{name}.f32", "rb").read()
    n = len(b) // 4 // 384
    return [struct.unpack_from("<384f", b, i * 384 * 4) for i in range(n)]
eng, eng1, can = vecs("engine"), vecs("engine-b1"), vecs("candle")
ok = True
if len(eng) != len(can):
    print(f"FAIL: {len(eng)} engine vectors, {len(can)} candle vectors"); ok = False
worst = 1.0
for a, b in zip(eng, can):
    c = sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))
    worst = min(worst, c)
if worst < 1 - 1e-5:
    print(f"FAIL: lowest engine/candle cosine {worst:.8f} (< 1 - 1e-5)"); ok = False
same = sum(1 for a, b in zip(eng, eng1) if a == b)
if same != len(eng):
    print(f"FAIL: engine vectors at batch 1 differ from batch {json.load(open(w + '/engine.json'))['batch']} on {len(eng) - same} texts"); ok = False
e, c = json.load(open(f"{w}/engine.json")), json.load(open(f"{w}/candle.json"))
print(f"checks: {len(eng)} texts, lowest engine/candle cosine {worst:.8f}, engine batch {e['batch']} == batch 1 on {same}/{len(eng)} texts")
if not ok:
    print("checks failed: no ratio printed"); sys.exit(1)
print(f"{'encoder':<8} {'texts':>6} {'batch':>5} {'seconds':>8} {'texts/s':>8}")
for name, r in (("candle", c), ("engine", e)):
    print(f"{name:<8} {r['texts']:>6} {r['batch']:>5} {r['seconds']:>8.2f} {r['texts_per_s']:>8.1f}")
print(f"engine / candle texts/s: {e['texts_per_s'] / c['texts_per_s']:.2f}x (goal >= 3x)")
PY
