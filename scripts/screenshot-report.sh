#!/usr/bin/env bash
# Screenshot a report's index.html with headless Chromium (Debian `chromium`).
#   bash scripts/screenshot-report.sh report/index.html report/screenshot.png [WIDTHxHEIGHT]
set -euo pipefail
HTML="$(realpath "$1")"; OUT="${2:-${1%/*}/screenshot.png}"; SIZE="${3:-1400,3000}"
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROME" ]; then
  echo "installing chromium (Debian package) ..." >&2
  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || { echo "chromium is not available; cannot screenshot" >&2; exit 1; }
  CHROME="$(command -v chromium)"
fi
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --hide-scrollbars \
  --window-size="${SIZE/x/,}" --screenshot="$(realpath -m "$OUT")" "file://$HTML" 2>/dev/null
echo "$OUT"
