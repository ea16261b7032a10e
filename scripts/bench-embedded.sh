#!/usr/bin/env bash
# The embedded engine against llama.cpp, side by side, on two models: the
# embedded SmolLM2-135M-Instruct Q4_1, and a random-weight Qwen2 model at
# the 0.5B shape in Q4_K_M (scripts/bench-embedded-model.py: written with
# `gguf`, quantized by llama.cpp; cached). Same prompts (the quickstart's,
# rendered and tokenised once by ragprobe, so both engines get identical
# token ids) and thread count, in one run. Reports, each as a ratio to
# llama.cpp (PyPI llama-cpp-python, built here for this CPU into a cached
# venv):
#   * prompt tokens/s, one prompt at a time;
#   * generated tokens/s, one sequence at a time;
#   * aggregate generated tokens/s with BATCH concurrent requests (llama.cpp:
#     BATCH parallel sequences in one context through its batched API), in
#     the decode phase (every prompt in) and over the whole wall time;
#   * peak resident memory against the file's size.
# Before any ratio it checks the outputs, and withholds the ratios it cannot
# vouch for (exit status 1):
#   * ragprobe's batched outputs (prefix reuse off and on) equal its
#     single-stream outputs token for token (its batch-invariance contract);
#   * llama.cpp's batched outputs equal its single-stream outputs in the
#     first CHECK tokens of every sequence (llama.cpp promises no more:
#     its batched kernels round differently, so long greedy runs may part);
#   * the engines agree: the same first token on at least 3/4 of the
#     prompts (a broken prompt path on either side fails this).
# Goals (issue #39): single-stream decode >= 1.0x, prompt >= 1.0x, BATCH
# concurrent (decode phase) >= 2x llama.cpp's single stream, peak RSS <=
# 1.3x the file.
#
#   bash scripts/bench-embedded.sh            # THREADS=$(nproc) GEN=64 BATCH=8 PROMPTS=16 CHECK=16
#   MODELS_TO_RUN=smollm2 bash scripts/bench-embedded.sh   # one model (smollm2, qwen2-0.5b)
#
# The prompts come from the quickstart store in $STORE (default .ragprobe,
# as `make demo` leaves it); when it holds no embedded-model responses the
# quickstart is run into it first (with $RAGPROBE_BIN, else a release
# build of the CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS="${THREADS:-$(nproc)}"; GEN="${GEN:-64}"; BATCH="${BATCH:-8}"; PROMPTS="${PROMPTS:-16}"; CHECK="${CHECK:-16}"
MODELS_TO_RUN="${MODELS_TO_RUN:-smollm2 qwen2-0.5b}"
STORE="${STORE:-.ragprobe}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-embedded}"
LLAMA_CPP_VERSION="${LLAMA_CPP_VERSION:-0.3.16}"
GGUF_VERSION=0.19.0
VENV="${BENCH_LLAMA_VENV:-$HOME/.cache/ragprobe/bench-llama-venv-$LLAMA_CPP_VERSION}"
MODELS="${RAGPROBE_MODELS:-$HOME/.cache/ragprobe/models}"
BENCH_MODELS="${BENCH_MODELS:-$HOME/.cache/ragprobe/bench-models}"
rm -rf "$WORK"; mkdir -p "$WORK" "$BENCH_MODELS"

bash scripts/fetch-models.sh
SMOLLM2="$MODELS/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"

# llama-cpp-python builds llama.cpp from source: it needs a C++ compiler
# (scikit-build-core fetches cmake from PyPI when the machine has none).
if ! command -v c++ >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
  else
    echo "bench-embedded: needs a C++ compiler (apt-get install g++)" >&2; exit 1
  fi
fi
if ! "$VENV/bin/python" -c "import llama_cpp, numpy, pyarrow, gguf" 2>/dev/null; then
  echo "bench-embedded: building llama-cpp-python $LLAMA_CPP_VERSION into $VENV (several minutes, once) ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  # GGML_NATIVE: llama.cpp compiled for this CPU, as a user building it here gets.
  CMAKE_ARGS="-DGGML_NATIVE=ON" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$VENV/bin/pip" install -q --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_VERSION" numpy pyarrow "gguf==$GGUF_VERSION"
fi

cargo build --release -q -p ragprobe-models --example embedded_bench
TARGET="${CARGO_TARGET_DIR:-target}/release"

