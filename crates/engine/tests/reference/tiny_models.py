"""Tiny GGUF models of each architecture the engine runs, written with the
`gguf` package (random weights, two layers, a byte-level vocabulary), and
llama.cpp's next-token logits on them (llama-cpp-python).

    python tiny_models.py OUT_DIR

writes OUT_DIR/<name>.gguf and OUT_DIR/<name>.json ({"tokens": [...],
"logits": [[vocab floats] per position]}) for every model in MODELS. Run
by crates/engine/tests/llama_cpp.rs with the python of
scripts/llama-server.sh's venv.
"""
import ctypes
import json
import sys

import numpy as np
import gguf
import llama_cpp
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


# name -> (architecture, dim, heads, kv heads, ff, rope base, options);
# `type`: the matrices' GGUF type (written with gguf's quantizers, or by
# llama.cpp's own quantizer for the K-quants, LLAMA_CPP_FTYPES). A quantized
# model's reference logits are llama.cpp's on its F32 twin (every tensor
# dequantized with gguf's reference dequantizers), since the engine
# computes in f32 on exactly dequantized weights.
MODELS = {
    "llama-f32": ("llama", 64, 4, 2, 96, 10000.0, {}),
    "llama3-rope-f32": ("llama", 64, 4, 2, 96, 500000.0, {"rope_freqs": True}),
    "qwen2-f32": ("qwen2", 64, 4, 2, 96, 1000000.0, {"bias": True, "tied": True}),
    "llama-f16": ("llama", 64, 4, 2, 96, 10000.0, {"type": "F16"}),
    "llama-bf16": ("llama", 64, 4, 2, 96, 10000.0, {"type": "BF16"}),
    "llama-q8_0": ("llama", 64, 4, 2, 96, 10000.0, {"type": "Q8_0"}),
    "llama-q4_0": ("llama", 64, 4, 2, 96, 10000.0, {"type": "Q4_0"}),
    "llama-q4_1": ("llama", 64, 4, 2, 96, 10000.0, {"type": "Q4_1"}),
    "qwen2-q8_0": ("qwen2", 64, 4, 2, 96, 1000000.0, {"bias": True, "tied": True, "type": "Q8_0"}),
    "llama-f32-256": ("llama", 256, 4, 2, 512, 10000.0, {}),
    "llama-q4_k_m": ("llama", 256, 4, 2, 512, 10000.0, {"type": "Q4_K_M"}),
    "qwen2-q4_k_m": ("qwen2", 256, 4, 2, 512, 1000000.0, {"bias": True, "type": "Q4_K_M"}),
    "llama-q5_0": ("llama", 64, 4, 2, 96, 10000.0, {"type": "Q5_0"}),
    "llama-q5_1": ("llama", 64, 4, 2, 96, 10000.0, {"type": "Q5_1"}),
    "llama-q5_k_m": ("llama", 256, 4, 2, 512, 10000.0, {"type": "Q5_K_M"}),
    "qwen2-q6_k": ("qwen2", 256, 4, 2, 512, 1000000.0, {"bias": True, "tied": True, "type": "Q6_K"}),
}

# The types made by llama.cpp's quantizer (`llama_model_quantize`) from the
# F32 file rather than by gguf's quantizers.
LLAMA_CPP_FTYPES = {
    "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "Q5_K_M": "LLAMA_FTYPE_MOSTLY_Q5_K_M",
    "Q6_K": "LLAMA_FTYPE_MOSTLY_Q6_K",
}


