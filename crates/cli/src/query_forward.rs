//! `ragprobe query`: runs the `ragprobe-query` binary (crates/query-cli).
//!
//! SQL runs on polars, about 290 crates and half of a cold build; kept out
//! of `ragprobe` so the main binary builds in half the time and a newcomer's
//! `make demo` does not wait for it (as `git` and `cargo` run `git-*` and
//! `cargo-*`). The binary is looked for next to `ragprobe`, then on PATH.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::GlobalArgs;

/// The plugin's file name.
pub const QUERY_BIN: &str = "ragprobe-query";

/// Everything after `query`, passed on unread (`--help` included).
#[derive(clap::Args, Debug)]
pub struct QueryForward {
    /// The SQL and `ragprobe-query`'s options (`ragprobe query --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<OsString>,
}

/// `ragprobe-query` next to `exe`, else the first on `path` (PATH's value).
pub fn find_query_bin(exe: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
    let beside = exe.with_file_name(QUERY_BIN);
    if beside.is_file() {
        return Some(beside);
    }
    std::env::split_paths(path?)
        .map(|d| d.join(QUERY_BIN))
        .find(|p| p.is_file())
}

/// The command that runs the query: the store and remote go through their
/// environment variables (so a `--store` among `args` still wins), the
/// log level as flags.
pub fn query_command(bin: &Path, global: &GlobalArgs, args: &[OsString]) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.env("RAGPROBE_STORE", &global.store);
    if let Some(r) = &global.store_remote {
        c.env("RAGPROBE_STORE_REMOTE", r);
    }
    for _ in 0..global.verbose {
        c.arg("-v");
    }
    for _ in 0..global.quiet {
        c.arg("-q");
    }
    c.args(args);
    c
}

/// Runs `ragprobe-query` with `args`; its exit status becomes ours.
pub fn run(global: &GlobalArgs, a: &QueryForward) -> Result<()> {
    let exe = std::env::current_exe().context("locating the ragprobe binary")?;
    let Some(bin) = find_query_bin(&exe, std::env::var_os("PATH").as_deref()) else {
        bail!(
            "`ragprobe query` needs the `{QUERY_BIN}` binary (SQL on polars, built separately), \
             found neither next to {} nor on PATH: build it with `make build` or \
             `cargo build --release -p ragprobe-query-cli` (20 minutes or more on 2 cores)",
            exe.display()
        );
    };
    let mut cmd = query_command(&bin, global, &a.args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Replaces this process: signals, stdout and the exit status are the plugin's.
        let e = cmd.exec();
        bail!("running {}: {e}", bin.display());
    }
    #[cfg(not(unix))]
    {
        let status = cmd
            .status()
            .with_context(|| format!("running {}", bin.display()))?;
        std::process::exit(status.code().unwrap_or(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(verbose: u8) -> GlobalArgs {
        GlobalArgs {
            store: "st".into(),
            store_remote: Some("team".into()),
            verbose,
            quiet: 0,
        }
    }

    #[test]
    fn the_binary_beside_wins_over_path() {
        let d = tempfile::tempdir().unwrap();
        let (here, on_path) = (d.path().join("bin"), d.path().join("path"));
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&on_path).unwrap();
        let exe = here.join("ragprobe");
        let path = std::env::join_paths([d.path().join("none"), on_path.clone()]).unwrap();
        assert_eq!(find_query_bin(&exe, Some(&path)), None);
        assert_eq!(find_query_bin(&exe, None), None);
        std::fs::write(on_path.join(QUERY_BIN), "").unwrap();
        assert_eq!(
            find_query_bin(&exe, Some(&path)),
            Some(on_path.join(QUERY_BIN))
        );
        std::fs::write(here.join(QUERY_BIN), "").unwrap();
        assert_eq!(
            find_query_bin(&exe, Some(&path)),
            Some(here.join(QUERY_BIN))
        );
    }

    #[test]
    fn the_store_goes_by_environment_and_the_arguments_unchanged() {
        let args: Vec<OsString> = ["SELECT 1", "--store", "other", "--help"]
            .map(OsString::from)
            .to_vec();
        let c = query_command(Path::new("/x/ragprobe-query"), &global(2), &args);
        let got: Vec<&OsStr> = c.get_args().collect();
        assert_eq!(got, ["-v", "-v", "SELECT 1", "--store", "other", "--help"]);
        let env: Vec<(&OsStr, Option<&OsStr>)> = c.get_envs().collect();
        assert!(env.contains(&(OsStr::new("RAGPROBE_STORE"), Some(OsStr::new("st")))));
        assert!(env.contains(&(
            OsStr::new("RAGPROBE_STORE_REMOTE"),
            Some(OsStr::new("team"))
        )));
    }

    /// Everything after `query` reaches the plugin, flags and `--help` too.
    #[test]
    fn clap_passes_every_argument_through() {
        use clap::Parser;
        let cli = crate::Cli::try_parse_from([
            "ragprobe", "-q", "query", "SELECT 1", "--csv", "-", "--help",
        ])
        .unwrap();
        assert_eq!(cli.global.quiet, 1);
        let crate::Command::Query(q) = cli.command else {
            panic!("not query")
        };
        assert_eq!(q.args, ["SELECT 1", "--csv", "-", "--help"]);
        let cli = crate::Cli::try_parse_from(["ragprobe", "query", "--help"]).unwrap();
        let crate::Command::Query(q) = cli.command else {
            panic!("not query")
        };
        assert_eq!(q.args, ["--help"]);
    }
}
