"""A random-weight model at Qwen2.5-0.5B's shape in Q4_K_M, for
scripts/bench-embedded.sh: the size of model a researcher runs on a CPU,
without a download.

usage: bench-embedded-model.py OUT.gguf VOCAB_FROM.gguf

The shape is Qwen2.5-0.5B-Instruct's (architecture `qwen2`: 24 layers,
width 896, 14 heads over 2 key-value heads, feed-forward 4864, Q/K/V biases,
tied embeddings, RoPE base 1e6, 151,936 tokens). The tokenizer and chat
template are VOCAB_FROM's (SmolLM2's), padded with unused tokens to the
vocabulary size, so the prompts are the same text. The weights are random
(seeded: the same file every time), written as F16 with `gguf` and
quantized by llama.cpp's own quantizer (`llama_model_quantize`,
LLAMA_FTYPE_MOSTLY_Q4_K_M). As in the published Qwen2.5-0.5B Q4_K_M file,
rows of 896 are not whole 256-wide K-quant blocks, so llama.cpp falls back
to Q5_0/Q8_0 for those matrices and keeps Q4_K/Q6_K for ffn_down.
"""
import ctypes
import os
import sys

import gguf
import llama_cpp
import numpy as np

LAYERS, DIM, HEADS, KV_HEADS, FF, VOCAB = 24, 896, 14, 2, 4864, 151936


def main(out, vocab_from):
    src = gguf.GGUFReader(vocab_from)
    f = {k: v.contents() for k, v in src.fields.items() if k.startswith("tokenizer.")}
    tokens = list(f["tokenizer.ggml.tokens"])
    types = list(f["tokenizer.ggml.token_type"])
    pad = VOCAB - len(tokens)
    tokens += [f"<|unused_{i}|>" for i in range(pad)]
    types += [gguf.TokenType.UNUSED] * pad

    rng = np.random.default_rng(20261207)
    head_dim = DIM // HEADS
    kv = KV_HEADS * head_dim
    f16 = out + ".f16.gguf"
    w = gguf.GGUFWriter(f16, "qwen2")
    w.add_name("random qwen2 at the 0.5B shape")
    w.add_context_length(32768)
    w.add_embedding_length(DIM)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1000000.0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(list(f["tokenizer.ggml.merges"]))
    w.add_bos_token_id(f["tokenizer.ggml.bos_token_id"])
    w.add_eos_token_id(f["tokenizer.ggml.eos_token_id"])
    w.add_add_bos_token(False)
    w.add_chat_template(f["tokenizer.chat_template"])

    def mat(name, rows, cols, gain):
        a = rng.standard_normal((rows, cols), dtype=np.float32) * (gain / np.sqrt(cols))
        w.add_tensor(name, a.astype(np.float16))

    def vec(name, n, mean, sd):
        w.add_tensor(name, (mean + sd * rng.standard_normal(n, dtype=np.float32)).astype(np.float32))

    w.add_tensor("token_embd.weight", (rng.standard_normal((VOCAB, DIM), dtype=np.float32) * 0.5).astype(np.float16))
    vec("output_norm.weight", DIM, 1.0, 0.1)
    for i in range(LAYERS):
        p = f"blk.{i}."
        vec(p + "attn_norm.weight", DIM, 1.0, 0.1)
        mat(p + "attn_q.weight", DIM, DIM, 2.4)
        mat(p + "attn_k.weight", kv, DIM, 2.4)
        mat(p + "attn_v.weight", kv, DIM, 0.64)
        vec(p + "attn_q.bias", DIM, 0.0, 0.5)
        vec(p + "attn_k.bias", kv, 0.0, 0.5)
        vec(p + "attn_v.bias", kv, 0.0, 0.5)
        mat(p + "attn_output.weight", DIM, DIM, 0.64)
        vec(p + "ffn_norm.weight", DIM, 1.0, 0.1)
        mat(p + "ffn_gate.weight", FF, DIM, 0.64)
        mat(p + "ffn_up.weight", FF, DIM, 0.64)
        mat(p + "ffn_down.weight", DIM, FF, 0.64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = os.cpu_count() or 1
    tmp = out + ".tmp"
    rc = llama_cpp.llama_model_quantize(f16.encode(), tmp.encode(), ctypes.byref(params))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize: {rc}")
    os.replace(tmp, out)
    os.remove(f16)
    kinds = sorted({t.tensor_type.name for t in gguf.GGUFReader(out).tensors})
    print(f"{out}: {os.path.getsize(out) / 1e6:.0f} MB, tensor types {','.join(kinds)}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
