//! The `ragprobe-query` binary on its own (`ragprobe query` through the
//! main binary is tested in crates/cli/tests/query.rs).

use std::process::Command;

fn query(store: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ragprobe-query"))
        .env_remove("RAGPROBE_STORE")
        .env_remove("RAGPROBE_STORE_REMOTE")
        .arg("--store")
        .arg(store)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_names_the_command_ragprobe_query() {
    let d = tempfile::tempdir().unwrap();
    let out = query(d.path(), &["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("Usage: ragprobe query"), "{help}");
    assert!(help.contains("--store <DIR>"), "{help}");
}

#[test]
fn an_unknown_table_is_a_one_line_error() {
    let d = tempfile::tempdir().unwrap();
    let out = query(&d.path().join("store"), &["SELECT * FROM scores"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("scores"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
