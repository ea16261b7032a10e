//! The three reproduction pipelines (`make reproduce-*`) run end to end on
//! the project's fixtures against the built-in OpenAI-compatible mock with
//! scripted replies, and fill every table the studies report — GenADV,
//! Table 7's C/NC split and K's matcher included.

use ragprobe_mock::{start, MockConfig, MockServer, Replies};
use std::path::Path;
use std::process::Command;

mod common;
use common::root;

fn mock(rt: &tokio::runtime::Runtime) -> MockServer {
    rt.block_on(start(
        MockConfig {
            replies: Replies::Scripted,
            ..Default::default()
        },
        0,
    ))
    .unwrap()
}

/// Run a pipeline; returns the report directory's tables.md.
fn reproduce(store: &Path, pipeline: &str, sets: &[String], out: &Path) -> String {
    let mut args = vec![
        "--store".to_string(),
        store.display().to_string(),
        "run".into(),
        format!("pipelines/{pipeline}.toml"),
    ];
    for s in sets {
        args.push("--set".into());
        args.push(s.clone());
    }
    args.push("--set".into());
    args.push(format!("out={}", out.display()));
    let o = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .args(&args)
        .current_dir(root())
        .env_remove("RAGPROBE_STORE")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{pipeline}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out.join("tables.md")).unwrap()
}

/// The value cells of a Markdown table row whose label starts with `row`.
fn has_values(md: &str, table_title_start: &str) -> bool {
    let Some(at) = md.find(table_title_start) else {
        return false;
    };
    let block = &md[at..md[at..].find("\n### ").map(|e| at + e).unwrap_or(md.len())];
    block
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| model"))
        .any(|l| {
            l.split('|').skip(2).any(|c| {
                c.trim()
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_ascii_digit() || ch == '-')
            })
        })
}

#[test]
fn the_three_reproductions_run_on_the_fixtures_against_the_mock() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = mock(&rt);
    let url = server.base_url();
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");

    // Seed 000: the four datasets' files as the pipeline names them.
    let data = d.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    for (name, fixture) in [
        ("nq.jsonl", "nq-mini.jsonl"),
        ("tqa.jsonl", "nq-mini.jsonl"),
        ("webq.jsonl", "nq-mini.jsonl"),
        ("popqa.jsonl", "popqa-mini.jsonl"),
    ] {
        std::fs::copy(root().join("fixtures").join(fixture), data.join(name)).unwrap();
    }
    let common = |extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            format!("base_url={url}"),
            "model=mock-model".into(),
            "concurrency=16".into(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let md = reproduce(
        &store,
        "imperfect-retrieval",
        &common(&[&format!("data={}", data.display()), "conflict_share=0.6"]),
        &d.path().join("r000"),
    );
    for (title, what) in [
        ("Table 11", "closed-book baseline"),
        ("Figure 2 / Table 4", "unanswerable"),
        ("Figure 3", "RAD"),
        ("Table 6", "RAD answerable/unanswerable"),
        ("Table 7", "conflict detection"),
        ("Table 8", "stubbornness"),
    ] {
        assert!(
            has_values(&md, &format!("### {title}")),
            "seed 000 {what} table has values:\n{md}"
        );
    }
    let fig3 = &md[md.find("### Figure 3").unwrap()..];
    assert!(
        fig3.lines().nth(2).unwrap().contains("add-genadv"),
        "Figure 3 has the GenADV bar: {}",
        fig3.lines().nth(2).unwrap()
    );
    let t6 = &md[md.find("### Table 6").unwrap()..];
    assert!(
        t6.lines().nth(2).unwrap().contains("add-genadv"),
        "Table 6 has GenADV Ans./Unans."
    );
    assert!(
        md.contains("C share") && md.contains("seeded split P = 0.6"),
        "Table 7 shows the C share"
    );
    let t7 = &md[md.find("### Table 7").unwrap()..];
    let row = t7
        .lines()
        .find(|l| l.contains("imperfect-conflict"))
        .unwrap();
    assert!(
        row.split('|').skip(2).take(3).all(|c| c
            .trim()
            .chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_digit())),
        "Acc(C), Acc(NC), Acc all filled: {row}"
    );
    assert!(
        !t7.lines()
            .take_while(|l| !l.starts_with("- "))
            .any(|l| l.contains("imperfect-unans")),
        "only the Conflict prompt in Table 7"
    );

    // Seed 001: two languages of the NoMIRACL fixture, chosen by list variable.
    let md = reproduce(
        &store,
        "nomiracl",
        &common(&[
            "data=fixtures/nomiracl-mini",
            "langs=en,de",
            "ext=.dev.jsonl",
        ]),
        &d.path().join("r001"),
    );
    assert!(has_values(&md, "### NoMIRACL — hallucination rate"), "{md}");
    assert!(
        md.contains("de: Halluc.") && md.contains("en: Halluc."),
        "both languages: {md}"
    );

    // Seed 002: the four evidence-reliance formats, Chinese MedQA included.
    let md = reproduce(
        &store,
        "rag-stress",
        &common(&[
            "data=fixtures/rc",
            "triviaqa=triviaqa-mini.json",
            "hotpotqa=hotpotqa-mini.json",
            "searchqa=searchqa-mini.jsonl",
            "medqa=medqa-mini-en.jsonl",
            "medqa_zh=medqa-mini-zh.jsonl",
            "backend=openai",
            "bootstrap=200",
        ]),
        &d.path().join("r002"),
    );
    for title in [
        "### RAG-Stress — misleading rate",
        "### RAG-Stress — clean accuracy",
        "### RAG-Stress — paired contrasts",
        "### RAG-Stress — clean-gold",
    ] {
        assert!(has_values(&md, title), "{title}:\n{md}");
    }
    assert!(md.contains("medqa-zh"), "Chinese MedQA is in the run");
    assert!(
        md.contains("MR: accuracy match") && md.contains("HOR: exact match"),
        "K's matcher is shown"
    );
}
