#!/usr/bin/env bash
# Report size and load time in headless Chromium (issue #20), in one run:
#   - a NoMIRACL-sized run: 500 queries x 10 passages x 4 prompts (2,000 responses);
#   - a large run: 5,000 questions x 5 conditions x 2 models (50,000 responses, 5-6 passages each).
# Both are synthetic (scripts cannot call a model 50k times here), written by
# crates/report/examples/synthetic_run.rs and reported by `ragprobe report`.
# Goals: the NoMIRACL-sized index.html under 3 MB; the 50k one under 40 MB,
# ready (data unpacked, list drawn, filters working) in under 3 s.
# Also writes screenshots ($WORK/*.png) of the list and of a question view.
#
#   bash scripts/bench-report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-report}"
VENV="${BENCH_REPORT_VENV:-$HOME/.cache/ragprobe/bench-report-venv}"
mkdir -p "$WORK"
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROME" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    CHROME="$(command -v chromium)"
  else
    echo "bench-report: needs Chromium" >&2; exit 1
  fi
fi
if ! "$VENV/bin/python" -c "import websocket" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q websocket-client
fi
cargo build --release --workspace --bins --examples -q
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="$TARGET/release/ragprobe"
GEN="$TARGET/release/examples/synthetic_run"

run() { # NAME ARGS...: make the run, report it, measure it
  local name=$1; shift
  rm -rf "$WORK/$name"; mkdir -p "$WORK/$name"
  "$GEN" "$WORK/$name/store" "$@" > "$WORK/$name/ids"
  local scores metrics
  scores=$(awk '$1=="scores"{print $2}' "$WORK/$name/ids")
  metrics=$(awk '$1=="metrics"{print $2}' "$WORK/$name/ids")
  local t0 t1
  t0=$(date +%s.%N)
  "$BIN" --store "$WORK/$name/store" -q report --metrics "$metrics" --scores "$scores" --out "$WORK/$name/report" 2>/dev/null
  t1=$(date +%s.%N)
  local html="$WORK/$name/report/index.html"
  local bytes; bytes=$(stat -c %s "$html")
  local q="#cases?question=nq:q000000"
  [ "$name" = nomiracl ] && q="#cases?question=nomiracl-en:q000000"
  local timing; timing=$("$VENV/bin/python" scripts/report-load-time.py "$CHROME" "file://$html" "$q" "$WORK/$name-question.png")
  "$CHROME" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2200 \
    --virtual-time-budget=8000 --screenshot="$WORK/$name-list.png" "file://$html" >/dev/null 2>&1 || true
  printf '%-10s index.html %6.1f MB  report %5.1f s  %s\n' "$name" "$(echo "$bytes/1000000" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" "$timing"
}

echo "bench-report: synthetic runs in $WORK" >&2
run nomiracl 500 1 1 4 10 nomiracl
run large50k 5000 5 2 1 5
echo "screenshots: $WORK/*.png"