# The quickstart's prompts: the distinct chats the embedded model answered.
has_local() {
  [ -d "$STORE/objects" ] && "$VENV/bin/python" - "$STORE" <<'PY'
import glob, json, sys, pyarrow.parquet as pq
for f in glob.glob(sys.argv[1] + "/objects/*.parquet"):
    m = pq.read_metadata(f).metadata or {}
    if json.loads(m.get(b"ragprobe.manifest", b"{}")).get("kind") == "responses":
        t = pq.read_table(f, columns=["backend"])
        if "local" in t.column("backend").to_pylist():
            sys.exit(0)
sys.exit(1)
PY
}
if ! has_local; then
  echo "bench-embedded: no embedded-model responses in $STORE: running the quickstart into it" >&2
  BIN="${RAGPROBE_BIN:-}"
  if [ -z "$BIN" ]; then cargo build --release -q -p ragprobe-cli; BIN="$TARGET/ragprobe"; fi
  "$BIN" --store "$STORE" run pipelines/quickstart.toml --set out="$WORK/report" >&2
fi
"$VENV/bin/python" - "$STORE" "$PROMPTS" > "$WORK/chats.jsonl" <<'PY'
import glob, json, sys, pyarrow.parquet as pq
store, n = sys.argv[1], int(sys.argv[2])
chats = {}
for f in sorted(glob.glob(store + "/objects/*.parquet")):
    m = pq.read_metadata(f).metadata or {}
    if json.loads(m.get(b"ragprobe.manifest", b"{}")).get("kind") != "responses":
        continue
    t = pq.read_table(f, columns=["request_id", "backend", "messages"]).to_pylist()
    for r in t:
        if r["backend"] == "local":
            chats.setdefault(r["messages"], r["request_id"])
# A deterministic spread over the templates: ordered by request id.
for messages, _ in sorted(chats.items(), key=lambda kv: kv[1])[:n]:
    print(json.dumps(json.loads(messages), ensure_ascii=False))
PY
[ "$(wc -l < "$WORK/chats.jsonl")" -ge "$BATCH" ] || { echo "bench-embedded: fewer than $BATCH prompts in $STORE" >&2; exit 1; }

results=()
for m in $MODELS_TO_RUN; do
  case "$m" in
    smollm2) gguf="$SMOLLM2"; label="SmolLM2-135M-Instruct Q4_1" ;;
    qwen2-0.5b)
      gguf="$BENCH_MODELS/qwen2-0.5b-shape-random.Q4_K_M.gguf"; label="random Qwen2 at the 0.5B shape, Q4_K_M"
      if [ ! -f "$gguf" ]; then
        echo "bench-embedded: writing $gguf (once) ..." >&2
        "$VENV/bin/python" scripts/bench-embedded-model.py "$gguf" "$SMOLLM2"
      fi ;;
    *) echo "bench-embedded: unknown model '$m' in MODELS_TO_RUN (smollm2, qwen2-0.5b)" >&2; exit 2 ;;
  esac
  echo "bench-embedded: $label: ragprobe engine ..." >&2
  "$TARGET/examples/embedded_bench" "$gguf" "$WORK/chats.jsonl" "$WORK/$m.tokens.jsonl" "$THREADS" "$GEN" "$BATCH" > "$WORK/$m.ragprobe.json"
  echo "bench-embedded: $label: llama.cpp ..." >&2
  "$VENV/bin/python" scripts/bench-embedded-llama.py "$gguf" "$WORK/$m.tokens.jsonl" "$THREADS" "$GEN" "$BATCH" > "$WORK/$m.llama.json"
  results+=("$label" "$WORK/$m.ragprobe.json" "$WORK/$m.llama.json")
done

