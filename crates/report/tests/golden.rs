//! Golden files for the Markdown and LaTeX tables of a small hand-made
//! metrics artifact, determinism of the whole report, and (where Chromium
//! is installed) a headless render without console errors.

use ragprobe_artifact::{write_all, MetricRow, Metrics, Recipe, Store};
use serde_json::json;
use std::path::PathBuf;

/// A metric row: [study, dataset, model, prompt, condition, metric], value, interval.
fn m(key: [&str; 6], value: f64, ci: Option<(f64, f64)>) -> MetricRow {
    let [study, dataset, model, prompt, condition, metric] = key;
    MetricRow {
        study: study.into(),
        dataset: dataset.into(),
        model: model.into(),
        prompt: prompt.into(),
        condition: condition.into(),
        metric: metric.into(),
        value: Some(value),
        n: 40,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        details: None,
        breakdown: None,
        breakdown_group: None,
    }
}

fn rows() -> Vec<MetricRow> {
    vec![
        m(
            [
                "imperfect",
                "nq",
                "llama-3-8b",
                "imperfect-unans",
                "base",
                "acc",
            ],
            61.25,
            None,
        ),
        m(
            [
                "imperfect",
                "nq",
                "llama-3-8b",
                "imperfect-unans",
                "base",
                "acc_ans",
            ],
            70.0,
            None,
        ),
        m(
            [
                "imperfect",
                "nq",
                "llama-3-8b",
                "imperfect-unans",
                "base",
                "acc_unans",
            ],
            35.5,
            None,
        ),
        m(
            [
                "imperfect",
                "tqa",
                "llama-3-8b",
                "imperfect-unans",
                "base",
                "acc",
            ],
            72.0,
            None,
        ),
        m(
            [
                "imperfect",
                "nq",
                "mistral-7b",
                "imperfect-unans",
                "base",
                "acc",
            ],
            55.0,
            None,
        ),
        m(
            [
                "imperfect",
                "nq",
                "llama-3-8b",
                "imperfect-normal",
                "add-random",
                "rad",
            ],
            91.2,
            Some((85.0, 96.1)),
        ),
        m(
            [
                "imperfect",
                "nq",
                "llama-3-8b",
                "imperfect-normal",
                "add-genadv",
                "rad",
            ],
            70.4,
            Some((61.9, 78.0)),
        ),
        m(
            [
                "stress",
                "tqa",
                "qwen-7b",
                "stress-strict",
                "edited/end",
                "mr",
            ],
            42.0,
            Some((30.0, 55.0)),
        ),
        m(
            [
                "stress",
                "tqa",
                "qwen-7b",
                "stress-soft",
                "edited/end",
                "mr",
            ],
            28.0,
            Some((18.0, 39.0)),
        ),
        m(
            [
                "stress",
                "tqa",
                "qwen-7b",
                "stress-strict",
                "edited/middle",
                "mr",
            ],
            30.0,
            Some((20.0, 41.0)),
        ),
        m(
            [
                "stress",
                "tqa",
                "qwen-7b",
                "stress-soft",
                "edited/middle",
                "mr",
            ],
            20.0,
            Some((12.0, 30.0)),
        ),
    ]
}

/// A registered study's table spec (or the stage's own) by id.
fn spec(id: &str) -> &'static ragprobe_report::tables::TableSpec {
    ragprobe_report::tables::SPECS
        .iter()
        .chain(
            ragprobe_studies::reports()
                .into_iter()
                .flat_map(|s| s.tables()),
        )
        .find(|s| s.id == id)
        .unwrap()
}

fn golden(name: &str, got: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {} (run with UPDATE_GOLDEN=1 once)", path.display()));
    assert_eq!(got, want, "{name} differs from the golden file");
}

#[test]
fn markdown_and_latex_tables_match_the_golden_files() {
    let r = rows();
    let t4 = ragprobe_report::tables::build(spec("table4_unanswerable"), &r).unwrap();
    assert_eq!(t4.id, "table4_unanswerable");
    golden("table4_unanswerable.md", &t4.markdown());
    golden("table4_unanswerable.tex", &t4.latex());
    let rad = spec("figure3_rad");
    golden(
        "figure3_rad.md",
        &ragprobe_report::tables::build(rad, &r).unwrap().markdown(),
    );
    let mr = spec("stress_mr");
    let t = ragprobe_report::tables::build(mr, &r).unwrap();
    golden("stress_mr.md", &t.markdown());
    golden("stress_mr.tex", &t.latex());
}

