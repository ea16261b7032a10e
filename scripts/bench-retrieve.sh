#!/usr/bin/env bash
# Retrieval benchmark: BM25 over a generated corpus of 1M passages (~100
# words) with 10k queries. ragprobe (tantivy): index build time, peak RSS,
# queries/s at k=5; and the Python `bm25s` package on the same data.
#   N_PASSAGES=1000000 N_QUERIES=10000 bash scripts/bench-retrieve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N_PASSAGES:-1000000}"; Q="${N_QUERIES:-10000}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-retrieve}"
mkdir -p "$WORK"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
VENV="${BENCH_VENV:-${TMPDIR:-/tmp}/ragprobe-bench-venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import bm25s" 2>/dev/null || "$VENV/bin/pip" install -q bm25s
cargo build --release --workspace -q
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"
DATA="$WORK/data-$N-$Q"
[ -s "$DATA/corpus.jsonl" ] || python3 scripts/gen-corpus-bench.py "$DATA" "$N" "$Q"
S="$WORK/store"; rm -rf "$S"
C=$("$BIN" -q --store "$S" ingest --format table --table-kind corpus "$DATA/corpus.jsonl" | awk -F'\t' '{print $2}')
QS=$("$BIN" -q --store "$S" ingest --format table --col-id qid "$DATA/queries.jsonl" | awk -F'\t' '{print $2}')
# Run 1: index build + queries.   Run 2: the index is reused, queries only.
/usr/bin/time -v "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 5 > /dev/null 2> "$WORK/t1.txt"
t2s=$(date +%s.%N); "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 6 > /dev/null 2>&1; t2e=$(date +%s.%N)
T1=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/t1.txt")
RSS=$(awk -F': ' '/Maximum resident set size/{print $2}' "$WORK/t1.txt")
PY=$("$VENV/bin/python" - "$DATA" <<'PY'
import json, resource, sys, time
import bm25s
d = sys.argv[1]
docs = [json.loads(l)["text"] for l in open(f"{d}/corpus.jsonl")]
qs = [json.loads(l)["question"] for l in open(f"{d}/queries.jsonl")]
t = time.perf_counter()
retriever = bm25s.BM25()
retriever.index(bm25s.tokenize(docs, stopwords=None, show_progress=False), show_progress=False)
build = time.perf_counter() - t
t = time.perf_counter()
retriever.retrieve(bm25s.tokenize(qs, stopwords=None, show_progress=False), k=5, show_progress=False, n_threads=0)
query = time.perf_counter() - t
print(build, len(qs) / query, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
PY
)
python3 - "$N" "$Q" "$T1" "$t2s" "$t2e" "$RSS" $PY <<'PY'
import sys
n, q, t1, t2s, t2e, rss, pb, pq, prss = sys.argv[1:]
n, q, t1, t2, rss, pb, pq, prss = int(n), int(q), float(t1), float(t2e) - float(t2s), int(rss), float(pb), float(pq), int(prss)
qps = q / t2
print(f"corpus {n:,} passages, {q:,} queries, k=5")
print(f"ragprobe (tantivy): index build + {q:,} queries {t1:.1f} s; queries alone {t2:.1f} s = {qps:,.0f} queries/s (incl. process start and artifact writing); peak RSS {rss/1024:,.0f} MiB")
print(f"bm25s (python):     index build {pb:.1f} s; {pq:,.0f} queries/s; peak RSS {prss/1024:,.0f} MiB")
print(f"queries/s ratio ragprobe / bm25s: {qps/pq:.2f}x")
PY
