#!/usr/bin/env python3
"""Synthetic retrieval benchmark data: N passages of ~W words (Zipf-like
vocabulary) and Q queries of 6-10 words drawn from random passages.
usage: gen-corpus-bench.py OUTDIR [N_PASSAGES] [N_QUERIES] [WORDS]"""
import json, os, random, sys
out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
q = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
w = int(sys.argv[4]) if len(sys.argv) > 4 else 100
rng = random.Random(11)
vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(50_000)]
weights = [1.0 / (i + 1) ** 0.9 for i in range(len(vocab))]
pool = [" ".join(rng.choices(vocab, weights=weights, k=w)) for _ in range(20_000)]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "corpus.jsonl"), "w") as f:
    for i in range(n):
        base = pool[i % len(pool)].split()
        rng.shuffle(base)
        f.write(json.dumps({"doc_id": f"d{i}", "title": f"Title {i}", "text": " ".join(base)}) + "\n")
with open(os.path.join(out, "queries.jsonl"), "w") as f:
    for i in range(q):
        words = pool[rng.randrange(len(pool))].split()
        f.write(json.dumps({"qid": f"q{i}", "question": " ".join(rng.sample(words, rng.randint(6, 10))), "answers": ["x"]}) + "\n")