python3 - "$THREADS" "$GEN" "$BATCH" "$CHECK" "${results[@]}" <<'PY'
import json, sys
threads, gen, batch, check = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = sys.argv[5:]
withheld = False
for k in range(0, len(runs), 3):
    label, r, l = runs[k], json.load(open(runs[k + 1])), json.load(open(runs[k + 2]))
    mb = lambda b: b / 2**20
    print(f"\n{label}: {r['prompts']} quickstart prompts ({r['prompt_tokens']} tokens), {threads} threads, "
          f"{gen} tokens per request, greedy; ragprobe {r['isa']}, llama-cpp-python {l['llama_cpp_python']}")
    # The checks, before any ratio.
    rs, rb, rr = r["single_outputs"], r["batch_outputs"], r["batch_prefix_reuse_outputs"]
    r_batch_ok = rb == rs and rr == rs
    ls, lb = l["single_outputs"], l["batch_outputs"]
    l_same = sum(a[:check] == b[:check] for a, b in zip(ls, lb))
    l_full = sum(a == b for a, b in zip(ls, lb))
    l_batch_ok = l_same == batch
    first = sum(a[0] == b[0] for a, b in zip(rs, ls))
    def common(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n
    prefix = [common(a, b) for a, b in zip(rs, ls)]
    sane = 4 * first >= 3 * batch
    print(f"check: ragprobe batched outputs equal its single-stream outputs (all {gen} tokens, prefix reuse off and on): "
          f"{'yes' if r_batch_ok else 'NO'} ({sum(a == b for a, b in zip(rb, rs))} and {sum(a == b for a, b in zip(rr, rs))} of {batch})")
    print(f"check: llama.cpp batched outputs equal its single-stream outputs in the first {check} tokens: "
          f"{l_same} of {batch} ({l_full} in all {gen})")
    print(f"check: the engines' single-stream outputs share the first token on {first} of {batch} prompts "
          f"(need {(3 * batch + 3) // 4}); common prefix {min(prefix)}-{max(prefix)} tokens, mean {sum(prefix) / len(prefix):.1f}")
    rows = []
    if sane:
        rows += [
            ("prompt tokens/s, single stream", r["prompt_tps"], l["prompt_tps"]),
            ("generated tokens/s, single stream", r["gen_tps"], l["gen_tps"]),
        ]
    if sane and r_batch_ok and l_batch_ok:
        rows += [
            (f"generated tokens/s, {batch} concurrent, decode phase", r["batch_decode_tps"], l["batch_decode_tps"]),
            (f"generated tokens/s, {batch} concurrent, wall (prompts too)", r["batch_tps"], l["batch_tps"]),
            ("  ragprobe with prefix reuse (its default)", r["batch_tps_prefix_reuse"], l["batch_tps"]),
        ]
    if rows:
        print(f"| {'':56} | {'ragprobe':>9} | {'llama.cpp':>9} | {'ratio':>6} |")
        print(f"|{'-'*58}|{'-'*11}|{'-'*11}|{'-'*8}|")
        for name, a, b in rows:
            print(f"| {name:56} | {a:9.1f} | {b:9.1f} | {a/b:6.2f} |")
    print(f"peak RSS: ragprobe {mb(r['peak_rss_bytes']):.0f} MiB, llama.cpp {mb(l['peak_rss_bytes']):.0f} MiB "
          f"({mb(l['rss_before_model_bytes']):.0f} MiB of it python before the model); file {mb(r['file_bytes']):.0f} MiB; "
          f"ragprobe/file {r['peak_rss_bytes'] / r['file_bytes']:.2f} (goal <= 1.3: {'met' if r['peak_rss_bytes'] <= 1.3 * r['file_bytes'] else 'NOT met'})")
    single, batched = r.get('peak_rss_single_bytes', 0), r.get('peak_rss_batch_bytes', 0)
    if single and batched:
        print(f"peak RSS by phase, ragprobe: one sequence at a time {mb(single):.0f} MiB ({single / r['file_bytes']:.2f}x the file), "
              f"{batch} concurrent with their KV caches and the prefix cache {mb(batched):.0f} MiB ({batched / r['file_bytes']:.2f}x)")
    if not sane:
        print("WITHHELD: the engines disagree on the first token of too many prompts; no ratio means anything")
        withheld = True
        continue
    met = lambda x, g: f"{x:.2f}x ({'met' if x >= g else 'NOT met'})"
    print(f"goal: single-stream decode >= 1.0x llama.cpp: {met(r['gen_tps'] / l['gen_tps'], 1.0)}")
    print(f"goal: prompt tokens/s >= 1.0x llama.cpp: {met(r['prompt_tps'] / l['prompt_tps'], 1.0)}")
    if r_batch_ok and l_batch_ok:
        print(f"goal: {batch} concurrent (decode phase) >= 2x llama.cpp single stream: {met(r['batch_decode_tps'] / l['gen_tps'], 2.0)}")
    else:
        who = " and ".join(n for n, ok in (("ragprobe", r_batch_ok), ("llama.cpp", l_batch_ok)) if not ok)
        print(f"WITHHELD: the batched ratios, since batching changed {who}'s outputs")
        withheld = True
sys.exit(1 if withheld else 0)
PY
