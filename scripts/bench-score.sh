#!/usr/bin/env bash
# Scoring benchmark: accuracy + EM + F1 on 1,000,000 generated predictions
# with 1–5 gold aliases each: ragprobe single-threaded and on all cores, and
# the usual Python SQuAD `normalize_answer` / EM / F1 code on the same data.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N_ROWS:-1000000}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-score}"
mkdir -p "$WORK"
OUT=$(cargo run --release -q -p ragprobe-score --example bench_rows -- "$N" "$WORK/rows.jsonl")
echo "$OUT"
PY=$(python3 - "$WORK/rows.jsonl" <<'PY'
import collections, json, re, string, sys, time
def normalize_answer(s):
    def remove_articles(text): return re.sub(r"\b(a|an|the)\b", " ", text)
    def white_space_fix(text): return " ".join(text.split())
    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)
    return white_space_fix(remove_articles(remove_punc(s.lower())))
def f1_score(prediction, ground_truth):
    p, g = normalize_answer(prediction).split(), normalize_answer(ground_truth).split()
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0: return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)
def em(prediction, gt): return normalize_answer(prediction) == normalize_answer(gt)
def acc(prediction, gts):
    p = normalize_answer(prediction)
    return any(normalize_answer(g) in p for g in gts)
rows = [json.loads(l) for l in open(sys.argv[1])]
t = time.perf_counter()
total = 0.0
for r in rows:
    p, gts = r["prediction"], r["answers"]
    acc(p, gts); max(em(p, g) for g in gts); total += max(f1_score(p, g) for g in gts)
print(len(rows) / (time.perf_counter() - t))
PY
)
RS=$(echo "$OUT" | awk '/rust_single/{print $2}')
RP=$(echo "$OUT" | awk '/rust_parallel/{print $2}')
python3 - "$RS" "$RP" "$PY" <<'PY'
import sys
rs, rp, py = map(float, sys.argv[1:])
print(f"python (SQuAD normalize_answer + EM + F1 + accuracy): {py:,.0f} rows/s")
print(f"ragprobe single-threaded: {rs:,.0f} rows/s = {rs/py:.1f}x python")
print(f"ragprobe all cores:       {rp:,.0f} rows/s = {rp/py:.1f}x python")
PY
