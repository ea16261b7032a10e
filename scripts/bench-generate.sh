#!/usr/bin/env bash
# Generation benchmark.
#  1. Throughput against a loopback mock server with a fixed 50 ms latency:
#     N requests (default 20000) at concurrency 64; achieved requests/s as a
#     share of the ideal 64 / 0.05 s = 1280/s, and of what N requests can
#     reach at all (ceil(N / 64) rounds of 50 ms: the last round is partly
#     empty); the mean latency each request saw (from the request journal);
#     and the same for a plain Python asyncio + openai client loop with a
#     semaphore of 64. With 2 or more cores the mock runs on core 1 and the
#     clients on core 0 (taskset), so that they do not steal each other's time.
#  2. The embedded model's prompt-processing and generation tokens/s.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N_REQUESTS:-20000}"; CONC="${CONCURRENCY:-64}"; LAT_MS="${LATENCY_MS:-50}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-generate}"
rm -rf "$WORK"; mkdir -p "$WORK"
cargo build --release --workspace -q
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"
source scripts/bench-lib.sh
bench_venv openai openai

# N questions -> N closed-book cases.
python3 - "$N" > "$WORK/q.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"question": f"What is the value of item {i}?", "answers": [f"v{i}"]}))
PY
S="$WORK/store"
Q=$("$BIN" -q --store "$S" ingest --format dpr "$WORK/q.jsonl" | awk -F'\t' '$1=="questions"{print $2}')
CASES=$("$BIN" -q --store "$S" perturb --questions "$Q" -s closed-book | awk -F'\t' '{print $2}')

PIN_MOCK=(); PIN_CLIENT=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then PIN_MOCK=(taskset -c 1); PIN_CLIENT=(taskset -c 0); fi
"${PIN_MOCK[@]}" "$BIN" mock-server --latency-ms "$LAT_MS" --max-seconds 900 > "$WORK/url.txt" &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$WORK/url.txt" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/url.txt")

start=$(date +%s.%N)
"${PIN_CLIENT[@]}" "$BIN" -q --store "$S" generate --cases "$CASES" --prompt imperfect-closed-book --backend openai --base-url "$URL" --model mock-model --concurrency "$CONC" --max-tokens 8 > /dev/null
end=$(date +%s.%N)
RUST_RPS=$(python3 -c "print($N/($end-$start))")
# The stage's own rate (requests only, without process start and artifact writing):
STAGE_RPS=$(tail -1 "$S/log/runs.jsonl" | python3 -c "import json,sys; print(json.load(sys.stdin)['requests_per_second'])")

MEAN_LAT=$(cat "$S"/requests/*.jsonl | python3 -c 'import json,sys; l=[json.loads(x)["latency_ms"] for x in sys.stdin if x.strip()]; print(sum(l)/len(l))')
PY_RPS=$("${PIN_CLIENT[@]}" "$VENV/bin/python" - "$URL" "$N" "$CONC" <<'PY'
import asyncio, sys, time
from openai import AsyncOpenAI
url, n, conc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
async def main():
    client = AsyncOpenAI(base_url=url, api_key="none", max_retries=5)
    sem = asyncio.Semaphore(conc)
    async def one(i):
        async with sem:
            r = await client.chat.completions.create(model="mock-model", max_tokens=8,
                messages=[{"role": "user", "content": f"Answer the following question. Q: What is the value of item {i}? A:"}])
            return r.choices[0].message.content
    t = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return n / (time.perf_counter() - t)
print(asyncio.run(main()))
PY
)
IDEAL=$(python3 -c "print($CONC/($LAT_MS/1000))")
python3 - "$N" "$CONC" "$LAT_MS" "$IDEAL" "$RUST_RPS" "$STAGE_RPS" "$PY_RPS" "$MEAN_LAT" "${#PIN_CLIENT[@]}" <<'PY'
import math, sys
n, conc, lat, ideal, rust, stage, py, mean_lat, pinned = sys.argv[1:]
ideal, rust, stage, py, mean_lat = map(float, (ideal, rust, stage, py, mean_lat))
n, conc, lat = int(n), int(conc), float(lat)
reachable = n / (math.ceil(n / conc) * lat / 1000)
print(f"mock server: {lat:.0f} ms latency; {n} requests at concurrency {conc}; ideal {ideal:,.0f} requests/s; "
      f"{n} requests can reach {reachable:,.0f}/s ({100*reachable/ideal:.1f}%: the last round is partly empty); "
      f"{'mock on core 1, clients on core 0' if int(pinned) else 'not pinned'}")
print(f"mean latency a request saw (client journal): {mean_lat:.1f} ms, so {conc}/latency = {conc/mean_lat*1000:,.0f} requests/s")
print(f"ragprobe request phase at {100*stage/reachable:.1f}% of what {n} requests can reach")
print(f"ragprobe generate (whole command): {rust:,.0f} requests/s = {100*rust/ideal:.1f}% of ideal")
print(f"ragprobe generate (request phase):  {stage:,.0f} requests/s = {100*stage/ideal:.1f}% of ideal")
print(f"python asyncio + openai, sem 64:    {py:,.0f} requests/s = {100*py/ideal:.1f}% of ideal")
print(f"ratio ragprobe / python: {stage/py:.2f}x")
PY

# Embedded model speed: prompt processing and generation tokens/s.
cargo run --release -q -p ragprobe-models --example llm_speed
