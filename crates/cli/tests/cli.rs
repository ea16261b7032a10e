//! The `ragprobe` binary as a user drives it.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{stderr, stdout};

/// `ragprobe ARGS` in `dir` (its default store `dir/.ragprobe`), logging at info.
fn ragprobe(dir: &Path, args: &[&str]) -> Output {
    common::run_with_env(dir, None, args, &[("RUST_LOG", "info")])
}

/// (kind, id) lines of a stage's stdout.
fn outputs_of(o: &Output) -> Vec<(String, String)> {
    common::outputs(&stdout(o))
}

const DPR: &str = r#"{"question": "who wrote hamlet", "answers": ["Shakespeare"], "ctxs": [{"id": "d1", "title": "Hamlet", "text": "Hamlet is a play by William Shakespeare.", "score": 2.0}]}
{"question": "capital of france", "answers": ["Paris"], "ctxs": [{"id": "d2", "title": "France", "text": "Lyon is a city in France.", "score": 1.0}]}
"#;

fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("nq.jsonl"), DPR).unwrap();
    d
}

#[test]
fn ingest_prints_kind_and_id_and_a_rerun_is_cached() {
    let d = setup();
    let first = ragprobe(d.path(), &["ingest", "--format", "dpr", "nq.jsonl"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let outs = outputs_of(&first);
    assert_eq!(
        outs.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["questions", "contexts"]
    );
    assert!(d
        .path()
        .join(".ragprobe/objects")
        .join(format!("{}.parquet", outs[0].1))
        .is_file());
    let second = ragprobe(d.path(), &["ingest", "--format", "dpr", "nq.jsonl"]);
    assert!(second.status.success());
    assert_eq!(outputs_of(&second), outs);
    assert!(
        stderr(&second).contains("cached, not run"),
        "{}",
        stderr(&second)
    );
}

#[test]
fn store_flag_before_or_after_the_subcommand_and_from_the_environment() {
    let d = setup();
    let a = ragprobe(
        d.path(),
        &["--store", "s1", "ingest", "--format", "dpr", "nq.jsonl"],
    );
    let b = ragprobe(
        d.path(),
        &["ingest", "--format", "dpr", "nq.jsonl", "--store", "s2"],
    );
    let c = Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .current_dir(d.path())
        .env("RAGPROBE_STORE", "s3")
        .args(["ingest", "--format", "dpr", "nq.jsonl"])
        .output()
        .unwrap();
    assert!(a.status.success() && b.status.success() && c.status.success());
    assert_eq!(outputs_of(&a), outputs_of(&b));
    assert_eq!(outputs_of(&a), outputs_of(&c));
    for s in ["s1", "s2", "s3"] {
        assert_eq!(
            std::fs::read_dir(d.path().join(s).join("objects"))
                .unwrap()
                .count(),
            2,
            "{s}"
        );
    }
}

#[test]
fn show_prints_manifest_schema_rows_by_prefix() {
    let d = setup();
    let outs = outputs_of(&ragprobe(
        d.path(),
        &["ingest", "--format", "dpr", "nq.jsonl"],
    ));
    let prefix = &outs[0].1[..10];
    let o = ragprobe(d.path(), &["artifacts", "show", prefix]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    for needle in [
        "kind:     questions",
        "rows:     2",
        "\"stage\": \"ingest\"",
        "who wrote hamlet",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in\n{s}");
    }
    assert!(
        s.lines().any(|l| l.trim_start().starts_with("answers ")
            && l.trim_end().ends_with("list<utf8>  not null")),
        "{s}"
    );
    let ls = stdout(&ragprobe(d.path(), &["artifacts", "ls"]));
    assert!(ls.contains(&outs[0].1) && ls.contains("contexts"), "{ls}");
}

#[test]
fn verify_fails_naming_the_corrupt_object() {
    let d = setup();
    let outs = outputs_of(&ragprobe(
        d.path(),
        &["ingest", "--format", "dpr", "nq.jsonl"],
    ));
    assert!(ragprobe(d.path(), &["artifacts", "verify"])
        .status
        .success());
    let victim = d
        .path()
        .join(".ragprobe/objects")
        .join(format!("{}.parquet", outs[1].1));
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[50] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();
    let o = ragprobe(d.path(), &["artifacts", "verify"]);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(&format!("CORRUPT\t{}", outs[1].1)),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains(&outs[0].1));
    assert!(
        stderr(&o).contains("1 of 2 object(s) are corrupt"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn export_then_import_and_altered_import_is_refused() {
    let d = setup();
    let outs = outputs_of(&ragprobe(
        d.path(),
        &["ingest", "--format", "dpr", "nq.jsonl"],
    ));
    std::fs::create_dir(d.path().join("out")).unwrap();
    assert!(
        ragprobe(d.path(), &["artifacts", "export", &outs[0].1, "out"])
            .status
            .success()
    );
    let file = format!("out/{}.parquet", outs[0].1);
    let o = ragprobe(
        d.path(),
        &["--store", "other", "artifacts", "import", &file],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(outputs_of(&o), vec![outs[0].clone()]);
    let mut bytes = std::fs::read(d.path().join(&file)).unwrap();
    bytes[120] ^= 0x01;
    std::fs::write(d.path().join(&file), bytes).unwrap();
    let o = ragprobe(
        d.path(),
        &["--store", "third", "artifacts", "import", &file],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("refusing to import") && stderr(&o).contains("altered"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_exits_non_zero_with_the_place() {
    let d = setup();
    std::fs::write(
        d.path().join("bad.jsonl"),
        "{\"question\": \"q\", \"answers\": 3}\n",
    )
    .unwrap();
    let o = ragprobe(d.path(), &["ingest", "--format", "dpr", "bad.jsonl"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o)
            .contains("bad.jsonl:1: field `answers` must be a list of strings, found a number"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn every_subcommand_has_help() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        vec!["--help"],
        vec!["ingest", "--help"],
        vec!["artifacts", "--help"],
        vec!["artifacts", "ls", "--help"],
        vec!["artifacts", "show", "--help"],
        vec!["artifacts", "verify", "--help"],
        vec!["artifacts", "export", "--help"],
        vec!["artifacts", "import", "--help"],
        vec!["artifacts", "gc", "--help"],
    ] {
        let o = ragprobe(d.path(), &args);
        assert!(o.status.success(), "{args:?}");
        assert!(stdout(&o).contains("Usage:"), "{args:?}");
    }
}

/// Regression (reliability #12): out-of-range numbers panicked (exit 101)
/// or aborted on allocation; the parser now refuses them with a message.
#[test]
fn out_of_range_flags_are_usage_errors() {
    let d = setup();
    for args in [
        &[
            "generate",
            "--cases",
            "x",
            "--prompt",
            "imperfect-normal",
            "--timeout=-1",
        ][..],
        &[
            "generate",
            "--cases",
            "x",
            "--prompt",
            "imperfect-normal",
            "--timeout",
            "nan",
        ],
        &[
            "generate",
            "--cases",
            "x",
            "--prompt",
            "imperfect-normal",
            "--timeout",
            "1e300",
        ],
        &[
            "score",
            "--responses",
            "x",
            "--bootstrap",
            "18446744073709551615",
        ],
        &[
            "retrieve",
            "--corpus",
            "x",
            "--questions",
            "y",
            "-k",
            "4294967295",
        ],
        &["perturb", "--questions", "x", "-s", "base", "-k", "0"],
    ] {
        let o = ragprobe(d.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("invalid value") && (e.contains("outside") || e.contains("finite")),
            "{args:?}: {e}"
        );
    }
}

/// Regression: `ragprobe … | grep -q …` panicked ("failed printing to
/// stdout: Broken pipe") when the reader closed the pipe before the output
/// ended (reproduce-check's `run --dry-run | grep -q`).
#[test]
fn a_closed_stdout_ends_the_process_without_a_panic() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .args(["prompts", "ls"])
        .current_dir(common::root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before the listing is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}
