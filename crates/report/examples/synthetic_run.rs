//! A synthetic scored run for `scripts/bench-report.sh`: cases with
//! passages, one (empty) responses artifact linking scores to the cases, a
//! scores artifact and a small metrics artifact, written into a store.
//! Prints `scores\t<id>` and `metrics\t<id>`.
//!
//!   synthetic_run STORE QUESTIONS CONDITIONS MODELS PROMPTS PASSAGES [nomiracl]
//!
//! With `nomiracl`, each question has one case (relevant or non-relevant)
//! answered under every prompt, as in a NoMIRACL run; otherwise each
//! question has CONDITIONS cases (base, add-random, ...) that share the
//! retrieved passages and add one.

use ragprobe_artifact::{
    write_all, CaseDoc, CaseRow, Cases, DocSource, Expected, MetricRow, Metrics, Recipe,
    ResponseRow, Responses, ScoreRow, Scores, Store,
};
use serde_json::json;

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` words from a 20k-word vocabulary with a Zipf-like skew, as text is.
fn words(seed: u64, n: usize) -> String {
    (0..n)
        .map(|i| {
            let r = mix(seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
            let rank = ((r % 20_000) as f64).powf(1.6) as u64 / 300;
            format!("w{}", rank % 20_000)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 6 {
        eprintln!(
            "usage: synthetic_run STORE QUESTIONS CONDITIONS MODELS PROMPTS PASSAGES [nomiracl]"
        );
        std::process::exit(2);
    }
    let n = |i: usize| a[i].parse::<usize>().expect("a number");
    let (questions, conditions, models, prompts, passages) = (n(1), n(2), n(3), n(4), n(5));
    let nomiracl = a.get(6).map(String::as_str) == Some("nomiracl");
    let store = Store::open(&a[0]).expect("store");
    let names = [
        "base",
        "add-random",
        "add-topk",
        "add-genadv",
        "add-conflict",
        "closed-book",
    ];
    let mut cases = Vec::new();
    for q in 0..questions {
        let retrieved: Vec<CaseDoc> = (0..passages)
            .map(|p| CaseDoc {
                doc_id: format!("d{q}-{p}"),
                title: Some(words(q as u64 * 7 + p as u64, 3)),
                text: words(q as u64 * 1000 + p as u64, 100),
                source: DocSource::Retrieved,
                has_answer: Some(p == 0),
            })
            .collect();
        let conds: Vec<&str> = if nomiracl {
            vec![if q % 2 == 0 {
                "relevant"
            } else {
                "non_relevant"
            }]
        } else {
            names.iter().copied().cycle().take(conditions).collect()
        };
        for c in conds {
            let mut docs = retrieved.clone();
            let mut inserted = None;
            if c.starts_with("add-") {
                inserted = Some(docs.len() as i32);
                docs.push(CaseDoc {
                    doc_id: format!("x{q}-{c}"),
                    title: None,
                    text: words(q as u64 * 31 + c.len() as u64, 100),
                    source: DocSource::Random,
                    has_answer: Some(false),
                });
            }
            if c == "closed-book" {
                docs.clear();
            }
            cases.push(CaseRow {
                case_id: format!("{q:06}-{c}"),
                qid: format!("q{q:06}"),
                dataset: if nomiracl {
                    "nomiracl-en".into()
                } else {
                    "nq".into()
                },
                lang: "en".into(),
                condition: c.into(),
                question: words(q as u64 + 99, 9) + "?",
                docs,
                answers: vec![words(q as u64 + 5, 2)],
                expected: match c {
                    "relevant" => Expected::Relevant,
                    "non_relevant" => Expected::NonRelevant,
                    "add-conflict" => Expected::Conflict,
                    _ => Expected::Answer,
                },
                inserted_at: inserted,
                foil: (c == "add-conflict").then(|| words(q as u64 + 77, 2)),
                derivation: "synthetic".into(),
                ..Default::default()
            });
        }
    }
    let cases_id = write_all::<Cases>(
        &store,
        &Recipe::new("synthetic", 1, json!({"n": questions})),
        cases.clone(),
        json!(null),
    )
    .expect("cases")
    .id;
    let mut rr = Recipe::new("synthetic-generate", 1, json!({}));
    rr.inputs = vec![cases_id];
    let responses_id = write_all::<Responses>(&store, &rr, Vec::<ResponseRow>::new(), json!(null))
        .expect("responses")
        .id;
    let mut scores = Vec::new();
    for c in &cases {
        for m in 0..models {
            for p in 0..prompts {
                let r = mix((scores.len() as u64) << 3);
                let mut s = ScoreRow {
                    case_id: c.case_id.clone(),
                    qid: c.qid.clone(),
                    dataset: c.dataset.clone(),
                    lang: "en".into(),
                    condition: c.condition.clone(),
                    prompt: format!("prompt-{p}"),
                    model: format!("model-{m}"),
                    request_id: format!("{:016x}", r),
                    expected: c.expected,
                    flags: ragprobe_artifact::MatchFlags {
                        accuracy: Some(!r.is_multiple_of(3)),
                        em: Some(r.is_multiple_of(4)),
                        ..Default::default()
                    },
                    foil: c.foil.clone(),
                    response: Some(words(r, 12 + (r % 20) as usize)),
                    ..Default::default()
                };
                if nomiracl {
                    s.study.nomiracl_label =
                        Some(["yes", "idk", "invalid"][(r % 3) as usize].into());
                    s.flags.accuracy = None;
                }
                scores.push(s);
            }
        }
    }
    let mut sr = Recipe::new("score", 1, json!({}));
    sr.inputs = vec![responses_id];
    let scores_id = write_all::<Scores>(&store, &sr, scores, json!(null))
        .expect("scores")
        .id;
    let metric = MetricRow {
        study: "qa".into(),
        dataset: "nq".into(),
        model: "model-0".into(),
        prompt: "prompt-0".into(),
        condition: "base".into(),
        metric: "acc".into(),
        value: Some(66.7),
        n: questions as i64,
        ..Default::default()
    };
    let metrics_id = write_all::<Metrics>(
        &store,
        &Recipe::new("synthetic-score", 1, json!({})),
        vec![metric],
        json!(null),
    )
    .expect("metrics")
    .id;
    println!("scores\t{scores_id}\nmetrics\t{metrics_id}");
}
