#!/usr/bin/env python3
"""Fixtures for the evidence-reliance study's formats (written for this
project, not copied from any dataset): TriviaQA-RC, HotpotQA (distractor),
SearchQA and MedQA-style multiple choice in English and Chinese.
Deterministic: running it twice gives byte-identical files."""
import json, os

# FIXTURES_OUT writes elsewhere (the drift check compares a fresh copy).
root = os.path.join(os.environ.get("FIXTURES_OUT") or os.path.join(os.path.dirname(__file__), "..", "fixtures"), "rc")
os.makedirs(os.path.join(root, "triviaqa-evidence", "wikipedia"), exist_ok=True)

def dump(name, obj, indent=None):
    with open(os.path.join(root, name), "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")

def dump_lines(name, rows):
    with open(os.path.join(root, name), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")

# ---- TriviaQA RC: {"Data": [...]} with Wikipedia evidence files.
evidence = {
    "Eiffel_Tower.txt": "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by the engineering company of Gustave Eiffel. Construction finished in March 1889, in time for the World's Fair. The tower is 330 metres tall including its antennas. It was the tallest structure in the world for 41 years.",
    "Danube.txt": "The Danube is the second-longest river in Europe. It rises in the Black Forest of Germany. The river flows through Vienna, Bratislava, Budapest and Belgrade. It empties into the Black Sea through a large delta in Romania.",
    "Marie_Curie.txt": "Marie Curie was a physicist and chemist born in Warsaw. She conducted pioneering research on radioactivity. She was the first woman to win a Nobel Prize. She discovered the elements polonium and radium with Pierre Curie.",
}
for name, text in evidence.items():
    with open(os.path.join(root, "triviaqa-evidence", "wikipedia", name), "w", encoding="utf-8") as f:
        f.write(text + "\n")
tqa = [
    ("tc_1", "In which year was the Eiffel Tower completed?", "1889", ["1889", "eighteen eighty-nine"], "Eiffel_Tower.txt", "Eiffel Tower"),
    ("tc_2", "Which river flows through Vienna and Budapest?", "Danube", ["Danube", "River Danube", "Donau"], "Danube.txt", "Danube"),
    ("tc_3", "Which element did Marie Curie discover along with radium?", "Polonium", ["Polonium", "Po"], "Marie_Curie.txt", "Marie Curie"),
    ("tc_4", "In which city was Marie Curie born?", "Warsaw", ["Warsaw", "Warszawa"], "Marie_Curie.txt", "Marie Curie"),
    ("tc_5", "How tall is the Eiffel Tower including antennas?", "330 metres", ["330 metres", "330 m"], "Eiffel_Tower.txt", "Eiffel Tower"),
    ("tc_6", "Into which sea does the Danube flow?", "Black Sea", ["Black Sea"], "Danube.txt", "Danube"),
]
dump("triviaqa-mini.json", {"Data": [
    {"Question": q, "QuestionId": qid, "QuestionSource": "fixture",
     "Answer": {"Value": v, "Aliases": al, "NormalizedAliases": [a.lower() for a in al], "Type": "WikipediaEntity"},
     "EntityPages": [{"Title": title, "Filename": fn, "DocSource": "TagMe"}],
     "SearchResults": [{"Title": title, "Description": evidence[fn].split(". ")[0] + ".", "Rank": 0, "Url": "https://example.invalid/" + fn}]}
    for qid, q, v, al, fn, title in tqa], "Domain": "Wikipedia", "Version": 1.0}, indent=1)

# ---- HotpotQA distractor.
hp = [
    {"_id": "hp1", "question": "Which city hosts the museum that holds the Mona Lisa?", "answer": "Paris", "type": "bridge", "level": "easy",
     "supporting_facts": [["Mona Lisa", 1], ["Louvre", 0]],
     "context": [["Mona Lisa", ["The Mona Lisa is a portrait painted by Leonardo da Vinci.", "It hangs in the Louvre museum.", "It is one of the most visited paintings in the world."]],
                 ["Louvre", ["The Louvre is the world's most-visited art museum, located in Paris.", "It opened in 1793 in a former royal palace.", "Its glass pyramid entrance was added in 1989."]],
                 ["Uffizi", ["The Uffizi is an art museum in Florence.", "It holds works by Botticelli and Michelangelo."]]]},
    {"_id": "hp2", "question": "In what year did the architect of the Sagrada Familia die?", "answer": "1926", "type": "bridge", "level": "medium",
     "supporting_facts": [["Sagrada Familia", 0], ["Antoni Gaudi", 1]],
     "context": [["Sagrada Familia", ["The Sagrada Familia is a basilica in Barcelona designed by Antoni Gaudi.", "Construction began in 1882.", "It is expected to be completed in the coming years."]],
                 ["Antoni Gaudi", ["Antoni Gaudi was a Catalan architect.", "He died in Barcelona in 1926 after being struck by a tram.", "His works are listed as World Heritage Sites."]],
                 ["Park Guell", ["Park Guell is a public park in Barcelona.", "It opened to the public in 1926 as a municipal garden."]]]},
    {"_id": "hp3", "question": "Which ocean lies west of the country whose capital is Lisbon?", "answer": "Atlantic Ocean", "type": "bridge", "level": "easy",
     "supporting_facts": [["Lisbon", 0], ["Portugal", 1]],
     "context": [["Lisbon", ["Lisbon is the capital of Portugal.", "It lies on the estuary of the Tagus."]],
                 ["Portugal", ["Portugal is a country on the Iberian Peninsula.", "The Atlantic Ocean lies to its west and south.", "Its official language is Portuguese."]],
                 ["Madrid", ["Madrid is the capital of Spain.", "It lies on the Manzanares river."]]]},
]
dump("hotpotqa-mini.json", hp, indent=1)

# ---- SearchQA (JSON Lines with search snippets).
dump_lines("searchqa-mini.jsonl", [
    {"question": "This Polish-born scientist was the first woman to win a Nobel Prize", "answer": "Marie Curie",
     "search_results": [{"title": "Marie Curie - Biography", "snippet": "Marie Curie was the first woman to win a Nobel Prize and the only person to win in two sciences.", "url": "https://example.invalid/1"},
                        {"title": "Nobel Prize facts", "snippet": "The Nobel Prize has been awarded since 1901 in several fields.", "url": "https://example.invalid/2"}]},
    {"question": "This river, Europe's second longest, empties into the Black Sea", "answer": "Danube",
     "search_results": [{"title": "Danube river", "snippet": "The Danube flows through ten countries before emptying into the Black Sea.", "url": "https://example.invalid/3"},
                        {"title": "Volga", "snippet": "The Volga is the longest river in Europe and flows into the Caspian Sea.", "url": "https://example.invalid/4"}]},
    {"question": "Completed in 1889, this Paris landmark was built for a World's Fair", "answer": "the Eiffel Tower",
     "snippets": ["The Eiffel Tower was completed in 1889 as the entrance arch to the World's Fair.", "Paris hosted several World's Fairs in the nineteenth century."]},
])

# ---- MedQA-style multiple choice, English and Chinese.
dump_lines("medqa-mini-en.jsonl", [
    {"question": "Which vitamin deficiency causes scurvy?", "options": {"A": "Vitamin A", "B": "Vitamin B12", "C": "Vitamin C", "D": "Vitamin D"}, "answer_idx": "C", "answer": "Vitamin C", "meta_info": "step1",
     "evidence": "Scurvy was common among sailors on long voyages. It is caused by a lack of Vitamin C in the diet. Symptoms include weakness, bleeding gums and poor wound healing. Citrus fruit prevents the disease."},
    {"question": "Which organ produces insulin?", "options": {"A": "Liver", "B": "Pancreas", "C": "Kidney", "D": "Spleen"}, "answer_idx": "B", "answer": "Pancreas", "meta_info": "step1",
     "evidence": "Blood sugar is regulated by hormones. Insulin is produced by the Pancreas in clusters of cells called islets. Without insulin, cells cannot take up glucose. Diabetes results when this system fails."},
    {"question": "Which blood cells carry oxygen?", "options": {"A": "Red blood cells", "B": "White blood cells", "C": "Platelets", "D": "Plasma cells"}, "answer_idx": "A", "answer": "Red blood cells", "meta_info": "step1"},
    {"question": "Which bone is the longest in the human body?", "options": {"A": "Tibia", "B": "Humerus", "C": "Femur", "D": "Radius"}, "answer_idx": "C", "answer": "Femur", "meta_info": "step1"},
])
dump_lines("medqa-mini-zh.jsonl", [
    {"question": "缺乏哪种维生素会导致坏血病？", "options": {"A": "维生素A", "B": "维生素B12", "C": "维生素C", "D": "维生素D"}, "answer_idx": "C", "answer": "维生素C"},
    {"question": "胰岛素由哪个器官分泌？", "options": {"A": "肝脏", "B": "胰腺", "C": "肾脏", "D": "脾脏"}, "answer_idx": "B", "answer": "胰腺"},
    {"question": "人体中最长的骨头是哪一块？", "options": {"A": "胫骨", "B": "肱骨", "C": "股骨", "D": "桡骨"}, "answer_idx": "C", "answer": "股骨"},
])
print("wrote", root)
