//! Entity-level precision / recall / F1 of the rule-based NER on the
//! hand-labelled fixture (fixtures/ner/sentences.jsonl), printed, with a
//! floor so that regressions fail.

use ragprobe_perturb::ner::{prf, EntityType, Ner};

#[test]
fn ner_precision_recall_f1_on_the_hand_labelled_fixture() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ner/sentences.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let ner = Ner::new(&[]);
    let mut per: std::collections::BTreeMap<&str, (usize, usize, usize)> = Default::default();
    let (mut tp, mut np, mut ng) = (0, 0, 0);
    let mut sentences = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        sentences += 1;
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let kind = |s: &str| match s {
            "DATE" => EntityType::Date,
            "NUMBER" => EntityType::Number,
            _ => EntityType::Name,
        };
        let gold: Vec<(String, EntityType)> = v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["text"].as_str().unwrap().to_string(),
                    kind(e["type"].as_str().unwrap()),
                )
            })
            .collect();
        let pred: Vec<(String, EntityType)> = ner
            .entities(v["text"].as_str().unwrap())
            .into_iter()
            .map(|e| (e.text, e.kind))
            .collect();
        let (a, b, c) = prf(&gold, &pred);
        tp += a;
        np += b;
        ng += c;
        for t in [EntityType::Date, EntityType::Number, EntityType::Name] {
            let g: Vec<_> = gold.iter().filter(|x| x.1 == t).cloned().collect();
            let p: Vec<_> = pred.iter().filter(|x| x.1 == t).cloned().collect();
            let (a, b, c) = prf(&g, &p);
            let e = per.entry(t.name()).or_default();
            *e = (e.0 + a, e.1 + b, e.2 + c);
        }
    }
    let f = |tp: usize, np: usize, ng: usize| {
        let p = tp as f64 / np.max(1) as f64;
        let r = tp as f64 / ng.max(1) as f64;
        (
            p,
            r,
            if p + r > 0.0 {
                2.0 * p * r / (p + r)
            } else {
                0.0
            },
        )
    };
    eprintln!("NER on {sentences} hand-labelled sentences ({ng} entities):");
    for (t, (a, b, c)) in &per {
        let (p, r, f1) = f(*a, *b, *c);
        eprintln!(
            "  {t:<7} P {p:.3}  R {r:.3}  F1 {f1:.3}  ({a} correct, {b} predicted, {c} gold)"
        );
    }
    let (p, r, f1) = f(tp, np, ng);
    eprintln!("  all     P {p:.3}  R {r:.3}  F1 {f1:.3}");
    assert!(sentences >= 60);
    assert!(f1 >= 0.75, "entity-level F1 {f1:.3} fell below 0.75");
}
