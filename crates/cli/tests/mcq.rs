//! Multiple choice through the stages: MedQA-style questions keep their
//! options in cases, the MCQ prompt lists them, and scoring accepts the
//! letter, the text or both, and counts a response naming two options as
//! neither reference nor foil.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rc")
}

fn rp(store: &Path, args: &[&str]) -> (Vec<(String, String)>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ragprobe")).arg("--store").arg(store).args(args).current_dir(fixtures()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "ragprobe {args:?}:\n{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    (out.lines().filter_map(|l| l.split_once('\t')).map(|(a, b)| (a.to_string(), b.to_string())).collect(), err)
}

#[test]
fn multiple_choice_cases_prompts_and_scoring() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("store");
    let (ing, _) = rp(&s, &["ingest", "--format", "mcq", "medqa-mini-en.jsonl"]);
    let q = ing.iter().find(|(k, _)| k == "questions").unwrap().1.clone();
    let (cases, _) = rp(&s, &["perturb", "--questions", &q, "-s", "closed-book"]);
    let cases = cases[0].1.clone();
    // The MCQ prompt lists the options.
    let o = Command::new(env!("CARGO_BIN_EXE_ragprobe")).arg("--store").arg(&s).args(["prompts", "show", "stress-closed-book-mcq", "--cases", &cases, "--case", "0"]).output().unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("Options:\nA. Vitamin A\nB. Vitamin B12\nC. Vitamin C\nD. Vitamin D"), "{shown}");
    // Scoring predictions made elsewhere: letter, text, both, two options, wrong.
    let store = ragprobe_artifact::Store::open(&s).unwrap();
    let rows = ragprobe_artifact::cases::read_cases(&store, &cases).unwrap();
    assert!(rows.iter().all(|c| c.options.as_ref().is_some_and(|o| o.len() == 4)));
    let preds = d.path().join("preds.jsonl");
    let answers = ["C", "Pancreas", "A. Red blood cells", "Tibia or Femur"];
    let text: String = rows.iter().zip(answers).map(|(c, a)| format!("{}\n", serde_json::json!({"id": c.case_id, "prediction": a}))).collect();
    std::fs::write(&preds, text).unwrap();
    let (out, _) = rp(&s, &["score", "--predictions", preds.to_str().unwrap(), "--against", &cases, "--bootstrap", "100"]);
    let scores = out.iter().find(|(k, _)| k == "scores").unwrap().1.clone();
    let mut sc = ragprobe_artifact::scores::read_scores(&store, &scores).unwrap();
    sc.sort_by_key(|r| rows.iter().position(|c| c.case_id == r.case_id));
    let got: Vec<(Option<bool>, Option<&str>)> = sc.iter().map(|r| (r.accuracy, r.mcq_choice.as_deref())).collect();
    assert_eq!(got, vec![(Some(true), Some("C")), (Some(true), Some("B")), (Some(true), Some("A")), (Some(false), Some("several"))]);
}
