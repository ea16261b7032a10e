"""llama.cpp's token ids for a multilingual sample under each byte-level
pre-tokenizer ragprobe reads.

Usage: llama_tokens.py SOURCE.gguf OUT_DIR

Writes OUT_DIR/<pre>.gguf (vocabulary-only: SOURCE's tokens, types and
merges and four multi-digit tokens, `tokenizer.ggml.pre` = <pre>, a
one-block llama shape) and prints a
JSON object {"texts": [...], "ids": {pre: [[ids of each text]]}} with
llama.cpp's tokenization (llama-cpp-python, parse_special=True, no BOS).
"""

import json
import sys

import gguf
import vocab_gguf
from llama_cpp import Llama

PRES = ["smollm", "qwen2", "llama-bpe", "gpt-2", "default"]

TEXTS = [
    "Hello, world! It's 2024: 1234567 apples, 3.14159 and 10,000.",
    "naïve café — Ünïcödé; WE'LL see, they'Re sure, I'd've gone.",
    "東京は日本の首都です。人口は約1400万人。",
    "Привет, мир! Как дела? ١٢٣ ٤٥٦ مرحبا بالعالم",
    "  indented line\n\n\tTab\tseparated   trailing   \r\nnext\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "emoji 🙂🚀 and math ∑x² ≤ ½ — the end…",
]


def field(reader, key):
    return reader.fields[key].contents()


def main(src, out):
    r = gguf.GGUFReader(src)
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = field(r, "tokenizer.ggml.merges")
    # Multi-digit tokens SmolLM2's vocabulary lacks (it splits digits), so
    # that Llama 3's runs of up to three digits differ from Qwen2's singles.
    extra = {"12": "1 2", "123": "12 3", "45": "4 5", "456": "45 6"}
    tokens = list(tokens) + list(extra)
    types = list(types) + [1] * len(extra)
    merges = list(merges) + list(extra.values())
    result = {"texts": TEXTS, "ids": {}}
    for pre in PRES:
        path = f"{out}/{pre}.gguf"
        def add_tokenizer(w):
            w.add_tokenizer_model("gpt2")
            w.add_tokenizer_pre(pre)
            w.add_token_list(tokens)
            w.add_token_types(types)
            w.add_token_merges(merges)
            w.add_bos_token_id(1)
            w.add_eos_token_id(2)
            w.add_add_bos_token(False)

        vocab_gguf.write(path, add_tokenizer)
        llm = Llama(model_path=path, vocab_only=True, verbose=False)
        result["ids"][pre] = [
            llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in TEXTS
        ]
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
