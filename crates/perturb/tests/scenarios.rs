//! Every scenario on hand-built inputs: documents, slots, labels, foils.

use ragprobe_artifact::{
    read, CaseRow, Cases, ContextRow, Contexts, QuestionRow, Questions, Recipe, Sink, Store,
};
use ragprobe_perturb::{perturb, PerturbOptions, ScenarioRef};
use ragprobe_studies::{
    imperfect::scenarios as imperfect, rgb::scenarios as rgb, stress::scenarios as stress,
};
use serde_json::json;

fn q(qid: &str, question: &str, answers: &[&str]) -> QuestionRow {
    QuestionRow {
        qid: qid.into(),
        dataset: "hand".into(),
        lang: "en".into(),
        question: question.into(),
        answers: answers.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn c(qid: &str, rank: i32, doc_id: &str, text: &str, has: bool) -> ContextRow {
    ContextRow {
        qid: qid.into(),
        rank,
        doc_id: doc_id.into(),
        title: Some(format!("T-{doc_id}")),
        text: text.into(),
        has_answer: Some(has),
        ..Default::default()
    }
}

const PARIS: &str = "France is a country in Europe. Its capital is Paris, on the Seine. The country has many regions.";

fn setup(store: &Store) -> (String, String) {
    let r = Recipe::new("hand", 1, json!({}));
    let questions = vec![
        q("a", "What is the capital of France?", &["Paris"]),
        q("b", "What is the capital of Peru?", &["Lima"]),
        q("c", "What is the capital of Italy?", &["Rome"]),
        q("d", "What is the capital of Spain?", &["Madrid"]),
    ];
    let mut qs = Sink::<Questions>::new(store, &r).unwrap();
    for x in &questions {
        qs.push(x.clone()).unwrap();
    }
    let contexts = vec![
        c("a", 1, "a1", "Europe has many countries.", false),
        c("a", 2, "a2", PARIS, true),
        c("a", 3, "a3", "The Seine flows to the sea.", false),
        c("b", 1, "b1", "Peru is in South America.", false),
        c("b", 2, "b2", "The Andes cross Peru.", false),
        c("b", 3, "b3", "Lima is the capital of Peru.", true),
        c("c", 1, "c1", "Rome is the capital of Italy.", true),
        c("c", 2, "c2", "Italy is shaped like a boot.", false),
        c("d", 1, "d1", "Madrid is the capital of Spain.", true),
        c("d", 2, "d2", "Spain borders Portugal.", false),
    ];
    let mut cs = Sink::<Contexts>::new(store, &r).unwrap();
    for x in &contexts {
        cs.push(x.clone()).unwrap();
    }
    (
        qs.finish(json!(null)).unwrap().id,
        cs.finish(json!(null)).unwrap().id,
    )
}

fn run(
    scenarios: &[ScenarioRef],
    relabel: bool,
    seed: u64,
) -> (Vec<CaseRow>, ragprobe_perturb::PerturbReport) {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let (qs, cs) = setup(&store);
    let opts = PerturbOptions {
        scenarios: scenarios.to_vec(),
        k: 2,
        seed,
        relabel_unanswerable: relabel,
        ..Default::default()
    };
    let r = perturb(&store, &qs, Some(&cs), &opts, None, None).unwrap();
    (read::<Cases>(&store, &r.cases.id).unwrap(), r)
}

fn ids(c: &CaseRow) -> Vec<&str> {
    c.docs.iter().map(|d| d.doc_id.as_str()).collect()
}

#[test]
fn base_and_relabel() {
    let (cases, _) = run(
        &[&ragprobe_perturb::Base, &ragprobe_perturb::ClosedBook],
        false,
        1,
    );
    let a = cases
        .iter()
        .find(|x| x.qid == "a" && x.condition == "base")
        .unwrap();
    assert_eq!(ids(a), ["a1", "a2"]);
    assert_eq!(a.expected, "answer");
    assert!(cases
        .iter()
        .all(|x| x.condition != "base" || x.expected == "answer"));
    let cb = cases
        .iter()
        .find(|x| x.qid == "a" && x.condition == "closed-book")
        .unwrap();
    assert!(cb.docs.is_empty());
    let (cases, _) = run(&[&ragprobe_perturb::Base], true, 1);
    let expected: Vec<(&str, &str)> = cases
        .iter()
        .map(|x| (x.qid.as_str(), x.expected.as_str()))
        .collect();
    // b's answer is only at rank 3, outside the top 2.
    assert_eq!(
        expected,
        [
            ("a", "answer"),
            ("b", "unanswerable"),
            ("c", "answer"),
            ("d", "answer")
        ]
    );
}

#[test]
fn add_one_conditions_insert_exactly_one_document() {
    let (cases, _) = run(&[&imperfect::AddRandom, &imperfect::AddTopk], false, 7);
    for x in &cases {
        let slot = x.inserted_at.unwrap() as usize;
        assert!(slot <= 2);
        assert_eq!(x.docs.len(), 3);
        let inserted = &x.docs[slot];
        let rest: Vec<&str> = x
            .docs
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != slot)
            .map(|(_, d)| d.doc_id.as_str())
            .collect();
        assert_eq!(
            rest,
            [format!("{}1", x.qid), format!("{}2", x.qid)],
            "{}",
            x.case_id
        );
        match x.condition.as_str() {
            "add-topk" => assert_eq!(
                (inserted.doc_id.as_str(), inserted.source.as_str()),
                (format!("{}3", x.qid).as_str(), "topk")
            ),
            "add-random" => {
                assert_eq!(inserted.source, "random");
                assert!(
                    !inserted.doc_id.starts_with(&x.qid),
                    "comes from another question"
                );
                assert!(!inserted.text.contains(&x.answers[0]));
            }
            other => panic!("{other}"),
        }
    }
    // c and d have no rank-3 passage: add-topk skips them, counted.
    assert_eq!(
        cases.iter().filter(|x| x.condition == "add-topk").count(),
        2
    );
}

#[test]
fn add_conflict_replaces_the_answer_by_a_foil() {
    let (cases, report) = run(&[&imperfect::AddConflict], false, 3);
    // b has no answer-bearing passage in its top 2.
    assert_eq!(
        cases.iter().map(|x| x.qid.as_str()).collect::<Vec<_>>(),
        ["a", "c", "d"]
    );
    let s = &report.summary[0];
    assert_eq!(
        (
            s.cases,
            s.skipped.get("no answer-bearing passage in the top k")
        ),
        (3, Some(&1))
    );
    for x in &cases {
        assert_eq!(x.expected, "conflict");
        let foil = x.foil.as_deref().unwrap();
        assert!(!x.answers.contains(&foil.to_string()));
        let d = &x.docs[x.inserted_at.unwrap() as usize];
        assert_eq!(d.source, "conflict");
        assert!(
            d.text.contains(foil) && !d.text.contains(&x.answers[0]),
            "{}",
            d.text
        );
    }
    let a = &cases[0];
    let d = &a.docs[a.inserted_at.unwrap() as usize];
    assert_eq!(d.text, PARIS.replace("Paris", a.foil.as_deref().unwrap()));
    assert_eq!(d.doc_id, "a2#conflict");
}

#[test]
fn evidence_edit_moves_the_answer_sentence_and_edits_only_it() {
    let (cases, report) = run(&[&stress::EvidenceEdit], false, 3);
    let a: Vec<&CaseRow> = cases.iter().filter(|x| x.qid == "a").collect();
    assert_eq!(a.len(), 6, "3 positions x 2 arms");
    let foil = a[0].foil.clone().unwrap();
    for pos in ["beginning", "middle", "end"] {
        let clean = a
            .iter()
            .find(|x| x.condition == "evidence-clean" && x.answer_position.as_deref() == Some(pos))
            .unwrap();
        let edited = a
            .iter()
            .find(|x| x.condition == "evidence-edited" && x.answer_position.as_deref() == Some(pos))
            .unwrap();
        assert_eq!(
            edited.docs[0].text,
            clean.docs[0].text.replace("Paris", &foil)
        );
        assert_eq!(clean.docs[0].source, "clean");
        assert_eq!(edited.docs[0].source, "edited");
    }
    let texts: Vec<&str> = ["beginning", "middle", "end"]
        .iter()
        .map(|p| {
            a.iter()
                .find(|x| {
                    x.condition == "evidence-clean" && x.answer_position.as_deref() == Some(*p)
                })
                .unwrap()
                .docs[0]
                .text
                .as_str()
        })
        .collect();
    assert_eq!(texts[0], "Its capital is Paris, on the Seine. France is a country in Europe. The country has many regions.");
    assert_eq!(texts[1], "France is a country in Europe. Its capital is Paris, on the Seine. The country has many regions.");
    assert_eq!(texts[2], "France is a country in Europe. The country has many regions. Its capital is Paris, on the Seine.");
    // One-sentence passages cannot place the span in three positions.
    let summary = &report.summary[0];
    assert!(
        summary
            .skipped
            .keys()
            .any(|k| k.starts_with("position not realisable")),
        "{summary:?}"
    );
}

#[test]
fn same_seed_same_artifact_other_seed_other_slots() {
    let (_, r1) = run(&[&imperfect::AddRandom, &imperfect::AddConflict], false, 11);
    let (_, r2) = run(&[&imperfect::AddRandom, &imperfect::AddConflict], false, 11);
    assert_eq!(r1.cases.id, r2.cases.id);
    let slots = |seed| {
        run(&[&imperfect::AddRandom], false, seed)
            .0
            .iter()
            .map(|x| x.inserted_at.unwrap())
            .collect::<Vec<_>>()
    };
    let base = slots(11);
    assert!(
        (12..20).any(|s| slots(s) != base),
        "some other seed changes a slot"
    );
}

#[test]
fn rgb_noise_mixes_positives_and_negatives_like_rgb() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let r = Recipe::new("hand", 1, json!({}));
    let mut qs = Sink::<Questions>::new(&store, &r).unwrap();
    qs.push(q("r1", "Where was Super Bowl LV played?", &["Tampa"]))
        .unwrap();
    let mut cs = Sink::<Contexts>::new(&store, &r).unwrap();
    let mut rank = 0;
    for (rel, n) in [("relevant", 3), ("non_relevant", 6), ("counterfactual", 3)] {
        for i in 0..n {
            rank += 1;
            cs.push(ContextRow {
                qid: "r1".into(),
                rank,
                doc_id: format!("{rel}-{i}"),
                text: format!("{rel} passage {i}"),
                relevance: Some(rel.into()),
                ..Default::default()
            })
            .unwrap();
        }
    }
    let (qid, cid) = (
        qs.finish(json!(null)).unwrap().id,
        cs.finish(json!(null)).unwrap().id,
    );
    let opts = PerturbOptions {
        scenarios: vec![&rgb::RgbNoise, &rgb::RgbCounterfactual],
        study: rgb::RgbOptions {
            noise_rates: vec![0.0, 0.4, 0.8, 1.0],
            ..Default::default()
        }
        .study_options(),
        ..Default::default()
    };
    let rep = perturb(&store, &qid, Some(&cid), &opts, None, None).unwrap();
    let cases = read::<Cases>(&store, &rep.cases.id).unwrap();
    let count = |cond: &str, src: &str| {
        cases
            .iter()
            .find(|c| c.condition == cond)
            .unwrap()
            .docs
            .iter()
            .filter(|d| d.source == src)
            .count()
    };
    // n = 5: rate 0 -> ceil(0) = 0 negatives, 5 positives wanted but only 3 exist -> 3 + 2.
    assert_eq!(
        (
            count("rgb-noise-0", "positive"),
            count("rgb-noise-0", "negative")
        ),
        (3, 2)
    );
    // rate 0.4 -> ceil(2.0) = 2 negatives, 3 positives.
    assert_eq!(
        (
            count("rgb-noise-0.4", "positive"),
            count("rgb-noise-0.4", "negative")
        ),
        (3, 2)
    );
    // rate 0.8 -> 4 negatives, 1 positive.
    assert_eq!(
        (
            count("rgb-noise-0.8", "positive"),
            count("rgb-noise-0.8", "negative")
        ),
        (1, 4)
    );
    let all_neg = cases.iter().find(|c| c.condition == "rgb-noise-1").unwrap();
    assert_eq!(
        (all_neg.docs.len(), all_neg.expected.as_str()),
        (5, "unanswerable")
    );
    // Counterfactual at rate 0.4: 2 negatives, pos_num 3 -> all three positive_wrong.
    let cf = cases
        .iter()
        .find(|c| c.condition == "rgb-counterfactual-0.4")
        .unwrap();
    assert_eq!(
        (
            count("rgb-counterfactual-0.4", "counterfactual"),
            count("rgb-counterfactual-0.4", "negative"),
            cf.docs.len(),
            cf.expected.as_str()
        ),
        (3, 2, 5, "conflict")
    );
    // Rate 0: pos_num 5 but only 3 positives to sample, and nothing tops it up (RGB).
    let cf0 = cases
        .iter()
        .find(|c| c.condition == "rgb-counterfactual-0")
        .unwrap();
    assert_eq!((cf0.docs.len(), cf0.expected.as_str()), (3, "conflict"));
    // Rate 1: negatives only, so the expected behaviour is to reject.
    let cf1 = cases
        .iter()
        .find(|c| c.condition == "rgb-counterfactual-1")
        .unwrap();
    assert_eq!(
        (
            count("rgb-counterfactual-1", "negative"),
            cf1.expected.as_str()
        ),
        (5, "unanswerable")
    );
}

