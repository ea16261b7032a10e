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
# The usual SQuAD evaluation code, written once; both Python timings use it.
cat > "$WORK/squad.py" <<'PY'
import collections, re, string
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
PY
PY=$(PYTHONPATH="$WORK" python3 - "$WORK/rows.jsonl" <<'PY'
import json, sys, time
from squad import acc, em, f1_score
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

# End to end (issue #19): the whole `ragprobe score --predictions` command on
# the same rows (a questions artifact + a predictions JSONL), with the default
# bootstrap (2,000 resamples), against a Python script that reads the same
# JSONL files and computes accuracy, EM and F1 with the SQuAD code above; in
# one run. Wall time and peak RSS by GNU time.
source scripts/bench-lib.sh
need_gnu_time
python3 - "$WORK/rows.jsonl" "$WORK" <<'PY'
import json, sys
src, work = sys.argv[1], sys.argv[2]
with open(src) as f, open(f"{work}/questions.jsonl", "w") as q, open(f"{work}/preds.jsonl", "w") as p:
    for i, line in enumerate(f):
        r = json.loads(line)
        q.write(json.dumps({"id": f"q{i}", "question": f"question {i}", "answers": r["answers"]}) + "\n")
        p.write(json.dumps({"id": f"q{i}", "prediction": r["prediction"]}) + "\n")
PY
cargo build --release -q --workspace --bins
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"
rm -rf "$WORK/store"
Q=$("$BIN" --store "$WORK/store" -q ingest --format table --col-id id --col-question question --col-answers answers "$WORK/questions.jsonl" | awk '$1=="questions"{print $2}')
/usr/bin/time -f "%e %M" -o "$WORK/rp.time" "$BIN" --store "$WORK/store" -q score --predictions "$WORK/preds.jsonl" --against "$Q" > /dev/null
cat > "$WORK/e2e.py" <<'PY'
import json, sys
from squad import acc, em, f1_score
answers = {}
for line in open(sys.argv[1]):
    r = json.loads(line); answers[r["id"]] = r["answers"]
n = n_acc = n_em = f1 = 0
for line in open(sys.argv[2]):
    r = json.loads(line); gts = answers[r["id"]]; p = r["prediction"]
    n_acc += acc(p, gts)
    n_em += max(em(p, g) for g in gts)
    f1 += max(f1_score(p, g) for g in gts); n += 1
print(json.dumps({"n": n, "acc": n_acc / n, "em": n_em / n, "f1": f1 / n}))
PY
PYTHONPATH="$WORK" /usr/bin/time -f "%e %M" -o "$WORK/py.time" python3 "$WORK/e2e.py" "$WORK/questions.jsonl" "$WORK/preds.jsonl" > /dev/null
PRED_BYTES=$(stat -c %s "$WORK/preds.jsonl")
python3 - "$WORK/rp.time" "$WORK/py.time" "$PRED_BYTES" "$N" <<'PY'
import sys
rp = open(sys.argv[1]).read().split(); py = open(sys.argv[2]).read().split()
size, n = int(sys.argv[3]), int(sys.argv[4])
rs, rm, ps, pm = float(rp[0]), int(rp[1]) / 1024, float(py[0]), int(py[1]) / 1024
print(f"end to end, {n:,} predictions ({size/1e6:.0f} MB JSONL), default bootstrap:")
print(f"  ragprobe score --predictions: {rs:.2f} s, peak RSS {rm:.0f} MiB ({rm*1048576/size:.1f}x the predictions file)")
print(f"  python (read JSONL + SQuAD code): {ps:.2f} s, peak RSS {pm:.0f} MiB")
print(f"  ragprobe is {ps/rs:.1f}x the Python script end to end")
PY
