#!/usr/bin/env bash
# Dense retrieval at 1M passages, in one run:
#  1. embeddings from a serving engine: `ragprobe retrieve --embed-backend
#     openai` against the built-in mock `/v1/embeddings` on 127.0.0.1
#     (deterministic clustered 384-wide vectors, base64), written as shards
#     of 100k passages: passages/s through the client;
#  2. exact search (streamed over the shards, running top-10) against FAISS
#     `IndexFlatIP` on the same vectors and queries: queries/s as a ratio, and
#     the share of FAISS's top-10 that ragprobe returns;
#  3. approximate search: ragprobe `--ann` (the IVF index, default nlist
#     and nprobe unless ANN_NLIST / ANN_NPROBE are set) against FAISS
#     `IndexHNSWFlat` (M = 32, efSearch 64 and 256) and FAISS
#     `IndexIVFFlat` with ragprobe's nlist and nprobe: build time, queries/s
#     and recall@10 against the exact top-10 (FAISS `IndexFlatIP`'s).
#   N_PASSAGES=1000000 N_QUERIES=1000 bash scripts/bench-dense.sh
# ANN=0 leaves out part 3 (FAISS's HNSW build takes minutes at 1M).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N_PASSAGES:-1000000}"; Q="${N_QUERIES:-1000}"; ANN="${ANN:-1}"
ANN_ARGS=(--ann)
[ -n "${ANN_NLIST:-}" ] && ANN_ARGS+=(--ann-nlist "$ANN_NLIST")
[ -n "${ANN_NPROBE:-}" ] && ANN_ARGS+=(--ann-nprobe "$ANN_NPROBE")
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-dense}"
mkdir -p "$WORK"
source scripts/bench-lib.sh
need_gnu_time
bench_venv "faiss, numpy, pyarrow" faiss-cpu numpy pyarrow
cargo build --release -q -p ragprobe-cli  # the script runs `ragprobe` alone
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"
# Both tools on the same 2 threads (FAISS: omp_set_num_threads(2) below).
export RAYON_NUM_THREADS=2
DATA="$WORK/data-$N-$Q"
[ -s "$DATA/queries.jsonl" ] || python3 scripts/gen-corpus-bench.py "$DATA" "$N" "$Q" 30
S="$WORK/store"; rm -rf "$S"
C=$("$BIN" -q --store "$S" ingest --format table --table-kind corpus "$DATA/corpus.jsonl" | awk -F'\t' '{print $2}')
QS=$("$BIN" -q --store "$S" ingest --format table --col-id qid "$DATA/queries.jsonl" | awk -F'\t' '{print $2}')
# The questions as a corpus too, so that their vectors (the mock's, which
# FAISS cannot compute) are written as an embeddings shard Python can read.
python3 - "$DATA/queries.jsonl" "$WORK/queries-as-corpus.jsonl" <<'PY'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as o:
    for l in f:
        r = json.loads(l)
        o.write(json.dumps({"doc_id": r["qid"], "text": r["question"]}) + "\n")
PY
QC=$("$BIN" -q --store "$S" ingest --format table --table-kind corpus "$WORK/queries-as-corpus.jsonl" | awk -F'\t' '{print $2}')

"$BIN" mock-server --embed-dim 384 --max-seconds 3000 > "$WORK/mock.url" &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/mock.url" ] && break; sleep 0.1; done
URL=$(cat "$WORK/mock.url")
EMB=(--method dense --embed-backend openai --embed-base-url "$URL" --embed-model mock-model --embed-base64
     --embed-concurrency 16 --embed-inputs-per-request 256)
"$BIN" -q --store "$S" retrieve --corpus "$QC" --questions "$QS" -k 1 "${EMB[@]}" > /dev/null

