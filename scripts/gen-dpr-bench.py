#!/usr/bin/env python3
"""Write a synthetic DPR retrieval-results file for the ingest benchmark.

usage: gen-dpr-bench.py OUT.jsonl [N_QUESTIONS] [N_CTXS] [WORDS]
Deterministic (seeded). Half of the questions carry `hasanswer`, the other
half leave it to the DPR matcher, so both paths are measured.
"""
import json
import random
import sys

out = sys.argv[1]
nq = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
nc = int(sys.argv[3]) if len(sys.argv) > 3 else 20
words = int(sys.argv[4]) if len(sys.argv) > 4 else 100

rng = random.Random(20261129)
vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10))) for _ in range(20_000)]
pool = [" ".join(rng.choices(vocab, k=words)) for _ in range(5_000)]
titles = [" ".join(rng.choices(vocab, k=2)).title() for _ in range(5_000)]

with open(out, "w", encoding="utf-8") as f:
    for q in range(nq):
        answer = vocab[q % len(vocab)]
        ctxs = []
        for c in range(nc):
            i = (q * 7 + c * 13) % len(pool)
            ctx = {"id": str(q * nc + c), "title": titles[i], "text": pool[i], "score": round(100.0 - c * 0.5, 3)}
            if q % 2 == 0:
                ctx["hasanswer"] = answer in pool[i].split()
            ctxs.append(ctx)
        rec = {"question": f"question {q} about {answer}?", "answers": [answer, answer.upper()], "ctxs": ctxs}
        f.write(json.dumps(rec) + "\n")
