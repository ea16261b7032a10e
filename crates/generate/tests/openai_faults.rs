//! The OpenAI-compatible path against a loopback mock that injects faults:
//! every request is answered exactly once, failures are recorded, reruns
//! are cached, and the API key never reaches an artifact, a log or a journal.

use ragprobe_artifact::{read, write_all, CaseDoc, CaseRow, Cases, Recipe, Responses, Store};
use ragprobe_generate::{generate, BackendSpec, GenerateOptions, Template};
use ragprobe_mock::{reply_for, start, MockConfig, MockServer};
use ragprobe_models::llm::openai::OpenAiConfig;
use ragprobe_models::llm::GenSettings;
use serde_json::json;
use std::time::Duration;

fn cases(store: &Store, n: usize) -> String {
    let rows: Vec<CaseRow> = (0..n)
        .map(|i| CaseRow {
            case_id: format!("case{i:04}"),
            qid: format!("q{i}"),
            dataset: "mock".into(),
            lang: "en".into(),
            condition: "base".into(),
            question: format!("What is item number {i}?"),
            docs: vec![CaseDoc {
                doc_id: format!("d{i}"),
                title: Some("T".into()),
                text: format!("Item {i} is a thing."),
                source: ragprobe_artifact::DocSource::Retrieved,
                has_answer: Some(true),
            }],
            answers: vec![format!("thing {i}")],
            expected: ragprobe_artifact::Expected::Answer,
            derivation: "{}".into(),
            ..Default::default()
        })
        .collect();
    write_all::<Cases>(
        store,
        &Recipe::new("hand", 1, json!({})),
        rows.clone(),
        json!(null),
    )
    .unwrap()
    .id
}

fn mock(rt: &tokio::runtime::Runtime, cfg: MockConfig) -> MockServer {
    rt.block_on(start(cfg, 0)).unwrap()
}

fn opts(server: &MockServer, attempts: u32, key_env: Option<&str>) -> GenerateOptions {
    GenerateOptions {
        template: Template::load(
            "imperfect-normal",
            None,
            &ragprobe_studies::prompt_catalog(),
        )
        .unwrap(),
        backend: BackendSpec::OpenAi(OpenAiConfig {
            base_urls: vec![server.base_url()],
            model: "mock-model".into(),
            api_key_env: key_env.map(String::from),
            concurrency: 16,
            timeout: Duration::from_millis(400),
            max_attempts: attempts,
            retry_base: Duration::from_millis(5),
            retry_max: Duration::from_millis(50),
            ..Default::default()
        }),
        settings: GenSettings {
            max_tokens: 8,
            ..Default::default()
        },
        conditions: vec![],
        progress: false,
        truncate: None,
    }
}

#[test]
fn every_request_is_answered_exactly_once_under_faults() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = mock(
        &rt,
        MockConfig {
            rate_429: 0.06,
            retry_after_secs: 0,
            rate_500: 0.06,
            rate_slow: 0.03,
            slow_delay: Duration::from_millis(1200),
            rate_drop: 0.04,
            rate_malformed: 0.04,
            seed: 42,
            ..Default::default()
        },
    );
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let cid = cases(&store, 300);
    let r = generate(&store, &cid, &opts(&server, 12, None)).unwrap();
    assert_eq!(
        (r.summary.requests, r.summary.new, r.summary.failed),
        (300, 300, 0)
    );
    let rows = read::<Responses>(&store, &r.responses.id).unwrap();
    assert_eq!(rows.len(), 300);
    let mut retried = 0;
    for row in &rows {
        assert!(row.error.is_none(), "{:?}", row.error);
        let msgs: Vec<serde_json::Value> = serde_json::from_str(&row.messages).unwrap();
        let prompt = msgs
            .iter()
            .map(|m| m["content"].as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            row.text.as_deref(),
            Some(reply_for(&prompt).as_str()),
            "each row holds its own request's answer"
        );
        if row.attempts > 1 {
            retried += 1;
        }
    }
    assert!(retried > 10, "faults were injected and retried ({retried})");
    assert!(
        server
            .stats
            .faults
            .load(std::sync::atomic::Ordering::Relaxed)
            > 10
    );
    assert_eq!(
        server.stats.answered_twice(),
        0,
        "no request was answered twice"
    );
    assert_eq!(server.stats.distinct_answered(), 300);
    // A second run is a cache hit and sends nothing.
    let before = server
        .stats
        .requests
        .load(std::sync::atomic::Ordering::Relaxed);
    let again = generate(&store, &cid, &opts(&server, 12, None)).unwrap();
    assert!(again.cached);
    assert_eq!(again.responses.id, r.responses.id);
    assert_eq!(
        server
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        before
    );
}

