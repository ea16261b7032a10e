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
    let t4 = ragprobe_report::tables::build(&ragprobe_report::tables::SPECS[3], &r).unwrap();
    assert_eq!(t4.id, "table4_unanswerable");
    golden("table4_unanswerable.md", &t4.markdown());
    golden("table4_unanswerable.tex", &t4.latex());
    let rad = ragprobe_report::tables::SPECS
        .iter()
        .find(|s| s.id == "figure3_rad")
        .unwrap();
    golden(
        "figure3_rad.md",
        &ragprobe_report::tables::build(rad, &r).unwrap().markdown(),
    );
    let mr = ragprobe_report::tables::SPECS
        .iter()
        .find(|s| s.id == "stress_mr")
        .unwrap();
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
    )
    .unwrap();
    let b = ragprobe_report::report(
        &store,
        std::slice::from_ref(&id),
        None,
        &d.path().join("b"),
        "t",
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
    let html = std::fs::read_to_string(&a.index).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://") || !html.contains("<script src"),
        "self-contained"
    );
    assert!(html.contains(&id), "provenance lists the metrics artifact");
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
    let id = write_all::<Metrics>(
        &store,
        &Recipe::new("hand", 1, json!({})),
        rows(),
        json!(null),
    )
    .unwrap()
    .id;
    let r = ragprobe_report::report(&store, &[id], None, &d.path().join("r"), "t").unwrap();
    let o = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", r.index.display()))
        .output()
        .unwrap();
    assert!(o.status.success());
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(
        dom.contains("0 case(s)"),
        "the script ran and filled the case count"
    );
    assert!(
        !log.contains("Uncaught") && !log.contains(":ERROR:CONSOLE"),
        "console errors:\n{log}"
    );
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(cmd))
            .find(|f| f.is_file())
    })
}