#[test]
fn the_same_metrics_give_the_same_files() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("s")).unwrap();
    let id = write_all::<Metrics>(
        &store,
        &Recipe::new("hand", 1, json!({})),
        rows(),
        json!(null),
    )
    .unwrap()
    .id;
    let a = ragprobe_report::report(
        &store,
        std::slice::from_ref(&id),
        None,
        &d.path().join("a"),
        "t",
        &ragprobe_studies::reports(),
    )
    .unwrap();
    let b = ragprobe_report::report(
        &store,
        std::slice::from_ref(&id),
        None,
        &d.path().join("b"),
        "t",
        &ragprobe_studies::reports(),
    )
    .unwrap();
    assert_eq!(a.files.len(), b.files.len());
    for (x, y) in a.files.iter().zip(&b.files) {
        assert_eq!(
            std::fs::read(x).unwrap(),
            std::fs::read(y).unwrap(),
            "{}",
            x.display()
        );
    }
    assert!(a
        .files
        .iter()
        .any(|f| f.ends_with("charts/fig2_unanswerable.svg")));
    assert!(a
        .files
        .iter()
        .any(|f| f.ends_with("charts/stress_mr_by_position.svg")));
    // Every chart is also a PDF, byte-identical across runs (checked above).
    let pdf = std::fs::read(d.path().join("a/charts/fig2_unanswerable.pdf")).unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    let html = std::fs::read_to_string(&a.index).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://") || !html.contains("<script src"),
        "self-contained"
    );
    assert!(html.contains(&id), "provenance lists the metrics artifact");
}

/// A scored run small enough to read: one question under base and
/// add-conflict (an inserted passage with a foil), two prompts.
fn scored_run(store: &Store) -> (String, String) {
    use ragprobe_artifact::{
        CaseDoc, CaseRow, Cases, DocSource, Expected, ResponseRow, Responses, ScoreRow, Scores,
    };
    let doc = |t: &str, source| CaseDoc {
        doc_id: t.into(),
        title: Some("France".into()),
        text: t.into(),
        source,
        has_answer: None,
    };
    let case = |cond: &str, docs: Vec<CaseDoc>, foil: Option<&str>| CaseRow {
        case_id: format!("q1-{cond}"),
        qid: "q1".into(),
        dataset: "nq".into(),
        condition: cond.into(),
        question: "What is the capital of France?".into(),
        answers: vec!["Paris".into()],
        docs,
        expected: Expected::Answer,
        inserted_at: foil.map(|_| 1),
        foil: foil.map(String::from),
        derivation: "test".into(),
        ..Default::default()
    };
    let cases = vec![
        case(
            "base",
            vec![doc("Paris is the capital of France.", DocSource::Retrieved)],
            None,
        ),
        case(
            "add-conflict",
            vec![
                doc("Paris is the capital of France.", DocSource::Retrieved),
                doc("Lyon is the capital of France.", DocSource::Conflict),
            ],
            Some("Lyon"),
        ),
    ];
    let cid = write_all::<Cases>(
        store,
        &Recipe::new("t-cases", 1, json!({})),
        cases,
        json!(null),
    )
    .unwrap()
    .id;
    let mut rr = Recipe::new("t-generate", 1, json!({}));
    rr.inputs = vec![cid];
    let rid = write_all::<Responses>(store, &rr, Vec::<ResponseRow>::new(), json!(null))
        .unwrap()
        .id;
    let score = |cond: &str, prompt: &str, text: &str, ok: bool| ScoreRow {
        case_id: format!("q1-{cond}"),
        qid: "q1".into(),
        dataset: "nq".into(),
        condition: cond.into(),
        prompt: prompt.into(),
        model: "m".into(),
        request_id: format!("{cond}{prompt}"),
        flags: ragprobe_artifact::MatchFlags {
            accuracy: Some(ok),
            foil_any: Some(!ok),
            foil_only: Some(!ok),
            ..Default::default()
        },
        response: Some(text.into()),
        ..Default::default()
    };
    let scores = vec![
        score("base", "p1", "Paris", true),
        score("base", "p2", "Paris.", true),
        score("add-conflict", "p1", "Lyon", false),
        score("add-conflict", "p2", "It is Paris", true),
    ];
    let mut sr = Recipe::new("t-score", 1, json!({}));
    sr.inputs = vec![rid];
    let sid = write_all::<Scores>(store, &sr, scores, json!(null))
        .unwrap()
        .id;
    let mid = write_all::<Metrics>(
        store,
        &Recipe::new("hand", 1, json!({})),
        rows(),
        json!(null),
    )
    .unwrap()
    .id;
    (mid, sid)
}

