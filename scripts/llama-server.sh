#!/usr/bin/env bash
# llama.cpp's own OpenAI-compatible server (PyPI `llama-cpp-python[server]`,
# which builds llama.cpp from source), that the real-server test
# (crates/cli/tests/llama_server.rs) starts on 127.0.0.1 over the embedded
# SmolLM2 GGUF, and the engine's comparison with llama.cpp
# (crates/engine/tests/llama_cpp.rs), whose tiny models are written with the
# `gguf` package installed beside it.
#
#   scripts/llama-server.sh install   # make sure it is built (make test runs this; minutes, once)
#   scripts/llama-server.sh path      # print the python that runs `-m llama_cpp.server`
#
# Built into ~/.cache/ragprobe/llama-server-venv-<version>, kept across runs.
set -euo pipefail
VERSION="${LLAMA_CPP_VERSION:-0.3.16}"
GGUF_VERSION=0.19.0
VENV="${RAGPROBE_LLAMA_VENV:-$HOME/.cache/ragprobe/llama-server-venv-$VERSION}"

server_ok() { "$VENV/bin/python" -c 'import llama_cpp.server.app, uvicorn' >/dev/null 2>&1; }
ok() { server_ok && "$VENV/bin/python" -c "import gguf, importlib.metadata as m; assert m.version('gguf') == '$GGUF_VERSION'" >/dev/null 2>&1; }

case "${1:-path}" in
  install)
    if ok; then echo "llama.cpp server: $VENV/bin/python" >&2; exit 0; fi
    if server_ok; then
      "$VENV/bin/pip" install -q "gguf==$GGUF_VERSION"
      ok || { echo "gguf install failed" >&2; exit 1; }
      exit 0
    fi
    echo "building llama-cpp-python[server]==$VERSION into $VENV (llama.cpp from source: several minutes, once)" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    # Portable CPU code (no -march=native): the venv is a cache that may
    # move between machines of the same kind. scikit-build-core fetches
    # cmake from PyPI when the machine has none.
    CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$VENV/bin/pip" install -q "llama-cpp-python[server]==$VERSION" "gguf==$GGUF_VERSION"
    ok || { echo "llama.cpp server install failed" >&2; exit 1; }
    ;;
  path)
    ok || { echo "no llama.cpp server: run scripts/llama-server.sh install" >&2; exit 1; }
    echo "$VENV/bin/python"
    ;;
  *) echo "usage: $0 install|path" >&2; exit 2 ;;
esac
