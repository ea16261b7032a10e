//! FaithEval's tests: the judgement against the README's own function
//! (run with python3), worked examples, the reader on the fixtures, the
//! prompts.

use super::judge::{correct, normalize_answer};
use super::task::Task;
use super::*;
use std::io::Write;
use std::path::Path;

fn here() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/faitheval"))
}

/// Responses that exercise each step of the normalisation: case,
/// underscores, ASCII and curly punctuation, articles (and words that
/// contain them), Unicode letters and spaces, the phrase `not` inside
/// other words.
const RESPONSES: &[&str] = &[
    "unknown",
    "Unknown.",
    "The answer is UNKNOWN!",
    "`unknown`",
    "‘unclear’",
    "no_answer",
    "No-answer",
    "There is no information about it.",
    "I cannot tell.",
    "Nothing in the context says so.",
    "Gustave Eiffel",
    "The Eiffel Tower was designed by Gustave Eiffel",
    "an answer: a theatre",
    "Théâtre du Châtelet",
    "ΣΊΣΥΦΟΣ",
    "\u{1c}unknown\u{1d}",
    "un\u{a0}known",
    "unk\u{2019}nown",
    "  conflict  ",
    "Conflicting information: Warsaw or Krakow.",
    "There are 2 answers.",
    "two answers",
    "multiple_answers",
    "The documents contradict each other (contradiction).",
    "Warsaw",
    "in-consistent",
    "disagreement!",
    "",
    "a an the",
    "the theatre",
];

#[test]
fn the_judgement_is_the_readmes_on_every_response() {
    let mut input = String::new();
    let mut expected_here = Vec::new();
    for task in [Task::Unanswerable, Task::Inconsistent] {
        for strict in [false, true] {
            for r in RESPONSES {
                input.push_str(
                    &serde_json::json!({"task": task.name(), "strict": strict, "response": r})
                        .to_string(),
                );
                input.push('\n');
                expected_here.push((
                    task,
                    strict,
                    *r,
                    correct(task, r, strict).unwrap(),
                    normalize_answer(r.trim()),
                ));
            }
        }
    }
    let mut child = std::process::Command::new("python3")
        .arg(here().join("reference.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs FaithEval's reference function");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), expected_here.len());
    for (reference, (task, strict, r, ok, normalized)) in lines.iter().zip(expected_here) {
        assert_eq!(
            reference["normalized"], normalized,
            "normalize_answer({r:?})"
        );
        assert_eq!(
            reference["ok"],
            ok,
            "{} strict={strict}: {r:?}",
            task.name()
        );
    }
}

#[test]
fn worked_examples() {
    assert_eq!(
        normalize_answer("The answer is UNKNOWN!"),
        "answer is unknown"
    );
    assert_eq!(normalize_answer("no_answer"), "no answer");
    assert_eq!(normalize_answer("‘unclear’"), "unclear");
    assert_eq!(normalize_answer("an answer: a theatre"), "answer theatre");
    // `not` is a default phrase, so "cannot" and "nothing" count.
    assert_eq!(
        correct(Task::Unanswerable, "I cannot tell.", false),
        Some(true)
    );
    assert_eq!(
        correct(Task::Unanswerable, "I cannot tell.", true),
        Some(false)
    );
    assert_eq!(
        correct(Task::Unanswerable, "Gustave Eiffel", false),
        Some(false)
    );
    assert_eq!(
        correct(Task::Inconsistent, "There are 2 answers.", false),
        Some(true)
    );
    assert_eq!(
        correct(Task::Inconsistent, "There are 2 answers.", true),
        Some(false)
    );
    assert_eq!(
        correct(Task::Inconsistent, "Conflicting: Warsaw", true),
        Some(true)
    );
    assert_eq!(correct(Task::Counterfactual, "B", false), None);
}

fn parse(task: Task, line: &str) -> Result<ragprobe_ingest::Record, ragprobe_ingest::FieldError> {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    let options = ragprobe_ingest::ReadOptions::default();
    format::FaithEvalFormat(task).parse(ragprobe_ingest::Obj::new(v, "").unwrap(), &options)
}

#[test]
fn the_reader_takes_every_fixture_record_apart() {
    for task in Task::ALL {
        let text = std::fs::read_to_string(
            here().join(format!("fixtures/faitheval-{}.jsonl", task.name())),
        )
        .unwrap();
        for line in text.lines() {
            let r = parse(task, line).unwrap();
            assert_eq!(r.row.subset.as_deref(), Some(task.name()));
            assert_eq!(r.contexts.len(), 1);
            assert!(!r.row.answers.is_empty());
            assert_eq!(r.row.options.is_some(), task == Task::Counterfactual);
        }
    }
}

#[test]
fn counterfactual_options_are_lettered_and_the_gold_is_the_supported_option() {
    let r = parse(Task::Counterfactual, r#"{"id":"x","context":"c","question":"q?","answerKey":"A","choices":{"label":["1","2","3"],"text":["one","two","three"]}}"#).unwrap();
    let labels: Vec<&str> = r
        .row.options
        .as_ref()
        .unwrap()
        .iter()
        .map(|(l, _)| l.as_str())
        .collect();
    assert_eq!(labels, ["A", "B", "C"]);
    assert_eq!(r.row.answers, ["one"]);
    assert!(r.row.meta.unwrap().contains(r#""choices_label":["1","2","3"]"#));
    let r = parse(Task::Counterfactual, r#"{"id":"x","context":"c","question":"q?","answerKey":"3","choices":{"label":["1","2","3"],"text":["one","two","three"]}}"#).unwrap();
    assert_eq!(r.row.answers, ["three"]);
    let e = parse(Task::Counterfactual, r#"{"id":"x","context":"c","question":"q?","answerKey":"Z","choices":{"label":["A","B"],"text":["one","two"]}}"#).unwrap_err();
    assert_eq!(e.field, "answerKey");
    let e = parse(Task::Counterfactual, r#"{"id":"x","context":"c","question":"q?","answerKey":"A","choices":{"label":["A","B"],"text":["one",2.5,{}]}}"#).unwrap_err();
    assert_eq!(e.field, "choices.text[2]");
    let e = parse(Task::Unanswerable, r#"{"qid":"x","question":"q?"}"#).unwrap_err();
    assert_eq!(e.field, "context");
}

#[test]
fn the_prompts_parse_with_the_studys_role() {
    let catalog = crate::prompt_catalog();
    for task in Task::ALL {
        let t = ragprobe_models::prompts::Template::load(
            &format!("faitheval-{}", task.name()),
            None,
            &catalog,
        )
        .unwrap();
        assert_eq!(t.role, "faitheval");
        assert_eq!(t.messages.len(), 1);
    }
    let empty = ragprobe_models::prompts::Catalog::default();
    assert!(
        ragprobe_models::prompts::Template::load("faitheval-unanswerable", None, &empty).is_err()
    );
}
