"""llama.cpp's side of scripts/bench-embedded.sh (llama-cpp-python's low-level API).

usage: bench-embedded-llama.py MODEL.gguf TOKENS.jsonl THREADS GEN BATCH

Feeds exactly the token ids ragprobe rendered (TOKENS.jsonl: one JSON array a
line) and measures what ragprobe's side measures, greedily, ignoring end of
sequence so both engines generate the same number of tokens:
  * prompt tokens/s, one prompt at a time (n_batch 512 chunks);
  * generated tokens/s, one sequence at a time (after the first token);
  * aggregate generated tokens/s with BATCH sequences in one context (its
    parallel-sequence batched API: prompts fed per sequence, then one
    llama_decode per step carrying every sequence's token): over the wall
    time from the first prompt chunk to the last token, and over the decode
    phase alone (once every prompt is in).
Prints one JSON object, with every token of the single-stream and batched
runs (so the script can check that batching changed no output and that both
engines run the same model) and the process's peak resident memory, with
the resident memory before the model was loaded (the interpreter's share).
"""
import ctypes
import json
import resource
import sys
import time

import llama_cpp as L
import numpy as np


def fn(*names):
    """The first of `names` this llama-cpp-python version binds."""
    for n in names:
        if hasattr(L, n):
            return getattr(L, n)
    raise SystemExit(f"llama-cpp-python lacks all of {names}")


load_model = fn("llama_model_load_from_file", "llama_load_model_from_file")
new_context = fn("llama_init_from_model", "llama_new_context_with_model")
free_model = fn("llama_model_free", "llama_free_model")

path, tokens_file, threads, gen, batch = sys.argv[1:6]
threads, gen, batch = int(threads), int(gen), int(batch)
prompts = [json.loads(l) for l in open(tokens_file) if l.strip()]
CHUNK = 512

def rss_now():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


rss_before_model = rss_now()
# llama.cpp's loading log (hundreds of lines) off; errors still raise below.
_quiet = L.llama_log_callback(lambda level, text, user: None)
L.llama_log_set(_quiet, ctypes.c_void_p(0))
L.llama_backend_init()
model = load_model(path.encode(), L.llama_model_default_params())
if not model:
    raise SystemExit(f"llama.cpp could not load {path}")
if hasattr(L, "llama_model_get_vocab"):
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
else:
    n_vocab = L.llama_n_vocab(model)


def context(n_seq, n_ctx):
    p = L.llama_context_default_params()
    fields = {f[0] for f in type(p)._fields_}
    p.n_ctx = n_ctx
    p.n_batch = CHUNK
    p.n_ubatch = CHUNK
    p.n_seq_max = n_seq
    p.n_threads = threads
    p.n_threads_batch = threads
    if "kv_unified" in fields:
        # Per-sequence KV buffers: llama.cpp's advice for sequences that do
        # not share a long prefix (its faster setting here).
        p.kv_unified = False
    ctx = new_context(model, p)
    if not ctx:
        raise SystemExit("llama.cpp could not create a context")
    return ctx


lbatch = L.llama_batch_init(CHUNK, 0, max(batch, 1))


def decode(ctx, items):
    """items: (token, pos, seq, wants logits); returns nothing, raises on failure."""
    lbatch.n_tokens = len(items)
    for i, (t, pos, s, lg) in enumerate(items):
        lbatch.token[i] = t
        lbatch.pos[i] = pos
        lbatch.n_seq_id[i] = 1
        lbatch.seq_id[i][0] = s
        lbatch.logits[i] = 1 if lg else 0
    rc = L.llama_decode(ctx, lbatch)
    if rc != 0:
        raise SystemExit(f"llama_decode returned {rc}")


def argmax(ctx, i):
    ptr = L.llama_get_logits_ith(ctx, i)
    return int(np.ctypeslib.as_array(ptr, shape=(n_vocab,)).argmax())


def prefill(ctx, prompt, seq):
    """Feeds `prompt` to sequence `seq`; returns its first generated token."""
    for start in range(0, len(prompt), CHUNK):
        chunk = prompt[start:start + CHUNK]
        last = start + len(chunk) == len(prompt)
        decode(ctx, [(t, start + j, seq, last and j == len(chunk) - 1) for j, t in enumerate(chunk)])
    return argmax(ctx, len(chunk) - 1)


def ctx_size(ps, n_seq):
    need = n_seq * (max(len(p) for p in ps) + gen + 32)
    return (need + 255) // 256 * 256


# Warm up.
ctx = context(1, ctx_size(prompts[:1], 1))
prefill(ctx, prompts[0], 0)
L.llama_free(ctx)

# Prompt processing, one prompt at a time.
ptoks = psecs = 0.0
for p in prompts:
    ctx = context(1, ctx_size([p], 1))
    t0 = time.perf_counter()
    prefill(ctx, p, 0)
    psecs += time.perf_counter() - t0
    ptoks += len(p)
    L.llama_free(ctx)

# Single-stream generation.
gtoks = gsecs = 0.0
single = []
for p in prompts[:batch]:
    ctx = context(1, ctx_size([p], 1))
    tok = prefill(ctx, p, 0)
    out = [tok]
    t0 = time.perf_counter()
    for j in range(gen - 1):
        decode(ctx, [(tok, len(p) + j, 0, True)])
        tok = argmax(ctx, 0)
        out.append(tok)
    gsecs += time.perf_counter() - t0
    single.append(out)
    gtoks += gen - 1
    L.llama_free(ctx)

# BATCH sequences at once.
ps = prompts[:batch]
ctx = context(batch, ctx_size(ps, batch))
t0 = time.perf_counter()
last = [prefill(ctx, p, s) for s, p in enumerate(ps)]
t1 = time.perf_counter()
outs = [[t] for t in last]
for j in range(gen - 1):
    decode(ctx, [(last[s], len(ps[s]) + j, s, True) for s in range(batch)])
    last = [argmax(ctx, s) for s in range(batch)]
    for s in range(batch):
        outs[s].append(last[s])
t2 = time.perf_counter()
bsecs, dsecs = t2 - t0, t2 - t1
L.llama_free(ctx)

L.llama_batch_free(lbatch)
free_model(model)
print(json.dumps({
    "llama_cpp_python": L.__version__,
    "prompts": len(prompts),
    "prompt_tokens": int(ptoks),
    "prompt_tps": ptoks / psecs,
    "gen_tps": gtoks / gsecs,
    "batch_tps": batch * gen / bsecs,
    "batch_decode_tps": batch * (gen - 1) / dsecs,
    "single_outputs": single,
    "batch_outputs": outs,
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "rss_before_model_bytes": rss_before_model,
}))
