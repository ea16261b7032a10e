#!/usr/bin/env bash
# The S3-protocol server the remote tests and bench-sharing talk to: moto in
# server mode (PyPI `moto[server]`), run on 127.0.0.1 by the tests themselves.
#
#   scripts/s3-server.sh install   # make sure it is installed (make test runs this)
#   scripts/s3-server.sh path      # print the moto_server program to run
#
# A moto_server on PATH with its server extras is used as is; otherwise one
# is installed into ~/.cache/ragprobe/moto-venv.
set -euo pipefail
VENV="${RAGPROBE_MOTO_VENV:-$HOME/.cache/ragprobe/moto-venv}"
MOTO_VERSION="5.2.1"

find_moto() {
  local p
  p="$(command -v moto_server 2>/dev/null || true)"
  if [ -n "$p" ] && python3 -c 'import moto.server, flask, flask_cors' >/dev/null 2>&1; then
    echo "$p"; return 0
  fi
  if [ -x "$VENV/bin/moto_server" ] && "$VENV/bin/python" -c 'import moto.server, flask, flask_cors' >/dev/null 2>&1; then
    echo "$VENV/bin/moto_server"; return 0
  fi
  return 1
}

case "${1:-path}" in
  install)
    if p="$(find_moto)"; then echo "moto server: $p" >&2; exit 0; fi
    echo "installing moto[server]==$MOTO_VERSION into $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "moto[server]==$MOTO_VERSION"
    find_moto >/dev/null || { echo "moto server install failed" >&2; exit 1; }
    ;;
  path)
    find_moto || { echo "no moto server: run scripts/s3-server.sh install" >&2; exit 1; }
    ;;
  *) echo "usage: $0 install|path" >&2; exit 2 ;;
esac
