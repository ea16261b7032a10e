"""llama.cpp's token ids for a multilingual sample under a SentencePiece
GGUF vocabulary (`tokenizer.ggml.model = llama`), with and without the
space prefix.

Usage: spm_tokens.py SOURCE.gguf OUT_DIR

No SentencePiece model is at hand without a download, so the vocabulary is
made from SOURCE's byte-level BPE one (SmolLM2's): each token's bytes that
are whole UTF-8 text become a piece, spaces as `▁`, scored by rank with
every two sharing a score (so ties are decided as llama.cpp decides them);
plus `<unk>`, `<s>`, `</s>`, the 256 `<0xXX>` byte tokens (byte fallback
for every character the pieces do not cover), control tokens
`<|im_start|>`/`<|im_end|>` and a user-defined `<tool>`. Writes
OUT_DIR/spm-prefix.gguf and OUT_DIR/spm-noprefix.gguf (vocabulary-only, a
one-block llama shape) and prints {"texts": [...], "ids": {name: [[ids of
each text]]}} with llama.cpp's tokenization (llama-cpp-python,
parse_special=True, no BOS).
"""

import ctypes
import json
import sys

import gguf
import vocab_gguf
import llama_cpp
from llama_cpp import Llama

TEXTS = [
    "Hello, world! It's 2024: 1234567 apples, 3.14159 and 10,000.",
    "naïve café — Ünïcödé; WE'LL see, they'Re sure, I'd've gone.",
    "東京は日本の首都です。人口は約1400万人。",
    "Привет, мир! Как дела? ١٢٣ ٤٥٦ مرحبا بالعالم",
    "  indented line\n\n\tTab\tseparated   trailing   \r\nnext\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "emoji 🙂🚀 and math ∑x² ≤ ½ — the end…",
    "<s>Hello</s> world <unk> and <tool>call</tool> done",
    " leading space,  two spaces,   three",
]


def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def vocabulary(src):
    r = gguf.GGUFReader(src)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    dec = byte_decoder()
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    kinds = [2, 3, 3] + [6] * 256
    scores = [0.0] * len(pieces)
    seen = set(pieces)
    rank = 0
    for t, ty in zip(tokens, types):
        if ty != 1:
            continue
        try:
            text = bytes(dec[c] for c in t).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        piece = text.replace(" ", "\u2581")
        if not piece or piece in seen:
            continue
        seen.add(piece)
        pieces.append(piece)
        kinds.append(1)
        scores.append(-float(rank // 2))
        rank += 1
    for piece, kind in [("<|im_start|>", 3), ("<|im_end|>", 3), ("<tool>", 4)]:
        pieces.append(piece)
        kinds.append(kind)
        scores.append(0.0)
    return pieces, kinds, scores


def main(src, out):
    pieces, kinds, scores = vocabulary(src)
    result = {"texts": TEXTS, "ids": {}}
    for name, prefix in [("spm-prefix", True), ("spm-noprefix", False)]:
        path = f"{out}/{name}.gguf"
        def add_tokenizer(w):
            w.add_tokenizer_model("llama")
            w.add_token_list(pieces)
            w.add_token_types(kinds)
            w.add_token_scores(scores)
            w.add_bos_token_id(1)
            w.add_eos_token_id(2)
            w.add_unk_token_id(0)
            w.add_add_bos_token(False)
            w.add_add_space_prefix(prefix)

        vocab_gguf.write(path, add_tokenizer)
        llm = Llama(model_path=path, vocab_only=True, verbose=False)
        result["ids"][name] = [
            llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in TEXTS
        ]
        # llama.cpp's text of each sample's ids (llama_detokenize, special
        # tokens left out), for the decoder.
        vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
        decoded = []
        for ids in result["ids"][name]:
            arr = (llama_cpp.llama_token * len(ids))(*ids)
            buf = ctypes.create_string_buffer(4096)
            n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, 4096, True, False)
            assert n >= 0, n
            decoded.append(buf.raw[:n].decode("utf-8", errors="replace"))
        result.setdefault("decoded", {})[name] = decoded
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
