"""Tiny GGUF models of each architecture the engine runs, written with the
`gguf` package (random weights, two layers, a byte-level vocabulary), and
llama.cpp's next-token logits on them (llama-cpp-python).

    python tiny_models.py OUT_DIR

writes OUT_DIR/<name>.gguf and OUT_DIR/<name>.json ({"tokens": [...],
"logits": [[vocab floats] per position]}) for every model in MODELS. Run
by crates/engine/tests/llama_cpp.rs with the python of
scripts/llama-server.sh's venv.
"""
import json
import sys

import numpy as np
import gguf
from llama_cpp import Llama

# GPT-2's byte-to-unicode table: 256 tokens, one per byte.
def byte_tokens():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


# name -> (architecture, dim, heads, kv heads, ff, rope base, options)
MODELS = {
    "llama-f32": ("llama", 64, 4, 2, 96, 10000.0, {}),
    "llama3-rope-f32": ("llama", 64, 4, 2, 96, 500000.0, {"rope_freqs": True}),
    "qwen2-f32": ("qwen2", 64, 4, 2, 96, 1000000.0, {"bias": True, "tied": True}),
}


def write(path, arch, dim, heads, kv_heads, ff, base, opts, seed):
    rng = np.random.default_rng(seed)
    tokens = byte_tokens() + ["ĠĠ"]
    vocab = len(tokens)
    head_dim = dim // heads
    kv = kv_heads * head_dim
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(256)
    w.add_embedding_length(dim)
    w.add_block_count(2)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(base)
    w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([1] * vocab)
    w.add_token_merges(["Ġ Ġ"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)

    def t(name, *shape, scale=0.08):
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    t("token_embd.weight", vocab, dim, scale=0.5)
    w.add_tensor("output_norm.weight", (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32))
    if not opts.get("tied"):
        t("output.weight", vocab, dim, scale=0.3)
    if opts.get("rope_freqs"):
        # Llama 3's scaling as llama.cpp's converter writes it: a divisor per
        # frequency (1 for high frequencies, up to the factor for low ones).
        w.add_tensor("rope_freqs.weight", np.linspace(1.0, 8.0, head_dim // 2).astype(np.float32))
    for i in range(2):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32))
        t(p + "attn_q.weight", dim, dim, scale=0.3)
        t(p + "attn_k.weight", kv, dim, scale=0.3)
        t(p + "attn_v.weight", kv, dim)
        if opts.get("bias"):
            t(p + "attn_q.bias", dim, scale=0.5)
            t(p + "attn_k.bias", kv, scale=0.5)
            t(p + "attn_v.bias", kv, scale=0.5)
        t(p + "attn_output.weight", dim, dim)
        w.add_tensor(p + "ffn_norm.weight", (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32))
        t(p + "ffn_gate.weight", ff, dim)
        t(p + "ffn_up.weight", ff, dim)
        t(p + "ffn_down.weight", dim, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return vocab


def main(out):
    for seed, (name, (arch, dim, heads, kv_heads, ff, base, opts)) in enumerate(MODELS.items()):
        path = f"{out}/{name}.gguf"
        vocab = write(path, arch, dim, heads, kv_heads, ff, base, opts, seed)
        rng = np.random.default_rng(100 + seed)
        ids = [int(x) for x in rng.integers(2, vocab, 24)]
        # F32 key-value cache (the default F16 rounds keys and values).
        llm = Llama(model_path=path, n_ctx=64, n_batch=64, logits_all=True, n_threads=2, type_k=0, type_v=0, verbose=False)
        llm.eval(ids)
        logits = np.array(llm.scores[: len(ids)], dtype=np.float32)
        with open(f"{out}/{name}.json", "w") as f:
            json.dump({"tokens": ids, "logits": logits.tolist()}, f)
        print(name, arch, "vocab", vocab, "positions", len(ids))


if __name__ == "__main__":
    main(sys.argv[1])
