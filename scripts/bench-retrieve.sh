#!/usr/bin/env bash
# BM25 at scale: ragprobe (tantivy) on generated corpora of 1M, 5M and 10M
# passages (~100 words each, Zipf-like vocabulary), and the Python `bm25s`
# package with both of its backends (numpy, and numba with n_threads=2 and
# the JIT warmed) on the same data, in one run.
#
# Per scale, ragprobe: index build time and peak RSS (run 1: build + the
# queries), index size on disk, and queries/s with the index reused (run 2):
# the search alone (from the run log: analysis, BM25 top-k on all cores,
# row lookup) and the whole command (process start, reading the questions,
# fetching the hit passages from the corpus artifact, writing contexts).
# bm25s (its index of 10M passages takes tens of GB) runs at the scales in
# BM25S_SCALES (default: the first). The 21M (DPR Wikipedia) figures are
# extrapolated from the measured points.
#   SCALES="1000000 5000000 10000000" N_QUERIES=10000 bash scripts/bench-retrieve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCALES="${SCALES:-1000000 5000000 10000000}"
Q="${N_QUERIES:-10000}"
BM25S_SCALES="${BM25S_SCALES:-${SCALES%% *}}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-retrieve}"
mkdir -p "$WORK"
source scripts/bench-lib.sh
need_gnu_time
bench_venv "bm25s, numba" bm25s numba
cargo build --release --workspace -q
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"

# One corpus of the largest size; each scale reads its first N passages.
# DATA_PASSAGES: generate (or reuse) a larger corpus than the largest scale.
MAX=${DATA_PASSAGES:-$(echo $SCALES | tr ' ' '\n' | sort -n | tail -1)}
DATA="$WORK/data-$MAX-$Q"
[ -s "$DATA/queries.jsonl" ] || python3 scripts/gen-corpus-bench.py "$DATA" "$MAX" "$Q"

RESULTS="$WORK/results.tsv"
: > "$RESULTS"

for N in $SCALES; do
  CORPUS="$DATA/corpus.jsonl"
  if [ "$N" != "$MAX" ]; then
    CORPUS="$WORK/corpus-$N.jsonl"
    [ -s "$CORPUS" ] || head -n "$N" "$DATA/corpus.jsonl" > "$CORPUS"
  fi
  S="$WORK/store-$N"; rm -rf "$S"
  C=$("$BIN" -q --store "$S" ingest --format table --table-kind corpus "$CORPUS" | awk -F'\t' '{print $2}')
  QS=$("$BIN" -q --store "$S" ingest --format table --col-id qid "$DATA/queries.jsonl" | awk -F'\t' '{print $2}')
  /usr/bin/time -v "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 5 > /dev/null 2> "$WORK/t1-$N.txt"
  SIZE=$(du -sb "$S"/indexes/bm25-* | awk '{s+=$1} END{print s}')
  /usr/bin/time -v "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 6 > /dev/null 2> "$WORK/t2-$N.txt"
  SEARCH=$(tail -1 "$S/log/runs.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["search_seconds"])')
  printf 'ragprobe\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$N" "$(secs "$WORK/t1-$N.txt")" "$(rss_kb "$WORK/t1-$N.txt")" \
    "$SIZE" "$SEARCH" "$(secs "$WORK/t2-$N.txt")" "$(rss_kb "$WORK/t2-$N.txt")" >> "$RESULTS"
  rm -rf "$S"
  for B in $BM25S_SCALES; do
    [ "$B" = "$N" ] || continue
    for backend in numpy numba; do
      "$VENV/bin/python" - "$CORPUS" "$DATA/queries.jsonl" "$backend" "$N" >> "$RESULTS" <<'PY'
import json, resource, sys, time
import bm25s
corpus, queries, backend, n = sys.argv[1:]
docs = [json.loads(l)["text"] for l in open(corpus)]
qs = [json.loads(l)["question"] for l in open(queries)]
t = time.perf_counter()
retriever = bm25s.BM25(backend=backend)
retriever.index(bm25s.tokenize(docs, stopwords=None, show_progress=False), show_progress=False)
build = time.perf_counter() - t
threads = 2 if backend == "numba" else 0
# Warm the JIT (numba) and caches on a few queries before timing.
retriever.retrieve(bm25s.tokenize(qs[:50], stopwords=None, show_progress=False), k=5, show_progress=False, n_threads=threads)
t = time.perf_counter()
retriever.retrieve(bm25s.tokenize(qs, stopwords=None, show_progress=False), k=5, show_progress=False, n_threads=threads)
query = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"bm25s-{backend}\t{n}\t{build}\t{rss}\t\t{query}\t\t")
PY
    done
  done
done

python3 - "$RESULTS" "$Q" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
q = int(sys.argv[2])
print(f"BM25, {q:,} queries, k=5 (generated passages of ~100 words)")
print(f"{'tool':<15}{'passages':>12}{'build s':>9}{'peak RSS':>10}{'index':>10}{'search q/s':>12}{'command q/s':>13}")
rp = {}
bs = {}
for r in rows:
    tool, n = r[0], int(r[1])
    if tool == "ragprobe":
        build_query, rss, size, search, wall2 = float(r[2]), int(r[3]), int(r[4]), float(r[5]), float(r[6])
        rp[n] = dict(build=build_query - wall2, rss=rss, size=size, qps=q / search, e2e=q / wall2)
        print(f"{tool:<15}{n:>12,}{build_query - wall2:>9.0f}{rss/1024:>8,.0f}Mi{size/2**30:>8.2f}Gi{q/search:>12,.0f}{q/wall2:>13,.0f}")
    else:
        build, rss, query = float(r[2]), int(r[3]), float(r[5])
        bs[(tool, n)] = q / query
        print(f"{tool:<15}{n:>12,}{build:>9.0f}{rss/1024:>8,.0f}Mi{'':>10}{q/query:>12,.0f}{'':>13}")
for (tool, n), qps in sorted(bs.items()):
    if n in rp:
        print(f"ragprobe / {tool} at {n:,}: search {rp[n]['qps']/qps:.2f}x, whole command {rp[n]['e2e']/qps:.2f}x queries/s")
if len(rp) >= 2:
    ns = sorted(rp)
    a, b = ns[-2], ns[-1]
    def lin(key):
        slope = (rp[b][key] - rp[a][key]) / (b - a)
        return rp[b][key] + slope * (21_000_000 - b)
    # queries/s: power law through the two largest points.
    import math
    k = math.log(rp[b]["qps"] / rp[a]["qps"]) / math.log(b / a)
    qps21 = rp[b]["qps"] * (21_000_000 / b) ** k
    print(f"extrapolated to 21M passages (linear through {a:,} and {b:,}; queries/s as a power law, exponent {k:.2f}):")
    print(f"  build {lin('build')/60:.0f} min, index {lin('size')/2**30:.1f} GiB, peak RSS {lin('rss')/1024:,.0f} MiB, search {qps21:,.0f} queries/s")
PY
