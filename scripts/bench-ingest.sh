#!/usr/bin/env bash
# Ingest benchmark: a generated DPR file (default 100k questions x 20 ctxs of
# ~100 words), ingested by the release build. Reports rows/s and peak RSS
# (GNU time), and the input size for comparison.
#   N_QUESTIONS=100000 N_CTXS=20 WORDS=100 bash scripts/bench-ingest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NQ="${N_QUESTIONS:-100000}"; NC="${N_CTXS:-20}"; WORDS="${WORDS:-100}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-ingest}"
mkdir -p "$WORK"

if [ ! -x /usr/bin/time ]; then
  echo "installing GNU time (for peak RSS)..." >&2
  (apt-get update -qq && apt-get install -y -qq time) >/dev/null || { echo "need /usr/bin/time (Debian package 'time')" >&2; exit 1; }
fi
cargo build --release --workspace -q
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"

INPUT="$WORK/dpr-${NQ}x${NC}x${WORDS}.jsonl"
if [ ! -s "$INPUT" ]; then
  echo "generating $INPUT ..." >&2
  python3 scripts/gen-dpr-bench.py "$INPUT" "$NQ" "$NC" "$WORDS"
fi
BYTES=$(stat -c %s "$INPUT")

rm -rf "$WORK/store"
/usr/bin/time -v "$BIN" -q --store "$WORK/store" ingest --format dpr "$INPUT" >"$WORK/out.txt" 2>"$WORK/time.txt"
SECS=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$WORK/time.txt")
RSS_KB=$(awk -F': ' '/Maximum resident set size/{print $2}' "$WORK/time.txt")
ROWS=$((NQ * NC))
python3 - "$NQ" "$ROWS" "$SECS" "$RSS_KB" "$BYTES" <<'PY'
import sys
nq, rows, secs, rss_kb, size = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"input:        {size/2**20:,.0f} MiB ({nq:,} questions, {rows:,} contexts)")
print(f"wall time:    {secs:.1f} s")
print(f"throughput:   {nq/secs:,.0f} questions/s, {rows/secs:,.0f} context rows/s, {size/2**20/secs:,.0f} MiB/s")
print(f"peak RSS:     {rss_kb/1024:,.0f} MiB ({rss_kb*1024/size*100:.1f}% of the input size)")
PY
cat "$WORK/out.txt"

# The largest-record case: one JSON line of ~49 MB holding 3.5 million tiny
# passages. Ingest walks a record's passage list one passage at a time, so
# peak RSS stays a small multiple of the record (it was ~70x before).
BIG="$WORK/one-record-3.5M-ctxs.jsonl"
if [ ! -s "$BIG" ]; then
  python3 -c "
import sys
n = 3_500_000
sys.stdout.write('{\"question\": \"q?\", \"answers\": [\"a\"], \"ctxs\": [' + ','.join(['{\"text\": \"a\"}'] * n) + ']}\n')
" > "$BIG"
fi
rm -rf "$WORK/store-big"
/usr/bin/time -v "$BIN" -q --store "$WORK/store-big" ingest --format dpr "$BIG" >/dev/null 2>"$WORK/time-big.txt"
BIG_RSS=$(awk -F': ' '/Maximum resident set size/{print $2}' "$WORK/time-big.txt")
BIG_BYTES=$(stat -c %s "$BIG")
python3 -c "print(f'largest record: {$BIG_BYTES/2**20:.0f} MiB line, peak RSS {$BIG_RSS/1024:.0f} MiB ({$BIG_RSS*1024/$BIG_BYTES:.1f}x the record)')"