#[test]
fn permanent_failures_are_rows_with_their_error_and_are_retried_next_time() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let broken = mock(
        &rt,
        MockConfig {
            rate_500: 1.0,
            ..Default::default()
        },
    );
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let cid = cases(&store, 20);
    let r = generate(&store, &cid, &opts(&broken, 3, None)).unwrap();
    assert_eq!((r.summary.new, r.summary.failed), (0, 20));
    let rows = read::<Responses>(&store, &r.responses.id).unwrap();
    assert_eq!(rows.len(), 20, "failed requests are kept, not dropped");
    for row in &rows {
        assert!(row.text.is_none());
        assert_eq!(row.attempts, 3);
        let e = row.error.as_deref().unwrap();
        assert!(
            e.contains("gave up after 3 attempts") && e.contains("500"),
            "{e}"
        );
    }
    assert_eq!(
        broken
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        60
    );
    // The next run (server healthy again) retries them: not a cache hit.
    let healthy = mock(&rt, MockConfig::default());
    let r2 = generate(&store, &cid, &opts(&healthy, 3, None)).unwrap();
    assert!(!r2.cached);
    assert_eq!((r2.summary.new, r2.summary.failed), (20, 0));
}

#[test]
fn the_api_key_never_reaches_artifacts_logs_or_journals() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = mock(&rt, MockConfig::default());
    let secret = "sk-test-4f1c9e0d2b7a6358-never-print";
    // SAFETY: a variable only this test reads.
    unsafe { std::env::set_var("RAGPROBE_TEST_SECRET_KEY", secret) };
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let cid = cases(&store, 5);
    generate(
        &store,
        &cid,
        &opts(&server, 2, Some("RAGPROBE_TEST_SECRET_KEY")),
    )
    .unwrap();
    for entry in walk(d.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "key found in {}",
            entry.display()
        );
    }
    // A missing variable is a clear error that names the variable, not a value.
    let e = generate(
        &store,
        &cid,
        &opts(&server, 2, Some("RAGPROBE_TEST_UNSET_VAR")),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("RAGPROBE_TEST_UNSET_VAR"), "{e}");
}

/// Regression (reliability #8): a server that echoes the `Authorization`
/// header in its error bodies put the key into the responses artifact's
/// `error` column, the request journal and the logs.
#[test]
fn a_key_echoed_by_a_hostile_server_is_redacted_everywhere() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = mock(
        &rt,
        MockConfig {
            echo_auth: true,
            ..Default::default()
        },
    );
    let secret = "sk-echo-9a8b7c6d5e4f-never-print";
    // SAFETY: a variable only this test reads.
    unsafe { std::env::set_var("RAGPROBE_TEST_ECHO_KEY", secret) };
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let cid = cases(&store, 3);
    let r = generate(
        &store,
        &cid,
        &opts(&server, 2, Some("RAGPROBE_TEST_ECHO_KEY")),
    )
    .unwrap();
    assert_eq!(r.summary.failed, 3);
    let rows = read::<Responses>(&store, &r.responses.id).unwrap();
    assert!(
        rows.iter()
            .all(|x| x.error.as_deref().is_some_and(|e| e.contains("[redacted]"))),
        "{:?}",
        rows[0].error
    );
    for entry in walk(d.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "key found in {}",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
