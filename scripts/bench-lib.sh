# Helpers the bench scripts share; `source "$(dirname "$0")/bench-lib.sh"`.

# GNU time (/usr/bin/time) for wall time and peak RSS: installed with apt
# when running as root, else an error naming the package.
need_gnu_time() {
  [ -x /usr/bin/time ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
  else
    echo "$(basename "$0"): needs GNU time (/usr/bin/time): apt-get install time" >&2
    exit 1
  fi
}

# bench_venv MODULES PACKAGE...: the shared bench virtualenv (BENCH_VENV,
# default $TMPDIR/ragprobe-bench-venv) with PACKAGEs installed unless
# `import MODULES` already works; sets VENV.
bench_venv() {
  local modules="$1"; shift
  VENV="${BENCH_VENV:-${TMPDIR:-/tmp}/ragprobe-bench-venv}"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -c "import $modules" 2>/dev/null || "$VENV/bin/pip" install -q "$@"
}

# Wall seconds and peak RSS (KiB) from a `/usr/bin/time -v` report.
secs() { awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$1"; }
rss_kb() { awk -F': ' '/Maximum resident set size/{print $2}' "$1"; }
