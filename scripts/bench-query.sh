#!/usr/bin/env bash
# `ragprobe query` against DuckDB and pandas on the same Parquet files, in one
# run: a group-by over 10M score rows and a join of those rows with 2M cases.
# Reports the best of REPEAT wall times and the peak RSS of each, and the
# ratios. Goals (issue #17): within 1.5x of DuckDB's time; ahead of pandas on
# both time and memory.
#
#   bash scripts/bench-query.sh            # ROWS=10000000 CASES=2000000 REPEAT=3
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-10000000}"; CASES="${CASES:-2000000}"; REPEAT="${REPEAT:-3}"
WORK="${BENCH_DIR:-${TMPDIR:-/tmp}/ragprobe-bench-query}"
VENV="${BENCH_QUERY_VENV:-$HOME/.cache/ragprobe/bench-query-venv}"
mkdir -p "$WORK"

if [ ! -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
  else
    echo "bench-query: needs GNU time (/usr/bin/time): apt-get install time" >&2; exit 1
  fi
fi
if ! "$VENV/bin/python" -c "import duckdb, pandas, pyarrow, numpy" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q duckdb pandas pyarrow numpy
fi
cargo build --release --workspace --bins -q
BIN="${CARGO_TARGET_DIR:-target}/release/ragprobe"

# The data: CASES cases (4 datasets, 6 conditions), each scored by ROWS/CASES models.
if [ ! -s "$WORK/scores-$ROWS.parquet" ] || [ ! -s "$WORK/cases-$CASES.parquet" ]; then
  echo "bench-query: writing $ROWS score rows and $CASES cases ..." >&2
  "$VENV/bin/python" - "$WORK" "$ROWS" "$CASES" <<'PY'
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
work, rows, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
case_ids = np.array([f"c{i:08d}" for i in range(cases)])
datasets = np.array(["nq", "tqa", "webq", "popqa"])[rng.integers(0, 4, cases)]
conds = np.array(["closed-book", "base", "add-random", "add-topk", "add-genadv", "add-conflict"])[rng.integers(0, 6, cases)]
pq.write_table(pa.table({"case_id": case_ids, "qid": np.char.add("q", (np.arange(cases) // 6).astype(str)),
                         "dataset": datasets, "condition": conds}), f"{work}/cases-{cases}.parquet")
models = max(1, rows // cases)
idx = np.arange(rows) % cases
model = np.array([f"model-{m}" for m in range(models)])[np.arange(rows) // cases % models]
acc = rng.random(rows) < 0.55
pq.write_table(pa.table({
    "case_id": case_ids[idx], "qid": np.char.add("q", (idx // 6).astype(str)),
    "model": model, "condition": conds[idx], "dataset": datasets[idx],
    "accuracy": acc, "em": acc & (rng.random(rows) < 0.6), "f1": rng.random(rows),
    "foil_only": rng.random(rows) < 0.1,
}), f"{work}/scores-{rows}.parquet", row_group_size=1 << 20)
PY
fi
S="$WORK/scores-$ROWS.parquet"; C="$WORK/cases-$CASES.parquet"
GROUP="SELECT model, condition, avg(CAST(accuracy AS DOUBLE)) AS acc, count(*) AS n FROM scores GROUP BY model, condition ORDER BY model, condition"
JOIN="SELECT s.model, c.dataset, avg(CAST(s.foil_only AS DOUBLE)) AS foil, count(*) AS n FROM scores s JOIN cases c ON s.case_id = c.case_id GROUP BY s.model, c.dataset ORDER BY model, dataset"

# measure NAME CMD...: best wall seconds and peak RSS (MiB) of REPEAT runs.
measure() {
  local name="$1"; shift
  local best="" rss=0 t r
  for _ in $(seq "$REPEAT"); do
    /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" > "$WORK/$name.out"
    read -r t r < "$WORK/time.txt"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
    [ "$r" -gt "$rss" ] && rss=$r
  done
  echo "$name $best $((rss / 1024))"
}

STORE="$WORK/store"
{
  for q in group join; do
    sql=$([ $q = group ] && echo "$GROUP" || echo "$JOIN")
    measure "ragprobe-$q" "$BIN" -q --store "$STORE" query "$sql" --table "scores=$S" --table "cases=$C" --csv -
    measure "duckdb-$q" "$VENV/bin/python" -c "
import duckdb, sys
sql = sys.argv[1].replace('FROM scores', \"FROM read_parquet('$S')\").replace('JOIN cases', \"JOIN read_parquet('$C')\")
duckdb.sql('SET threads TO $(nproc)'); print(duckdb.sql(sql).df().to_csv(index=False))" "$sql"
    if [ $q = group ]; then
      measure "pandas-$q" "$VENV/bin/python" -c "
import pandas as pd
s = pd.read_parquet('$S', columns=['model', 'condition', 'accuracy'])
g = s.groupby(['model', 'condition']).agg(acc=('accuracy', 'mean'), n=('accuracy', 'size')).reset_index()
print(g.to_csv(index=False))"
    else
      measure "pandas-$q" "$VENV/bin/python" -c "
import pandas as pd
s = pd.read_parquet('$S', columns=['case_id', 'model', 'foil_only'])
c = pd.read_parquet('$C', columns=['case_id', 'dataset'])
g = s.merge(c, on='case_id').groupby(['model', 'dataset']).agg(foil=('foil_only', 'mean'), n=('foil_only', 'size')).reset_index()
print(g.to_csv(index=False))"
    fi
  done
} > "$WORK/results.txt"

# The three agree on the numbers (rounded).
"$VENV/bin/python" - "$WORK" <<'PY'
import sys, pandas as pd, io
w = sys.argv[1]
for q in ["group", "join"]:
    frames = [pd.read_csv(f"{w}/{t}-{q}.out").round(6) for t in ["ragprobe", "duckdb", "pandas"]]
    frames = [f.sort_values(list(f.columns[:2])).reset_index(drop=True) for f in frames]
    for f in frames[1:]:
        f.columns = frames[0].columns
        assert frames[0].equals(f), f"{q}: results differ:\n{frames[0]}\n{f}"
print("bench-query: ragprobe, DuckDB and pandas give the same numbers")
PY

python3 - "$WORK/results.txt" "$ROWS" "$CASES" <<'PY'
import sys
r = {}
for line in open(sys.argv[1]):
    name, t, m = line.split()
    r[name] = (float(t), int(m))
print(f"{int(sys.argv[2]):,} score rows, {int(sys.argv[3]):,} cases, best of runs; time in s, peak RSS in MiB")
print(f"| query | ragprobe | DuckDB | pandas | ragprobe/DuckDB time | ragprobe/pandas time | ragprobe/pandas RSS |")
print(f"|---|---|---|---|---|---|---|")
for q in ["group", "join"]:
    a, d, p = r[f"ragprobe-{q}"], r[f"duckdb-{q}"], r[f"pandas-{q}"]
    print(f"| {q} | {a[0]:.2f} s, {a[1]} MiB | {d[0]:.2f} s, {d[1]} MiB | {p[0]:.2f} s, {p[1]} MiB | {a[0]/d[0]:.2f} | {a[0]/p[0]:.2f} | {a[1]/p[1]:.2f} |")
for q in ["group", "join"]:
    a, d, p = r[f"ragprobe-{q}"], r[f"duckdb-{q}"], r[f"pandas-{q}"]
    ok = a[0] <= 1.5 * d[0] and a[0] < p[0] and a[1] < p[1]
    print(f"goal ({q}): <= 1.5x DuckDB's time, ahead of pandas on time and memory: {'met' if ok else 'NOT met'}")
PY
