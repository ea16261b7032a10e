//! `ragprobe remote …` and `ragprobe artifacts push|pull`: team sharing
//! through object stores (the ragprobe-remote library).

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use ragprobe_artifact::Store;
use ragprobe_remote::{Remote, RemoteConfig, StoreConfig, Transfer};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Subcommand, Debug)]
pub enum RemoteCmd {
    /// Add a remote: s3://bucket/prefix, gs://…, az://…, https://… (WebDAV),
    /// file:///dir or a directory path. Only the location is stored (in the
    /// store's config.json); credentials come from the environment
    /// (AWS_ACCESS_KEY_ID, …) or the profile files (AWS_PROFILE, ~/.aws/) on
    /// every use.
    Add {
        /// A short name (`team`).
        name: String,
        /// Where the remote is.
        url: String,
        /// An S3-compatible endpoint (MinIO, R2, Ceph): https://host:port.
        #[arg(long)]
        endpoint: Option<String>,
        /// The S3 region, when the environment and profile give none.
        #[arg(long)]
        region: Option<String>,
        /// Unsigned requests (a public bucket; pull only).
        #[arg(long)]
        anonymous: bool,
        /// Make it the default remote (the first one added is).
        #[arg(long)]
        default: bool,
    },
    /// Remove a remote from the config (its contents are untouched).
    Rm {
        /// The remote's name.
        name: String,
    },
    /// Make a remote the default for push and pull.
    Default {
        /// The remote's name.
        name: String,
    },
    /// List the configured remotes; with a name, what that remote holds.
    Ls {
        /// A remote to list the contents of.
        name: Option<String>,
    },
    /// Read back every object in a remote and check it hashes to its id;
    /// check every action record and marker.
    Verify {
        /// The remote (default: the default remote).
        name: Option<String>,
        /// Objects read at once.
        #[arg(long, default_value_t = 8)]
        jobs: usize,
    },
}

/// Options shared by push and pull.
#[derive(Args, Debug)]
pub struct TransferArgs {
    /// The remote (default: the store's default remote).
    #[arg(long)]
    pub remote: Option<String>,
    /// Also carry the request journals (requests/*.jsonl), so finished
    /// model calls are not repeated on the other machine.
    #[arg(long)]
    pub with_journals: bool,
    /// Objects transferred at once.
    #[arg(long, default_value_t = 8)]
    pub jobs: usize,
}

#[derive(Args, Debug)]
pub struct PushArgs {
    /// Artifacts to push (ids or unique prefixes), each with its whole lineage.
    pub ids: Vec<String>,
    /// Push every output of this pipeline's finished steps.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,
    /// Pipeline variables, as for `run` (`--set n=20`).
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "pipeline")]
    pub sets: Vec<String>,
    /// Push what a report directory was made from (its artifacts.json).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Replace remote action records that differ from the local ones
    /// (compare-and-swap: a record changed meanwhile is left alone).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub transfer: TransferArgs,
}

#[derive(Args, Debug)]
pub struct PullArgs {
    /// Artifacts to pull (ids or unique prefixes), each with its whole
    /// lineage and the action records that made it.
    #[arg(required = true)]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub transfer: TransferArgs,
}

fn open(store: &Store, name: Option<&str>) -> Result<Remote> {
    let config = StoreConfig::load(store.root())?;
    let (name, rc) = config.get(name)?;
    Ok(Remote::open(&name, &rc)?)
}

/// `store`, reading through to remote `name` (`--store-remote`).
pub fn read_through(store: Store, name: &str) -> Result<Store> {
    let remote = open(&store, Some(name))?;
    let t = Transfer {
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..Default::default()
    };
    Ok(
        store.with_fallback(std::sync::Arc::new(ragprobe_remote::ReadThrough::new(
            remote, t,
        ))),
    )
}

fn transfer(t: &TransferArgs, force: bool) -> Transfer {
    Transfer {
        jobs: t.jobs.max(1),
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        with_journals: t.with_journals,
        force,
    }
}

fn rate(bytes: u64, secs: f64) -> String {
    let mb = bytes as f64 / 1e6;
    if secs > 0.0 && bytes > 0 {
        format!("{mb:.1} MB, {:.1} MB/s", mb / secs)
    } else {
        format!("{mb:.1} MB")
    }
}

pub fn remote(store: &Store, cmd: RemoteCmd) -> Result<()> {
    let root = store.root();
    match cmd {
        RemoteCmd::Add {
            name,
            url,
            endpoint,
            region,
            anonymous,
            default,
        } => {
            let mut c = StoreConfig::load(root)?;
            let rc = RemoteConfig {
                url,
                endpoint,
                region,
                anonymous,
            };
            c.add(&name, rc)?;
            if default {
                c.set_default(&name)?;
            }
            c.save(root)?;
            let d = c.default_remote.as_deref() == Some(name.as_str());
            eprintln!("added remote `{name}`{}", if d { " (default)" } else { "" });
        }
        RemoteCmd::Rm { name } => {
            let mut c = StoreConfig::load(root)?;
            c.remove(&name)?;
            c.save(root)?;
            eprintln!("removed remote `{name}`");
        }
        RemoteCmd::Default { name } => {
            let mut c = StoreConfig::load(root)?;
            c.set_default(&name)?;
            c.save(root)?;
        }
        RemoteCmd::Ls { name: None } => list_remotes(root)?,
        RemoteCmd::Ls { name: Some(name) } => list_objects(store, &name)?,
        RemoteCmd::Verify { name, jobs } => verify(store, name.as_deref(), jobs)?,
    }
    Ok(())
}

