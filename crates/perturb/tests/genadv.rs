//! GenADV and model-written conflict passages, driven by a scripted model so
//! that each branch is exercised: too few entities, answer leaked into the
//! sentence, too similar, answer leaked into the passage, accepted.

use ragprobe_artifact::{
    read, Cases, ContextRow, Contexts, QuestionRow, Questions, Recipe, Sink, Store,
};
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::llm::ChatMessage;
use ragprobe_perturb::{perturb, PerturbOptions};
use ragprobe_studies::imperfect::scenarios as imperfect;
use serde_json::json;

fn setup(store: &Store) -> (String, String) {
    let r = Recipe::new("hand", 1, json!({}));
    let mut qs = Sink::<Questions>::new(store, &r).unwrap();
    let mut cs = Sink::<Contexts>::new(store, &r).unwrap();
    let items = [
        ("few", "What is the capital of France?", "Paris"),
        ("leak", "When was the Eiffel Tower completed?", "1889"),
        ("ppass", "Who wrote Hamlet?", "William Shakespeare"),
        ("ok", "Which river flows through Vienna?", "Danube"),
    ];
    for (qid, q, a) in items {
        qs.push(QuestionRow {
            qid: qid.into(),
            dataset: "d".into(),
            lang: "en".into(),
            question: q.into(),
            answers: vec![a.into()],
            ..Default::default()
        })
        .unwrap();
        for rank in 1..=2 {
            cs.push(ContextRow {
                qid: qid.into(),
                rank,
                doc_id: format!("{qid}{rank}"),
                title: Some("T".into()),
                text: format!("{a} is mentioned here ({rank})."),
                has_answer: Some(true),
                ..Default::default()
            })
            .unwrap();
        }
    }
    (
        qs.finish(json!(null)).unwrap().id,
        cs.finish(json!(null)).unwrap().id,
    )
}

/// Canned replies keyed by what the prompt contains.
fn script() -> Box<dyn FnMut(&[ChatMessage]) -> String + Send> {
    Box::new(|m: &[ChatMessage]| {
        let p = &m.last().unwrap().content;
        let answer_sentence = [
            ("Answer: Paris", "It is Paris."),
            (
                "Answer: 1889",
                "The Eiffel Tower in Paris was completed in 1889.",
            ),
            (
                "Answer: William Shakespeare",
                "William Shakespeare wrote Hamlet in London.",
            ),
            (
                "Answer: Danube",
                "The Danube flows through Vienna in Austria.",
            ),
        ];
        if p.starts_with("Please write a single sentence") {
            return answer_sentence
                .iter()
                .find(|(k, _)| p.contains(k))
                .map(|x| x.1)
                .unwrap_or("")
                .to_string();
        }
        if p.starts_with("Rewrite the sentence") {
            if p.contains("Eiffel") {
                return "The Eiffel Tower in Paris was completed in 1889, they say.".into();
                // leaks the answer
            }
            if p.contains("Shakespeare") {
                return "Christopher Marlowe wrote Doctor Faustus in Canterbury.".into();
            }
            return "The Rhine flows through Basel in Switzerland.".into();
        }
        if p.starts_with("Given a claim, write") {
            if p.contains("Marlowe") {
                return "Doctor Faustus is a play. Some say William Shakespeare helped.".into();
                // leaks into the passage
            }
            return "The Rhine is a major European river. It flows through Basel, Cologne and Rotterdam before reaching the North Sea.".into();
        }
        if p.starts_with("Given a claim that contradicts") {
            return format!(
                "Passage: {}",
                p.lines()
                    .find(|l| l.starts_with("Claim:"))
                    .unwrap_or("")
                    .trim_start_matches("Claim:")
                    .trim()
            );
        }
        String::new()
    })
}

