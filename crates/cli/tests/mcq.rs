//! Multiple choice through the stages: MedQA-style questions keep their
//! options in cases, the MCQ prompt lists them, and scoring accepts the
//! letter, the text or both, and counts a response naming two options as
//! neither reference nor foil.

use std::path::Path;
use std::process::Command;

mod common;
use common::fixtures;

/// `ragprobe --store STORE ARGS` in the fixtures; asserts success; (outputs, stderr).
fn rp(store: &Path, args: &[&str]) -> (Vec<(String, String)>, String) {
    common::run_ok(&fixtures().join("rc"), store, args)
}

#[test]
fn multiple_choice_cases_prompts_and_scoring() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    let (ing, _) = rp(&s, &["ingest", "--format", "mcq", "medqa-mini-en.jsonl"]);
    let q = ing
        .iter()
        .find(|(k, _)| k == "questions")
        .unwrap()
        .1
        .clone();
    let (cases, _) = rp(&s, &["perturb", "--questions", &q, "-s", "closed-book"]);
    let cases = cases[0].1.clone();
    // The MCQ prompt lists the options.
    let o = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(&s)
        .args([
            "prompts",
            "show",
            "stress-closed-book-mcq",
            "--cases",
            &cases,
            "--case",
            "0",
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("Options:\nA. Vitamin A\nB. Vitamin B12\nC. Vitamin C\nD. Vitamin D"),
        "{shown}"
    );
    // Scoring predictions made elsewhere: letter, text, both, two options, wrong.
    let store = ragprobe_artifact::Store::open(&s).unwrap();
    let rows = ragprobe_artifact::read::<ragprobe_artifact::Cases>(&store, &cases).unwrap();
    assert!(rows
        .iter()
        .all(|c| c.options.as_ref().is_some_and(|o| o.len() == 4)));
    let preds = d.path().join("preds.jsonl");
    let answers = ["C", "Pancreas", "A. Red blood cells", "Tibia or Femur"];
    let text: String = rows
        .iter()
        .zip(answers)
        .map(|(c, a)| {
            format!(
                "{}\n",
                serde_json::json!({"id": c.case_id, "prediction": a})
            )
        })
        .collect();
    std::fs::write(&preds, text).unwrap();
    let (out, _) = rp(
        &s,
        &[
            "score",
            "--predictions",
            preds.to_str().unwrap(),
            "--against",
            &cases,
            "--bootstrap",
            "100",
        ],
    );
    let scores = out.iter().find(|(k, _)| k == "scores").unwrap().1.clone();
    let mut sc = ragprobe_artifact::read::<ragprobe_artifact::Scores>(&store, &scores).unwrap();
    sc.sort_by_key(|r| rows.iter().position(|c| c.case_id == r.case_id));
    let got: Vec<(Option<bool>, Option<&str>)> = sc
        .iter()
        .map(|r| (r.flags.accuracy, r.mcq_choice.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(true), Some("C")),
            (Some(true), Some("B")),
            (Some(true), Some("A")),
            (Some(false), Some("several"))
        ]
    );
}

#[test]
fn evidence_edit_on_multiple_choice_uses_a_distractor_option() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    let (ing, _) = rp(&s, &["ingest", "--format", "mcq", "medqa-mini-en.jsonl"]);
    let get = |k: &str| ing.iter().find(|(x, _)| x == k).unwrap().1.clone();
    let (cases, _) = rp(
        &s,
        &[
            "perturb",
            "--questions",
            &get("questions"),
            "--contexts",
            &get("contexts"),
            "-s",
            "evidence-edit",
            "-k",
            "1",
            "--no-foil-similarity",
        ],
    );
    let store = ragprobe_artifact::Store::open(&s).unwrap();
    let rows = ragprobe_artifact::read::<ragprobe_artifact::Cases>(&store, &cases[0].1).unwrap();
    assert!(
        rows.len() >= 6,
        "both evidence questions, three positions, two arms"
    );
    for c in &rows {
        let foil = c.foil.as_deref().unwrap();
        let opts = c.options.as_ref().unwrap();
        assert!(
            opts.iter().any(|(_, t)| t == foil) && foil != c.answers[0],
            "the foil is a distractor option: {foil}"
        );
        if c.condition == "evidence-edited" {
            assert!(c.docs[0].text.contains(foil) && !c.docs[0].text.contains(&c.answers[0]));
        }
    }
}

#[test]
fn hotpotqa_edit_changes_the_supporting_sentence_and_moves_it_within_its_paragraph() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    let (ing, _) = rp(
        &s,
        &["ingest", "--format", "hotpotqa", "hotpotqa-mini.json"],
    );
    let get = |k: &str| ing.iter().find(|(x, _)| x == k).unwrap().1.clone();
    let (cases, _) = rp(
        &s,
        &[
            "perturb",
            "--questions",
            &get("questions"),
            "--contexts",
            &get("contexts"),
            "-s",
            "evidence-edit",
            "-k",
            "3",
            "--no-foil-similarity",
        ],
    );
    let store = ragprobe_artifact::Store::open(&s).unwrap();
    let rows = ragprobe_artifact::read::<ragprobe_artifact::Cases>(&store, &cases[0].1).unwrap();
    let hp1: Vec<_> = rows.iter().filter(|c| c.qid == "hp1").collect();
    // "Paris" closes its sentence, so only the end position is realised
    // (the beginning and middle arrangements put the span at 45% and 70%
    // of the text, and are rejected by the position check).
    assert_eq!(
        hp1.len(),
        2,
        "{:?}",
        hp1.iter()
            .map(|c| (&c.condition, &c.answer_position))
            .collect::<Vec<_>>()
    );
    let clean = hp1
        .iter()
        .find(|c| c.condition == "evidence-clean")
        .unwrap();
    assert_eq!(clean.answer_position.as_deref(), Some("end"));
    // The supporting sentence moved to the end; the others kept their order.
    assert_eq!(clean.docs[0].text, "It opened in 1793 in a former royal palace. Its glass pyramid entrance was added in 1989. The Louvre is the world's most-visited art museum, located in Paris.");
    let edited = hp1
        .iter()
        .find(|c| c.condition == "evidence-edited")
        .unwrap();
    let foil = edited.foil.as_deref().unwrap();
    assert_eq!(
        edited.docs[0].text,
        clean.docs[0].text.replace("Paris", foil)
    );
}
