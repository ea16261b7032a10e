//! The evidence-reliance study's formats: TriviaQA RC, HotpotQA, SearchQA and
//! MedQA-style multiple choice; their fixtures and their bad-input errors.

use ragprobe_artifact::{read, Contexts, Questions, Store};
use ragprobe_ingest::{ingest, Format, IngestOptions};
use std::path::PathBuf;

fn fixture(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/rc")
        .join(p)
}

fn run(
    format: Format,
    path: PathBuf,
    evidence: Option<PathBuf>,
) -> (
    tempfile::TempDir,
    Store,
    Result<ragprobe_ingest::IngestReport, ragprobe_ingest::IngestError>,
) {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let opts = IngestOptions {
        format: Some(format),
        paths: vec![path],
        evidence_dir: evidence,
        passage_words: 100,
        ..Default::default()
    };
    let r = ingest(&store, &opts);
    (d, store, r)
}

fn id(r: &ragprobe_ingest::IngestReport, kind: &str) -> String {
    r.outputs
        .iter()
        .find(|o| o.kind == kind)
        .unwrap()
        .id
        .clone()
}

#[test]
fn triviaqa_with_and_without_evidence() {
    let (_d, s, r) = run(Format::Triviaqa, fixture("triviaqa-mini.json"), None);
    let r = r.unwrap();
    let qs = read::<Questions>(&s, &id(&r, "questions")).unwrap();
    assert_eq!(qs.len(), 6);
    assert_eq!(qs[1].qid, "tc_2");
    assert_eq!(qs[1].answers, vec!["Danube", "River Danube", "Donau"]);
    assert!(
        qs[0].meta.as_deref().unwrap().contains("Domain")
            || qs[0].meta.as_deref().unwrap().contains("QuestionSource")
    );
    let (_d2, s2, r2) = run(
        Format::Triviaqa,
        fixture("triviaqa-mini.json"),
        Some(fixture("triviaqa-evidence")),
    );
    let r2 = r2.unwrap();
    let cs = read::<Contexts>(&s2, &id(&r2, "contexts")).unwrap();
    let danube: Vec<_> = cs.iter().filter(|c| c.qid == "tc_2").collect();
    assert_eq!(danube[0].doc_id, "Danube.txt#0");
    assert_eq!(danube[0].has_answer, Some(true));
}

#[test]
fn triviaqa_missing_evidence_names_the_field() {
    let d = tempfile::tempdir().unwrap();
    let e = run(
        Format::Triviaqa,
        fixture("triviaqa-mini.json"),
        Some(d.path().to_path_buf()),
    )
    .2
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("triviaqa-mini.json:")
            && e.contains("EntityPages[0].Filename")
            && e.contains("Eiffel_Tower.txt"),
        "{e}"
    );
}

#[test]
fn hotpotqa_keeps_supporting_sentences() {
    let (_d, s, r) = run(Format::Hotpotqa, fixture("hotpotqa-mini.json"), None);
    let r = r.unwrap();
    let cs = read::<Contexts>(&s, &id(&r, "contexts")).unwrap();
    let louvre = cs
        .iter()
        .find(|c| c.qid == "hp1" && c.doc_id == "Louvre")
        .unwrap();
    assert_eq!(louvre.relevance.as_deref(), Some("relevant"));
    let meta: serde_json::Value = serde_json::from_str(louvre.meta.as_deref().unwrap()).unwrap();
    assert_eq!(meta["supporting_sentences"], serde_json::json!([0]));
    assert_eq!(meta["sentences"].as_array().unwrap().len(), 3);
    let uffizi = cs
        .iter()
        .find(|c| c.qid == "hp1" && c.doc_id == "Uffizi")
        .unwrap();
    assert_eq!(uffizi.relevance.as_deref(), Some("non_relevant"));
}

#[test]
fn searchqa_snippets_become_contexts() {
    let (_d, s, r) = run(Format::Searchqa, fixture("searchqa-mini.jsonl"), None);
    let r = r.unwrap();
    let qs = read::<Questions>(&s, &id(&r, "questions")).unwrap();
    let cs = read::<Contexts>(&s, &id(&r, "contexts")).unwrap();
    assert_eq!((qs.len(), cs.len()), (3, 6));
    assert!(cs.iter().filter(|c| c.has_answer == Some(true)).count() >= 3);
}

