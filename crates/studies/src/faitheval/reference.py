# FaithEval's README evaluation snippet (SalesforceAIResearch/FaithEval,
# Quick Start), copied verbatim: `normalize_answer` and the valid phrases of
# the unanswerable and inconsistent tasks, default and strict. Used by the
# folder's tests to check the Rust port row by row: reads JSON lines
# {"task", "strict", "response"} on stdin, prints 1 or 0 per line.
import json
import re
import string
import sys


def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    def remove_articles(text):
        return re.sub(r'\b(a|an|the)\b', ' ', text)

    def white_space_fix(text):
        return ' '.join(text.split())

    def handle_punc(text):
        exclude = set(string.punctuation + "".join([u"‘", u"’", u"´", u"`"]))
        return ''.join(ch if ch not in exclude else ' ' for ch in text)

    def lower(text):
        return text.lower()

    def replace_underscore(text):
        return text.replace('_', ' ')

    return white_space_fix(remove_articles(handle_punc(lower(replace_underscore(s))))).strip()


def valid_phrases(task, strict_match):
    if task == "unanswerable":
        if not strict_match:
            valid_phrases = ['unknown', 'no answer', 'no information', 'not', 'unclear']
        else:
            valid_phrases = ['unknown']
    else:
        if not strict_match:
            valid_phrases = ['conflict', 'multiple answers', 'disagreement', 'inconsistent', 'contradictory', 'contradiction', 'inconsistency', 'two answers', '2 answers', 'conflicting']
        else:
            valid_phrases = ['conflict']
    return valid_phrases


for line in sys.stdin:
    q = json.loads(line)
    pred_answer = q["response"].strip()
    phrases = valid_phrases(q["task"], q["strict"])
    ok = any(phrase in normalize_answer(pred_answer) for phrase in phrases)
    print(json.dumps({"ok": ok, "normalized": normalize_answer(pred_answer)}))
