//! Helpers shared by the CLI's integration tests: where the project and its
//! fixtures are, running the `ragprobe` binary, reading its outputs.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The project's fixtures directory.
pub fn fixtures() -> PathBuf {
    root().join("fixtures")
}

/// Runs `ragprobe [--store STORE] ARGS` in `dir`, with `RAGPROBE_STORE` unset.
pub fn run_in(dir: &Path, store: Option<&Path>, args: &[&str]) -> Output {
    run_with_env(dir, store, args, &[])
}

/// [`run_in`] with extra environment variables.
pub fn run_with_env(
    dir: &Path,
    store: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ragprobe"));
    if let Some(s) = store {
        c.arg("--store").arg(s);
    }
    c.args(args)
        .current_dir(dir)
        .env_remove("RAGPROBE_STORE")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Runs `ragprobe --store STORE ARGS` in the repository root.
pub fn ragprobe(store: &Path, args: &[&str]) -> Output {
    run_in(&root(), Some(store), args)
}

/// Runs in `dir`, asserts success; returns the (kind, id) outputs and stderr.
pub fn run_ok(dir: &Path, store: &Path, args: &[&str]) -> (Vec<(String, String)>, String) {
    let o = run_in(dir, Some(store), args);
    let err = stderr(&o);
    assert!(o.status.success(), "ragprobe {args:?} failed:\n{err}");
    (outputs(&stdout(&o)), err)
}

/// Asserts success; returns stdout.
pub fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", stderr(o));
    stdout(o)
}

/// stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `<kind>\t<id>` lines of a stage's stdout.
pub fn outputs(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, i)| (k.to_string(), i.to_string()))
        .collect()
}

/// The id of the `kind` output.
pub fn id_of<'a>(outs: &'a [(String, String)], kind: &str) -> &'a str {
    &outs
        .iter()
        .find(|(k, _)| k == kind)
        .unwrap_or_else(|| panic!("no {kind} in {outs:?}"))
        .1
}

/// A runtime for the loopback servers the tests start (two workers).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Lines in a store's request journal (every file of `<store>/requests`).
pub fn journal_lines(store: &Path) -> usize {
    std::fs::read_dir(store.join("requests"))
        .map(|r| {
            r.flatten()
                .map(|e| {
                    std::fs::read_to_string(e.path())
                        .unwrap_or_default()
                        .lines()
                        .count()
                })
                .sum()
        })
        .unwrap_or(0)
}

/// `ragprobe --store STORE ARGS` started in the repository root, its
/// output discarded (a run to kill midway).
pub fn spawn(store: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_ragprobe"))
        .arg("--store")
        .arg(store)
        .args(args)
        .current_dir(root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The case browser's index in a report's `index.html`, decoded.
pub fn browser_index(html: &str) -> serde_json::Value {
    ragprobe_report::browser::page_data(html, "rp-index").expect("a case browser")
}