/// Headless Chromium on `url`, after the page's async work (the data is
/// unpacked by DecompressionStream): the DOM and the browser's log.
fn chromium_dom(chrome: &std::path::Path, url: &str) -> (String, String) {
    let o = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(url)
        .output()
        .unwrap();
    assert!(o.status.success());
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn assert_no_console_errors(log: &str) {
    assert!(
        !log.contains("Uncaught")
            && !log.contains(":ERROR:CONSOLE")
            && !log.contains("could not read the case data"),
        "console errors:\n{log}"
    );
}

#[test]
fn the_html_renders_in_headless_chromium_without_console_errors() {
    let chrome = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|c| which(c));
    let Some(chrome) = chrome else {
        eprintln!(
            "SKIPPED: Chromium not installed (`make test` installs the Debian package when it can)"
        );
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path().join("s")).unwrap();
    // Without scores: an empty browser, and still no error.
    let id = write_all::<Metrics>(
        &store,
        &Recipe::new("hand", 1, json!({})),
        rows(),
        json!(null),
    )
    .unwrap()
    .id;
    let r = ragprobe_report::report(
        &store,
        &[id],
        None,
        &d.path().join("r"),
        "t",
        &ragprobe_studies::reports(),
    )
    .unwrap();
    let (dom, log) = chromium_dom(&chrome, &format!("file://{}", r.index.display()));
    assert!(
        dom.contains("0 question(s)"),
        "the script ran and filled the case count"
    );
    assert_no_console_errors(&log);

    // With scores: the packed data is unpacked and the list drawn ...
    let (mid, sid) = scored_run(&store);
    let r = ragprobe_report::report(
        &store,
        &[mid],
        Some(&sid),
        &d.path().join("r2"),
        "t",
        &ragprobe_studies::reports(),
    )
    .unwrap();
    let url = format!("file://{}", r.index.display());
    let (dom, log) = chromium_dom(&chrome, &url);
    assert!(dom.contains("data-cases-ready=\"1\""), "{dom}");
    assert!(dom.contains("1 question(s), 4 response(s)"), "{dom}");
    assert!(dom.contains("What is the capital of France?"));
    assert_no_console_errors(&log);
    // ... and a shared link opens the question view: one column per
    // condition, the inserted passage marked, gold and foil highlighted.
    let (dom, log) = chromium_dom(&chrome, &format!("{url}#cases?question=nq:q1"));
    assert!(dom.contains("data-question-view=\"nq:q1\""), "{dom}");
    let view = &dom[dom.find("id=\"question-view\"").unwrap()..];
    let view = &view[..view.find("</section>").unwrap()];
    assert_eq!(view.matches("class=\"qv-col\"").count(), 2, "{view}");
    assert!(view.contains("<mark class=\"gold\">Paris</mark>"), "{view}");
    assert!(view.contains("<mark class=\"foil\">Lyon</mark>"), "{view}");
    assert!(view.contains("class=\"doc inserted\""), "{view}");
    assert!(view.contains("misled by the foil"), "{view}");
    assert_no_console_errors(&log);
    // A filtered link keeps its filter.
    let (dom, _) = chromium_dom(
        &chrome,
        &format!("{url}#cases?condition=add-conflict&prompt=p1"),
    );
    assert!(dom.contains("1 question(s), 1 response(s)"), "{dom}");
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(cmd))
            .find(|f| f.is_file())
    })
}