#[test]
fn bad_options_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let (qs, cs) = setup(&store);
    let e = perturb(
        &store,
        &qs,
        Some(&cs),
        &PerturbOptions {
            k: 0,
            ..Default::default()
        },
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("-k"), "{e}");
    let e = perturb(&store, &qs, None, &PerturbOptions::default(), None, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--contexts"), "{e}");
    let e = perturb(
        &store,
        &qs,
        Some(&cs),
        &PerturbOptions {
            scenarios: vec![&rgb::RgbNoise],
            study: rgb::RgbOptions {
                noise_rates: vec![1.5],
                ..Default::default()
            }
            .study_options(),
            ..Default::default()
        },
        None,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("1.5"), "{e}");
}

mod relabel_property {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// expected = unanswerable exactly when no top-k passage has the answer.
        #[test]
        fn relabel_agrees_with_has_answer(flags in proptest::collection::vec(proptest::collection::vec(any::<bool>(), 1..6), 1..6), k in 1usize..5) {
            let d = tempfile::tempdir().unwrap();
            let store = Store::open(d.path()).unwrap();
            let r = Recipe::new("hand", 1, json!({}));
            let mut qs = Sink::<Questions>::new(&store, &r).unwrap();
            let mut cs = Sink::<Contexts>::new(&store, &r).unwrap();
            for (i, fl) in flags.iter().enumerate() {
                let qid = format!("q{i}");
                qs.push(q(&qid, "?", &["x"])).unwrap();
                for (j, has) in fl.iter().enumerate() {
                    cs.push(c(&qid, j as i32 + 1, &format!("{qid}-{j}"), "t", *has)).unwrap();
                }
            }
            let (qid, cid) = (qs.finish(json!(null)).unwrap().id, cs.finish(json!(null)).unwrap().id);
            let opts = PerturbOptions { scenarios: vec![&ragprobe_perturb::Base], k, relabel_unanswerable: true, ..Default::default() };
            let rep = perturb(&store, &qid, Some(&cid), &opts, None, None).unwrap();
            for case in read::<Cases>(&store, &rep.cases.id).unwrap() {
                let i: usize = case.qid[1..].parse().unwrap();
                let answerable = flags[i].iter().take(k).any(|h| *h);
                prop_assert_eq!(case.expected == "unanswerable", !answerable);
                prop_assert_eq!(case.docs.len(), flags[i].len().min(k));
            }
        }
    }
}