/// `remote ls`: the configured remotes, the default marked.
fn list_remotes(root: &std::path::Path) -> Result<()> {
    let c = StoreConfig::load(root)?;
    for (name, r) in &c.remotes {
        let mark = if c.default_remote.as_deref() == Some(name) {
            "*"
        } else {
            " "
        };
        let extra = r
            .endpoint
            .as_deref()
            .map(|e| format!("  (endpoint {e})"))
            .unwrap_or_default();
        println!("{mark} {name}\t{}{extra}", r.url);
    }
    if c.remotes.is_empty() {
        eprintln!("no remotes; add one with `ragprobe remote add NAME URL`");
    }
    Ok(())
}

/// `remote ls NAME`: the remote's objects, whether each is here, and totals.
fn list_objects(store: &Store, name: &str) -> Result<()> {
    let r = open(store, Some(name))?;
    let l = r.listing()?;
    println!("{:<64}  {:>12}  here", "id", "bytes");
    let mut bytes = 0;
    for (id, size) in &l.objects {
        bytes += size;
        let here = if store.contains(id) { "yes" } else { "no" };
        println!("{id:<64}  {size:>12}  {here}");
    }
    eprintln!(
        "remote `{name}` ({}): {} object(s), {}, {} action record(s), {} journal(s)",
        r.url(),
        l.objects.len(),
        rate(bytes, 0.0),
        l.actions,
        l.journals
    );
    Ok(())
}

/// `remote verify`: every object and action record re-hashed; a problem is
/// listed and fails the command.
fn verify(store: &Store, name: Option<&str>, jobs: usize) -> Result<()> {
    let r = open(store, name)?;
    let t = Transfer {
        jobs: jobs.max(1),
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..Default::default()
    };
    let v = r.verify(&t)?;
    for p in &v.problems {
        println!("CORRUPT\t{p}");
    }
    if !v.problems.is_empty() {
        bail!(
            "remote `{}` ({}): {} problem(s) (listed above)",
            r.name(),
            r.url(),
            v.problems.len()
        );
    }
    eprintln!(
        "remote `{}`: {} object(s) ({}) and {} action record(s) verified, all intact",
        r.name(),
        v.objects,
        rate(v.bytes, 0.0),
        v.actions
    );
    Ok(())
}

pub fn push(store: &Store, a: PushArgs) -> Result<()> {
    let mut roots = Vec::new();
    for spec in &a.ids {
        roots.push(store.resolve(spec)?);
    }
    if let Some(p) = &a.pipeline {
        roots.extend(crate::run_cmd::pipeline_outputs(store, p, &a.sets)?);
    }
    if let Some(dir) = &a.report {
        roots.extend(ragprobe_report::report_inputs(dir)?);
    }
    roots.sort();
    roots.dedup();
    if roots.is_empty() {
        bail!("nothing to push: give artifact ids, --pipeline FILE or --report DIR");
    }
    let remote = open(store, a.transfer.remote.as_deref())?;
    let started = Instant::now();
    let r = remote.push(store, &roots, &transfer(&a.transfer, a.force))?;
    let secs = started.elapsed().as_secs_f64();
    for c in &r.conflicts {
        tracing::warn!("remote `{}`: action {c}", remote.name());
    }
    eprintln!(
        "pushed to `{}` ({}): {} object(s) in the lineage: {} sent ({}), {} already there; {} action record(s) written, {} already there{}; {:.1}s",
        remote.name(),
        remote.url(),
        r.objects,
        r.sent,
        rate(r.bytes_sent, secs),
        r.present,
        r.actions_sent,
        r.actions_present,
        journals_added(a.transfer.with_journals, r.journal_lines),
        secs
    );
    store.log_run(serde_json::json!({"stage": "push", "remote": remote.name(), "objects": r.objects, "sent": r.sent, "bytes": r.bytes_sent, "seconds": secs}));
    Ok(())
}

/// The summary's note on journal lines, when journals were transferred.
fn journals_added(with_journals: bool, lines: usize) -> String {
    if with_journals {
        format!("; {lines} journal line(s) added")
    } else {
        String::new()
    }
}

pub fn pull(store: &Store, a: PullArgs) -> Result<crate::StageOut> {
    let remote = open(store, a.transfer.remote.as_deref())?;
    let started = Instant::now();
    let r = remote.pull(store, &a.ids, &transfer(&a.transfer, false))?;
    let secs = started.elapsed().as_secs_f64();
    for c in &r.conflicts {
        tracing::warn!("action {c}");
    }
    eprintln!(
        "pulled from `{}` ({}): {} object(s) in the lineage: {} fetched ({}), {} already here; {} action record(s) stored, {} already here{}; {:.1}s",
        remote.name(),
        remote.url(),
        r.objects,
        r.fetched,
        rate(r.bytes_fetched, secs),
        r.present,
        r.actions,
        r.actions_present,
        journals_added(a.transfer.with_journals, r.journal_lines),
        secs
    );
    store.log_run(serde_json::json!({"stage": "pull", "remote": remote.name(), "objects": r.objects, "fetched": r.fetched, "bytes": r.bytes_fetched, "seconds": secs}));
    let mut out = crate::StageOut::default();
    for id in &r.roots {
        let m = store.manifest(id)?;
        out.outputs.push((m.kind, id.clone()));
    }
    Ok(out)
}
