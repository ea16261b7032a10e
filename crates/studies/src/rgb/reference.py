# RGB's `processdata` (chen700564/RGB, evalue.py at commit 65ec39e,
# lines 12-69), copied verbatim below, and the part of its main block that
# calls it (l.249-256: `random.seed(2333)` before each instance). Used by
# the folder's tests to check the Rust scenarios case by case: reads JSON
# lines {"instance", "noise_rate", "passage_num", "filename",
# "correct_rate", "seed"} on stdin and prints, per line, the passages
# processdata returns as a JSON list, or {"error": "..."} where it raises
# (RGB then drops the instance: l.271-273).
import contextlib
import io
import json
import math
import random
import sys


def processdata(instance, noise_rate, passage_num, filename, correct_rate = 0):
    query = instance['query']
    ans = instance['answer']

    neg_num = math.ceil(passage_num * noise_rate)
    pos_num = passage_num - neg_num

    if '_int' in filename:
        for i in instance['positive']:
            random.shuffle(i)
        print(len(instance['positive']))
        docs = [i[0] for i in instance['positive']]
        if len(docs) < pos_num:
            maxnum = max([len(i) for i in instance['positive']])
            for i in range(1,maxnum):
                for j in instance['positive']:
                    if len(j) > i:
                        docs.append(j[i])
                        if len(docs) == pos_num:
                            break
                if len(docs) == pos_num:
                    break
        neg_num = passage_num - len(docs)
        if neg_num > 0:
            negative = instance['negative'][:neg_num]
            docs += negative
    elif '_fact' in filename:
        correct_num = math.ceil(passage_num * correct_rate)
        pos_num = passage_num - neg_num - correct_num
        indexs = list(range(len(instance['positive'])))
        selected = random.sample(indexs,min(len(indexs),pos_num))
        docs = [instance['positive_wrong'][i] for i in selected]
        remain = [i for i in indexs if i not in selected]
        if correct_num > 0 and len(remain) > 0:
            docs += [instance['positive'][i] for i in random.sample(remain,min(len(remain),correct_num))]
        if neg_num > 0:
            docs += instance['negative'][:neg_num]
    else:
        if noise_rate == 1:
            neg_num = passage_num
            pos_num = 0
        else:
            if neg_num > len(instance['negative']):
                neg_num = len(instance['negative'])
                pos_num = passage_num - neg_num
            elif pos_num > len(instance['positive']):
                pos_num = len(instance['positive'])
                neg_num = passage_num - pos_num
        

        positive = instance['positive'][:pos_num]
        negative = instance['negative'][:neg_num]

        docs = positive + negative

    random.shuffle(docs)
    
    return query, ans, docs


for line in sys.stdin:
    job = json.loads(line)
    try:
        random.seed(job["seed"])
        # processdata prints the number of answer parts of an _int instance.
        with contextlib.redirect_stdout(io.StringIO()):
            query, ans, docs = processdata(job["instance"], job["noise_rate"], job["passage_num"], job["filename"], job["correct_rate"])
        print(json.dumps(docs, ensure_ascii=False))
    except Exception as e:
        print(json.dumps({"error": type(e).__name__}))