/// Seed 000 §5.4.1: a kept conflict passage holds the foil and no gold
/// alias, both by the DPR matcher.
#[test]
fn a_rule_built_conflict_passage_must_hold_the_foil_and_no_gold_alias() {
    use ragprobe_perturb::conflict_passage_problem;
    let gold = vec!["20%".to_string()];
    // The NQ-open case: "20%" replaced by "10.5%"; "2008-2010" holds "20"
    // only as part of other tokens, so the DPR matcher finds no gold.
    let kept = "reduced the main corporate tax rate from 28% in 2008-2010 to a flat rate of 10.5% as of April 2015.";
    assert_eq!(conflict_passage_problem(kept, 1, &gold, "10.5%"), None);
    // The foil glued into a word is not found by the DPR matcher: refused.
    assert_eq!(
        conflict_passage_problem("a rate of 10.5percent today", 1, &gold, "10.5%"),
        Some("foil not found by the DPR matcher after replacement")
    );
    // The gold still there in another spelling (DPR tokens "20", "%").
    assert_eq!(
        conflict_passage_problem("10.5% now, 20 % before", 1, &gold, "10.5%"),
        Some("answer still present after replacement")
    );
    assert!(conflict_passage_problem("nothing replaced", 0, &gold, "10.5%").is_some());
}

/// Regression (reliability #14): `-s base,base` and `--noise-rate 0.5,0.5`
/// wrote duplicate case ids into one artifact.
#[test]
fn repeated_scenarios_are_built_once() {
    let (once, _) = run(&[&ragprobe_perturb::Base], false, 0);
    let (twice, _) = run(
        &[&ragprobe_perturb::Base, &ragprobe_perturb::Base],
        false,
        0,
    );
    assert_eq!(once.len(), twice.len());
    let ids: std::collections::BTreeSet<&str> = twice.iter().map(|c| c.case_id.as_str()).collect();
    assert_eq!(ids.len(), twice.len(), "unique case ids");
}
