#!/usr/bin/env bash
# `ragprobe artifacts push/pull` against `aws s3 sync` (PyPI awscli) on the
# same data and the same loopback S3 server (moto), in one run.
#
# The data: SMALL artifacts of SMALL_KB each and LARGE of LARGE_MB each
# (default 1000 x 200 kB + 4 x 200 MB, about 1 GiB), pseudo-random text so
# the files are as large as they say. Reports wall time, MB/s and the
# requests the server logged for each tool, the ratios, and the time of a
# second push of unchanged data. Goals (issue #16): at least as fast as
# `aws s3 sync` both ways; a second push under a second.
#
#   bash scripts/bench-sharing.sh        # SMALL=1000 SMALL_KB=200 LARGE=4 LARGE_MB=200
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL="${SMALL:-1000}"; SMALL_KB="${SMALL_KB:-200}"; LARGE="${LARGE:-4}"; LARGE_MB="${LARGE_MB:-200}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-sharing}"
VENV="${BENCH_SHARING_VENV:-$HOME/.cache/ragprobe/bench-sharing-venv}"
mkdir -p "$WORK"

bash scripts/s3-server.sh install
MOTO="$(bash scripts/s3-server.sh path)"
AWS="$(command -v aws || true)"
if [ -z "$AWS" ] || ! "$AWS" --version >/dev/null 2>&1; then
  if [ ! -x "$VENV/bin/aws" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q awscli
  fi
  AWS="$VENV/bin/aws"
fi
cargo build --release --workspace --bins --examples -q
TARGET="${CARGO_TARGET_DIR:-target}"
BIN="$TARGET/release/ragprobe"
MAKE="$TARGET/release/examples/make_artifacts"

DATA="$WORK/data-$SMALL-$SMALL_KB-$LARGE-$LARGE_MB"
if [ ! -s "$DATA/ids" ]; then
  rm -rf "$DATA"; mkdir -p "$DATA"
  echo "bench-sharing: writing $SMALL x ${SMALL_KB} kB + $LARGE x ${LARGE_MB} MB artifacts ..." >&2
  "$MAKE" "$DATA/store" "$SMALL" "$SMALL_KB" "$LARGE" "$LARGE_MB" > "$DATA/ids.tmp"
  mv "$DATA/ids.tmp" "$DATA/ids"
fi
BYTES=$(du -sb "$DATA/store/objects" | cut -f1)
N=$(wc -l < "$DATA/ids")

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LOG="$WORK/moto.log"
"$MOTO" -H 127.0.0.1 -p "$PORT" 2> "$LOG" >/dev/null &
MOTO_PID=$!
trap 'kill $MOTO_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -s "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break; sleep 0.1; done
curl -s -X PUT "http://127.0.0.1:$PORT/bench" >/dev/null

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_DEFAULT_REGION=us-east-1
requests() { grep -c 'HTTP/1.1" ' "$LOG" || true; }
# timed LABEL CMD...: wall seconds into $LABEL.s, requests into $LABEL.r
timed() {
  local label=$1; shift
  local before; before=$(requests)
  local t0; t0=$(date +%s.%N)
  "$@" > "$WORK/$label.out" 2> "$WORK/$label.err" || { cat "$WORK/$label.err" >&2; exit 1; }
  local t1; t1=$(date +%s.%N)
  sleep 0.2
  echo "$t1 - $t0" | bc -l > "$WORK/$label.s"
  echo $(( $(requests) - before )) > "$WORK/$label.r"
}

ENDPOINT="http://127.0.0.1:$PORT"
# aws s3 sync: the objects directory up, then down into an empty directory.
timed aws_push "$AWS" --endpoint-url "$ENDPOINT" s3 sync --only-show-errors "$DATA/store/objects" s3://bench/aws/objects
rm -rf "$WORK/aws-down"; mkdir -p "$WORK/aws-down"
timed aws_pull "$AWS" --endpoint-url "$ENDPOINT" s3 sync --only-show-errors s3://bench/aws/objects "$WORK/aws-down"
timed aws_again "$AWS" --endpoint-url "$ENDPOINT" s3 sync --only-show-errors "$DATA/store/objects" s3://bench/aws/objects

# ragprobe: the same artifacts (with their action records), up, again, down.
"$BIN" --store "$DATA/store" remote rm bench >/dev/null 2>&1 || true
"$BIN" --store "$DATA/store" remote add bench s3://bench/rp --endpoint "$ENDPOINT" 2>/dev/null
mapfile -t IDS < "$DATA/ids"
timed rp_push "$BIN" --store "$DATA/store" -q artifacts push "${IDS[@]}"
timed rp_again "$BIN" --store "$DATA/store" -q artifacts push "${IDS[@]}"
rm -rf "$WORK/rp-down"
"$BIN" --store "$WORK/rp-down" remote add bench s3://bench/rp --endpoint "$ENDPOINT" 2>/dev/null
timed rp_pull "$BIN" --store "$WORK/rp-down" -q artifacts pull "${IDS[@]}"
cmp <(ls "$WORK/rp-down/objects") <(ls "$DATA/store/objects") || { echo "bench-sharing: the pull differs" >&2; exit 1; }

r() { cat "$WORK/$1.$2"; }
mbs() { echo "scale=1; $BYTES / 1000000 / $(r "$1" s)" | bc -l; }
printf '\nbench-sharing: %d artifacts, %.1f MB (%d x %d kB + %d x %d MB), moto on 127.0.0.1\n' "$N" "$(echo "$BYTES/1000000" | bc -l)" "$SMALL" "$SMALL_KB" "$LARGE" "$LARGE_MB"
printf '%-28s %9s %9s %9s\n' "" "seconds" "MB/s" "requests"
for x in rp_push aws_push rp_pull aws_pull; do
  printf '%-28s %9.2f %9s %9d\n' "$x" "$(r $x s)" "$(mbs $x)" "$(r $x r)"
done
printf '%-28s %9.2f %9s %9d\n' "rp_again (unchanged)" "$(r rp_again s)" "-" "$(r rp_again r)"
printf '%-28s %9.2f %9s %9d\n' "aws_again (unchanged)" "$(r aws_again s)" "-" "$(r aws_again r)"
printf 'push: ragprobe %.2fx the speed of aws s3 sync; pull: %.2fx; second push %.2f s (aws %.2f s)\n' \
  "$(echo "$(r aws_push s) / $(r rp_push s)" | bc -l)" "$(echo "$(r aws_pull s) / $(r rp_pull s)" | bc -l)" \
  "$(r rp_again s)" "$(r aws_again s)"