#[test]
fn mcq_keeps_the_options_in_any_language() {
    for (file, n, lang) in [
        ("medqa-mini-en.jsonl", 4, "en"),
        ("medqa-mini-zh.jsonl", 3, "zh"),
    ] {
        let (_d, s, r) = run(Format::Mcq, fixture(file), None);
        let qs = read::<Questions>(&s, &id(&r.unwrap(), "questions")).unwrap();
        assert_eq!(qs.len(), n);
        assert!(qs.iter().all(|q| q.lang == lang));
        let o = qs[0].options.as_ref().unwrap();
        assert_eq!(
            o.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(),
            ["A", "B", "C", "D"]
        );
        assert_eq!(
            qs[0].answers[0], o[2].1,
            "the gold is the text of answer_idx"
        );
    }
}

fn bad(format: Format, name: &str, text: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join(name);
    std::fs::write(&p, text).unwrap();
    run(format, p, None).2.unwrap_err().to_string()
}

#[test]
fn bad_records_name_file_line_and_field() {
    let e = bad(
        Format::Mcq,
        "m.jsonl",
        "{\"question\": \"q\", \"options\": {\"A\": \"x\", \"B\": \"y\"}, \"answer_idx\": \"E\"}\n",
    );
    assert!(
        e.contains("m.jsonl:1:")
            && e.contains("answer_idx")
            && e.contains("`E` is not one of the options"),
        "{e}"
    );
    let e = bad(
        Format::Mcq,
        "m.jsonl",
        "{\"question\": \"q\", \"options\": [\"x\"], \"answer_idx\": \"A\"}\n",
    );
    assert!(e.contains("field `options` must be an object"), "{e}");
    let e = bad(
        Format::Hotpotqa,
        "h.json",
        "[{\"_id\": \"1\", \"question\": \"q\", \"answer\": \"a\", \"context\": [[\"T\"]]}]",
    );
    assert!(e.contains("h.json:1:") && e.contains("context[0]"), "{e}");
    let e = bad(
        Format::Searchqa,
        "s.jsonl",
        "{\"question\": \"q\", \"snippets\": []}\n",
    );
    assert!(e.contains("field `answer` is missing"), "{e}");
    let e = bad(
        Format::Triviaqa,
        "t.json",
        "{\"Data\": [\n{\"Question\": \"q\"}\n]}",
    );
    assert!(
        e.contains("t.json:2:") && e.contains("field `Answer` is missing"),
        "{e}"
    );
    let e = bad(Format::Triviaqa, "t.json", "{\"Version\": 1}");
    assert!(e.contains("no `Data`"), "{e}");
}

/// Regression (reliability #1): an evidence `Filename` that resolves
/// outside `--evidence-dir` (`..`, an absolute path, a symlink) used to be
/// read into passages; it is refused, naming the record.
#[test]
fn triviaqa_evidence_outside_the_directory_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let ev = d.path().join("evidence");
    std::fs::create_dir_all(ev.join("wikipedia")).unwrap();
    std::fs::write(d.path().join("secret.txt"), "the secret outside").unwrap();
    std::os::unix::fs::symlink(d.path().join("secret.txt"), ev.join("wikipedia/link.txt")).unwrap();
    for name in ["../../secret.txt", "/etc/hostname", "link.txt"] {
        let rec = serde_json::json!({"Data": [{"Question": "q?", "QuestionId": "t1", "Answer": {"Value": "a", "Aliases": []}, "EntityPages": [{"Title": "T", "Filename": name}], "SearchResults": []}]});
        let f = d.path().join("t.json");
        std::fs::write(&f, rec.to_string()).unwrap();
        let e = run(Format::Triviaqa, f, Some(ev.clone()))
            .2
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.json:")
                && e.contains("EntityPages[0].Filename")
                && (e.contains("outside the evidence directory") || e.contains("is not under")),
            "{name}: {e}"
        );
    }
}