def tensors(dim, heads, kv_heads, ff, opts, vocab, seed):
    """The model's tensors, f32, in file order."""
    rng = np.random.default_rng(seed)
    head_dim = dim // heads
    kv = kv_heads * head_dim
    out = {}

    def t(name, *shape, scale=0.08):
        out[name] = (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(name):
        out[name] = (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32)

    t("token_embd.weight", vocab, dim, scale=0.5)
    norm("output_norm.weight")
    if not opts.get("tied"):
        t("output.weight", vocab, dim, scale=0.3)
    if opts.get("rope_freqs"):
        # Llama 3's scaling as llama.cpp's converter writes it: a divisor per
        # frequency (1 for high frequencies, up to the factor for low ones).
        out["rope_freqs.weight"] = np.linspace(1.0, 8.0, head_dim // 2).astype(np.float32)
    for i in range(2):
        p = f"blk.{i}."
        norm(p + "attn_norm.weight")
        t(p + "attn_q.weight", dim, dim, scale=0.3)
        t(p + "attn_k.weight", kv, dim, scale=0.3)
        t(p + "attn_v.weight", kv, dim)
        if opts.get("bias"):
            t(p + "attn_q.bias", dim, scale=0.5)
            t(p + "attn_k.bias", kv, scale=0.5)
            t(p + "attn_v.bias", kv, scale=0.5)
        t(p + "attn_output.weight", dim, dim)
        norm(p + "ffn_norm.weight")
        t(p + "ffn_gate.weight", ff, dim)
        t(p + "ffn_up.weight", ff, dim)
        t(p + "ffn_down.weight", dim, ff)
    return out


def write(path, arch, dim, heads, kv_heads, ff, base, weights, qtype=None):
    """A GGUF file of `weights`; 2-D matrices as `qtype` (gguf's quantizers)."""
    tokens = byte_tokens() + ["ĠĠ"]
    vocab = len(tokens)
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(2048)
    w.add_embedding_length(dim)
    w.add_block_count(2)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(base)
    w.add_rope_dimension_count(dim // heads)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([1] * vocab)
    w.add_token_merges(["Ġ Ġ"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    for name, a in weights.items():
        if qtype is None or a.ndim != 2:
            w.add_tensor(name, a)
        elif qtype == "F16":
            w.add_tensor(name, a.astype(np.float16))
        else:
            t = getattr(gguf.GGMLQuantizationType, qtype)
            w.add_tensor(name, gguf.quants.quantize(a, t), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def dequantized(path):
    """Every tensor of a GGUF file as f32, by gguf's reference dequantizers."""
    out = {}
    for t in gguf.GGUFReader(path).tensors:
        shape = tuple(int(x) for x in reversed(t.shape))
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        out[t.name] = np.asarray(a, dtype=np.float32).reshape(shape)
    return out


def quantize_with_llama_cpp(src, dst, ftype):
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    assert rc == 0, f"llama_model_quantize: {rc}"


def main(out):
    vocab = len(byte_tokens()) + 1
    for seed, (name, (arch, dim, heads, kv_heads, ff, base, opts)) in enumerate(MODELS.items()):
        path = f"{out}/{name}.gguf"
        shape = (arch, dim, heads, kv_heads, ff, base)
        weights = tensors(dim, heads, kv_heads, ff, opts, vocab, seed)
        qtype = opts.get("type")
        if qtype in LLAMA_CPP_FTYPES:
            write(f"{out}/{name}.f32.gguf", *shape, weights)
            ftype = getattr(llama_cpp, LLAMA_CPP_FTYPES[qtype])
            quantize_with_llama_cpp(f"{out}/{name}.f32.gguf", path, ftype)
        else:
            write(path, *shape, weights, qtype)
        twin = path
        if qtype is not None:
            twin = f"{out}/{name}.twin.gguf"
            write(twin, *shape, dequantized(path))
        types = sorted({t.tensor_type.name for t in gguf.GGUFReader(path).tensors})
        rng = np.random.default_rng(100 + seed)
        ids = [int(x) for x in rng.integers(2, vocab, 24)]
        # An F32 key-value cache (the exact reference), and llama.cpp's
        # default F16 one (ggml type 1), which rounds keys and values as the
        # engine's default cache does (and also the queries and the softmax
        # weights, which the engine keeps in f32).
        def run(kv_type, model=twin):
            llm = Llama(model_path=model, n_ctx=64, n_batch=64, logits_all=True, n_threads=2, type_k=kv_type, type_v=kv_type, verbose=False)
            llm.eval(ids)
            return np.array(llm.scores[: len(ids)], dtype=np.float32).tolist()
        ref = {"tokens": ids, "types": types, "logits": run(0), "logits_f16_cache": run(1)}
        if qtype is not None:
            # llama.cpp on the quantized file itself: its integer dots with
            # 8-bit activations, the engine's default arithmetic.
            ref["logits_quantized"] = run(0, path)
        with open(f"{out}/{name}.json", "w") as f:
            json.dump(ref, f)
        print(name, arch, "types", ",".join(types), "positions", len(ids))


if __name__ == "__main__":
    main(sys.argv[1])