# Run 1: embed 1M passages through the client + exact search. Run 2: exact search alone.
/usr/bin/time -v "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 10 "${EMB[@]}" > "$WORK/exact.out" 2> "$WORK/t1.txt"
/usr/bin/time -v "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 10 --extra 1 "${EMB[@]}" > /dev/null 2> "$WORK/t2.txt"
EXACT_SEARCH=$(tail -1 "$S/log/runs.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["search_seconds"])')
EXACT_CTX=$(awk -F'\t' '$1=="contexts"{print $2}' "$WORK/exact.out")
# ANN: run 3 builds the IVF index, run 4 reuses it.
ANN_BUILD=0; ANN_SEARCH=0; ANN_CTX=-; echo "Maximum resident set size (kbytes): 0" > "$WORK/t3.txt"
if [ "$ANN" = 1 ]; then
  /usr/bin/time -v "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 10 "${ANN_ARGS[@]}" "${EMB[@]}" > /dev/null 2> "$WORK/t3.txt"
  ANN_BUILD=$(grep '"stage":"ivf-build"' "$S/log/runs.jsonl" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
  "$BIN" -q --store "$S" retrieve --corpus "$C" --questions "$QS" -k 10 --extra 1 "${ANN_ARGS[@]}" "${EMB[@]}" > "$WORK/ann.out" 2> "$WORK/t4.txt"
  # Run 4's search, on the index run 3 built (opening it included; the
  # recall check and the question embedding not); its top 10 are scored.
  ANN_SEARCH=$(grep '"stage":"ivf-search"' "$S/log/runs.jsonl" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
  ANN_CTX=$(awk -F'\t' '$1=="contexts"{print $2}' "$WORK/ann.out")
fi
kill $MOCK 2>/dev/null || true

"$VENV/bin/python" - "$S" "$C" "$QC" "$EXACT_CTX" "$ANN_CTX" "$N" "$Q" \
  "$(secs "$WORK/t1.txt")" "$(secs "$WORK/t2.txt")" "$EXACT_SEARCH" "$(rss_kb "$WORK/t2.txt")" \
  "$ANN_BUILD" "$ANN_SEARCH" "$(rss_kb "$WORK/t3.txt")" <<'PY'
import glob, json, resource, sys, time
import numpy as np, pyarrow.parquet as pq, faiss
store, corpus, qcorpus, exact_ctx, ann_ctx, n, q = sys.argv[1:8]
t1, t2, exact_search, exact_rss, ann_build, ann_search, ann_rss = map(float, sys.argv[8:])
n, q = int(n), int(q)
def vectors(corpus_id):
    shards = []
    for f in glob.glob(f"{store}/objects/*.parquet"):
        meta = pq.ParquetFile(f).metadata.metadata or {}
        m = json.loads(meta.get(b"ragprobe.manifest", b"{}"))
        if m.get("kind") == "embeddings" and m["recipe"]["inputs"] == [corpus_id]:
            shards.append((m["details"]["first_row"], f, m["details"]["dim"]))
    shards.sort()
    dim = shards[0][2]
    parts = [np.frombuffer(b"".join(pq.read_table(f, columns=["vector"]).column("vector").to_pylist()), dtype="<f4").reshape(-1, dim) for _, f, _ in shards]
    return np.ascontiguousarray(np.concatenate(parts))
xb, xq = vectors(corpus), vectors(qcorpus)
assert xb.shape[0] == n and xq.shape[0] == q, (xb.shape, xq.shape)
def ranked(ctx):
    t = pq.read_table(f"{store}/objects/{ctx}.parquet", columns=["qid", "rank", "doc_id"]).to_pydict()
    out = {}
    for qid, r, d in zip(t["qid"], t["rank"], t["doc_id"]):
        if r <= 10:
            out.setdefault(qid, []).append(int(d[1:]))
    return [out[f"q{i}"] for i in range(q)]
faiss.omp_set_num_threads(2)
flat = faiss.IndexFlatIP(xb.shape[1]); flat.add(xb)
t = time.perf_counter(); _, truth = flat.search(xq, 10); flat_s = time.perf_counter() - t
ours = ranked(exact_ctx)
agree = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ours, truth.tolist())])
print(f"dense retrieval: {n:,} passages x 384 (f32), {q:,} queries, k=10, 2 cores")
print(f"embeddings via /v1/embeddings (mock, base64, 256 inputs/request, 16 in flight): {n / (t1 - t2):,.0f} passages/s (run 1 - run 2 = {t1 - t2:.1f} s)")
print(f"exact: ragprobe {q / exact_search:,.1f} queries/s (search {exact_search:.1f} s, command {t2:.1f} s, peak RSS {exact_rss/1024:,.0f} MiB); "
      f"FAISS IndexFlatIP {q / flat_s:,.1f} queries/s ({flat_s:.1f} s, vectors in memory); ratio {flat_s / exact_search:.2f}x; top-10 agreement {agree:.4f}")
if ann_ctx == "-":
    sys.exit(0)
recall = lambda res: np.mean([len(set(a) & set(b)) / 10 for a, b in zip(res, truth.tolist())])
ann = ranked(ann_ctx)
info = json.loads(pq.ParquetFile(f"{store}/objects/{ann_ctx}.parquet").metadata.metadata[b"ragprobe.manifest"])["details"]["ann"]
nlist, nprobe = info["nlist"], info["nprobe"]
ours_qps = q / ann_search
print(f"ANN: ragprobe IVF (nlist {nlist}, nprobe {nprobe}): build {ann_build:.1f} s, {ours_qps:,.1f} queries/s, "
      f"recall@10 {recall(ann):.4f} (manifest, 200 queries: {info['recall_at_10']:.4f}; peak RSS {ann_rss/1024:,.0f} MiB, the mapped index included)")
hnsw = faiss.IndexHNSWFlat(xb.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
t = time.perf_counter(); hnsw.add(xb); hnsw_build = time.perf_counter() - t
for ef in (64, 256):
    hnsw.hnsw.efSearch = ef
    t = time.perf_counter(); _, hres = hnsw.search(xq, 10); hnsw_s = time.perf_counter() - t
    print(f"  FAISS IndexHNSWFlat(M=32, efSearch={ef}): build {hnsw_build:.1f} s, {q / hnsw_s:,.1f} queries/s, recall@10 {recall(hres.tolist()):.4f}; "
          f"ragprobe IVF / FAISS HNSW queries/s: {ours_qps / (q / hnsw_s):.2f}x")
ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(xb.shape[1]), xb.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
ivf.cp.spherical = True  # unit centroids, as ragprobe's k-means
t = time.perf_counter(); ivf.train(xb); ivf.add(xb); ivf_build = time.perf_counter() - t
ivf.nprobe = nprobe
t = time.perf_counter(); _, ires = ivf.search(xq, 10); ivf_s = time.perf_counter() - t
print(f"  FAISS IndexIVFFlat(nlist={nlist}, nprobe={nprobe}, spherical k-means): build {ivf_build:.1f} s, {q / ivf_s:,.1f} queries/s, recall@10 {recall(ires.tolist()):.4f}; "
      f"ragprobe IVF / FAISS IVF queries/s: {ours_qps / (q / ivf_s):.2f}x")
PY