#[test]
fn every_genadv_branch() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let (q, c) = setup(&store);
    let mut writer = ModelSession::scripted("script", script());
    let opts = PerturbOptions {
        scenarios: vec![&imperfect::AddGenadv],
        k: 2,
        seed: 3,
        prompts: ragprobe_studies::prompt_catalog(),
        ..Default::default()
    };
    let r = perturb(&store, &q, Some(&c), &opts, None, Some(&mut writer)).unwrap();
    let cases = read::<Cases>(&store, &r.cases.id).unwrap();
    assert_eq!(
        cases.iter().map(|c| c.qid.as_str()).collect::<Vec<_>>(),
        ["ok"]
    );
    let ok = &cases[0];
    let inserted = &ok.docs[ok.inserted_at.unwrap() as usize];
    assert_eq!(
        (inserted.source.as_str(), ok.docs.len()),
        ("adversarial", 3)
    );
    assert!(inserted.text.starts_with("The Rhine"));
    let skipped = &r.summary[0].skipped;
    assert_eq!(
        skipped.get("dropped: fewer than two entities in the answer sentence"),
        Some(&1),
        "{skipped:?}"
    );
    assert_eq!(
        skipped.get("rejected: answer leaked into the adversarial sentence"),
        Some(&1),
        "{skipped:?}"
    );
    assert_eq!(
        skipped.get("rejected: answer leaked into the passage"),
        Some(&1),
        "{skipped:?}"
    );
    // The trail artifact records every step.
    let g = r.genadv.as_ref().unwrap();
    assert_eq!(g.rows, 4);
    let q = r.quality.unwrap();
    assert_eq!(q["status"]["accepted"], 1);
    assert_eq!(q["answer_leakage_in_kept_passages"], 0);
    // Same inputs and seed: cached, same ids.
    let again = perturb(
        &store,
        &r_q(&store),
        Some(&c),
        &opts,
        None,
        Some(&mut ModelSession::scripted("script", script())),
    )
    .unwrap();
    assert!(again.cached);
    assert_eq!(again.cases.id, r.cases.id);
}

fn r_q(store: &Store) -> String {
    store
        .ids()
        .unwrap()
        .into_iter()
        .find(|id| store.manifest(id).unwrap().kind == "questions")
        .unwrap()
}

#[test]
fn too_similar_sentences_are_rejected_with_the_embedder() {
    let dir = ragprobe_models::paths::minilm_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("SKIPPED: MiniLM model not found (run `bash scripts/fetch-models.sh`; `make test` does)");
        return;
    }
    let e = ragprobe_models::Embedder::load(&dir).unwrap();
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let (q, c) = setup(&store);
    // A rewrite that only swaps one entity stays too close to the original.
    let mut writer = ModelSession::scripted(
        "near-copy",
        Box::new(|m: &[ChatMessage]| {
            let p = &m.last().unwrap().content;
            if p.starts_with("Please write a single sentence") {
                "The Danube flows through Vienna in Austria.".into()
            } else if p.starts_with("Rewrite the sentence") {
                "The Danube flows through Vienna in Hungary.".into()
            } else {
                "A passage.".into()
            }
        }),
    );
    let opts = PerturbOptions {
        scenarios: vec![&imperfect::AddGenadv],
        k: 2,
        limit: Some(4),
        prompts: ragprobe_studies::prompt_catalog(),
        ..Default::default()
    };
    let r = perturb(&store, &q, Some(&c), &opts, Some(&e), Some(&mut writer)).unwrap();
    let reasons: Vec<&String> = r.summary[0].skipped.keys().collect();
    assert!(
        reasons.iter().any(|k| k.contains("too similar")),
        "{reasons:?}"
    );
}

#[test]
fn model_written_conflict_passages_support_the_foil() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let (q, c) = setup(&store);
    let mut writer = ModelSession::scripted("script", script());
    let opts = PerturbOptions {
        scenarios: vec![&imperfect::AddConflict],
        k: 2,
        conflict_writer_model: true,
        prompts: ragprobe_studies::prompt_catalog(),
        ..Default::default()
    };
    let r = perturb(&store, &q, Some(&c), &opts, None, Some(&mut writer)).unwrap();
    let cases = read::<Cases>(&store, &r.cases.id).unwrap();
    assert!(!cases.is_empty());
    for case in &cases {
        let foil = case.foil.as_deref().unwrap();
        let d = &case.docs[case.inserted_at.unwrap() as usize];
        assert_eq!(d.source, "conflict");
        assert!(
            d.text.contains(foil) && !d.text.contains(&case.answers[0]),
            "{} / {foil}",
            d.text
        );
    }
    assert!(r.genadv.is_some());
}

#[test]
fn genadv_without_a_writer_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let (q, c) = setup(&store);
    let e = perturb(
        &store,
        &q,
        Some(&c),
        &PerturbOptions {
            scenarios: vec![&imperfect::AddGenadv],
            ..Default::default()
        },
        None,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("writer model"), "{e}");
}
