#!/usr/bin/env bash
# The embedded engine against llama.cpp, side by side: the same GGUF
# (SmolLM2-135M-Instruct Q4_1), the same prompts (the quickstart's, rendered
# and tokenised once by ragprobe, so both engines get identical token ids)
# and the same thread count, in one run. Reports, with each as a ratio to
# llama.cpp (PyPI llama-cpp-python, built here into a cached venv):
#   * prompt tokens/s, one prompt at a time;
#   * generated tokens/s, one sequence at a time;
#   * aggregate generated tokens/s with BATCH concurrent requests (llama.cpp:
#     BATCH parallel sequences in one context through its batched API), in
#     the decode phase (every prompt in) and over the whole wall time.
# Goals (issue #18): aggregate at BATCH=8 >= 2x llama.cpp single-stream;
# prompt processing >= 80% of llama.cpp's.
#
#   bash scripts/bench-embedded.sh            # THREADS=$(nproc) GEN=64 BATCH=8 PROMPTS=16
#
# The prompts come from the quickstart store in $STORE (default .ragprobe,
# as `make demo` leaves it); when it holds no embedded-model responses the
# quickstart is run into it first.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS="${THREADS:-$(nproc)}"; GEN="${GEN:-64}"; BATCH="${BATCH:-8}"; PROMPTS="${PROMPTS:-16}"
STORE="${STORE:-.ragprobe}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-embedded}"
LLAMA_CPP_VERSION="${LLAMA_CPP_VERSION:-0.3.16}"
VENV="${BENCH_LLAMA_VENV:-$HOME/.cache/ragprobe/bench-llama-venv-$LLAMA_CPP_VERSION}"
MODELS="${RAGPROBE_MODELS:-$HOME/.cache/ragprobe/models}"
GGUF="$MODELS/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
rm -rf "$WORK"; mkdir -p "$WORK"

bash scripts/fetch-models.sh

# llama-cpp-python builds llama.cpp from source: it needs cmake and a C++ compiler.
if ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ >/dev/null
  else
    echo "bench-embedded: needs cmake and a C++ compiler (apt-get install cmake g++)" >&2; exit 1
  fi
fi
if ! "$VENV/bin/python" -c "import llama_cpp, numpy, pyarrow" 2>/dev/null; then
  echo "bench-embedded: building llama-cpp-python $LLAMA_CPP_VERSION into $VENV (several minutes, once) ..." >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  # GGML_NATIVE: llama.cpp compiled for this CPU, as a user building it here gets.
  CMAKE_ARGS="-DGGML_NATIVE=ON" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$VENV/bin/pip" install -q --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_VERSION" numpy pyarrow
fi

cargo build --release --workspace --bins --examples -q
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
  "$TARGET/ragprobe" --store "$STORE" run pipelines/quickstart.toml --set out="$WORK/report" >&2
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

echo "bench-embedded: ragprobe engine ..." >&2
"$TARGET/examples/embedded_bench" "$GGUF" "$WORK/chats.jsonl" "$WORK/tokens.jsonl" "$THREADS" "$GEN" "$BATCH" > "$WORK/ragprobe.json"
echo "bench-embedded: llama.cpp ..." >&2
"$VENV/bin/python" scripts/bench-embedded-llama.py "$GGUF" "$WORK/tokens.jsonl" "$THREADS" "$GEN" "$BATCH" > "$WORK/llama.json"

python3 - "$WORK/ragprobe.json" "$WORK/llama.json" "$THREADS" "$GEN" "$BATCH" <<'PY'
import json, sys
r, l = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
threads, gen, batch = sys.argv[3:6]
same = sum(a == b for a, b in zip(r["first_tokens"], l["first_tokens"]))
print(f"SmolLM2-135M-Instruct Q4_1, {r['prompts']} quickstart prompts ({r['prompt_tokens']} tokens), "
      f"{threads} threads, {gen} tokens per request, greedy; ragprobe {r['isa']}, llama-cpp-python {l['llama_cpp_python']}")
print(f"same first 16 tokens in {same} of {batch} batch sequences")
rows = [
    ("prompt tokens/s, single stream", r["prompt_tps"], l["prompt_tps"]),
    ("generated tokens/s, single stream", r["gen_tps"], l["gen_tps"]),
    (f"generated tokens/s, {batch} concurrent, decode phase", r["batch_decode_tps"], l["batch_decode_tps"]),
    (f"generated tokens/s, {batch} concurrent, wall (prompts too)", r["batch_tps"], l["batch_tps"]),
    (f"  ragprobe with prefix reuse (its default)", r["batch_tps_prefix_reuse"], l["batch_tps"]),
]
print(f"| {'':56} | {'ragprobe':>9} | {'llama.cpp':>9} | {'ratio':>6} |")
print(f"|{'-'*58}|{'-'*11}|{'-'*11}|{'-'*8}|")
for name, a, b in rows:
    print(f"| {name:56} | {a:9.1f} | {b:9.1f} | {a/b:6.2f} |")
goal_b = r["batch_decode_tps"] / l["gen_tps"]
goal_p = r["prompt_tps"] / l["prompt_tps"]
print(f"goal: {batch} concurrent (decode phase) >= 2x llama.cpp single-stream generation: {goal_b:.2f}x ({'met' if goal_b >= 2 else 'NOT met'})")
print(f"goal: prompt processing >= 80% of llama.cpp's: {100*goal_p:.0f}% ({'met' if goal_p >= 0.8 else 'NOT met'})")
PY
