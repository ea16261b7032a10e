//! `ragprobe data ls | get`: datasets by name (the registry in
//! `ragprobe-data`).

use anyhow::Result;
use clap::Subcommand;
use ragprobe_artifact::Store;
use ragprobe_data::{Access, DataOptions, Dataset, DATASETS};

#[derive(Subcommand, Debug)]
pub enum DataCmd {
    /// Every dataset the reproduction pipelines read: name, study, source,
    /// revision, size, license, and whether it is here already.
    Ls,
    /// Download a dataset (what is missing; resumable), verify it, lay it out
    /// under the data directory as the pipelines read it, and ingest it.
    /// Prints `<kind>\t<id>` per artifact, as `ingest` does.
    ///
    /// Environment: HF_ENDPOINT (hub mirror), HF_TOKEN (gated repositories),
    /// HF_HOME / HF_HUB_CACHE (hub cache), HF_HUB_OFFLINE=1 (no network),
    /// RAGPROBE_MIRROR (replaces scheme and host of other downloads),
    /// RAGPROBE_DATA (the data directory; default <store>/datasets).
    Get {
        /// The dataset's name (`ragprobe data ls`).
        #[arg(required_unless_present = "study", conflicts_with = "study")]
        name: Option<String>,
        /// Every dataset of a study instead (imperfect-retrieval, nomiracl,
        /// rag-stress, rgb): the ones to place by hand must be there already.
        #[arg(long)]
        study: Option<String>,
        /// Only these parts (a language, a testbed file), comma-separated.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Lay the files out here instead of the data directory.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
    /// Serve the files under a directory on 127.0.0.1 (by their paths), as a
    /// mirror for RAGPROBE_MIRROR and HF_ENDPOINT, with range requests
    /// (tests, air-gapped checks): files under
    /// `datasets/<owner>/<name>/resolve/<commit>/` are served as that hub
    /// repository at that commit. Prints its URL, then serves until
    /// --max-seconds.
    #[command(hide = true)]
    MirrorServer {
        /// The directory whose files are served.
        #[arg(long)]
        root: std::path::PathBuf,
        /// Stop after this many seconds.
        #[arg(long, default_value_t = 600)]
        max_seconds: u64,
    },
}

fn source_of(d: &Dataset) -> String {
    match d
        .parts
        .first()
        .and_then(|p| p.files.first())
        .map(|f| f.source)
    {
        Some(ragprobe_data::Source::Hub { repo, revision, .. }) => format!("hf:{repo}@{revision}"),
        Some(ragprobe_data::Source::Url(u)) => {
            u.rsplit_once('/').map_or(u, |(base, _)| base).to_string()
        }
        None => String::new(),
    }
}

pub fn run(store: &Store, cmd: DataCmd) -> Result<crate::StageOut> {
    match cmd {
        DataCmd::Ls => {
            let opts = DataOptions::from_env(store.root());
            println!(
                "{:<12} {:<20} {:>6} {:>10} {:<8} {:<40} license",
                "name", "study", "parts", "size", "here", "source"
            );
            for d in DATASETS {
                let parts: Vec<&ragprobe_data::Part> = d.parts.iter().collect();
                let size = Dataset::bytes(&parts).map_or("unknown".to_string(), megabytes);
                let here = ragprobe_data::parts_here(d, &opts.data_dir);
                let here = match (&d.access, here) {
                    (_, n) if n == d.parts.len() => "yes".to_string(),
                    (Access::Manual(_), _) => "by hand".into(),
                    (_, 0) => "no".into(),
                    (_, n) => format!("{n}/{}", d.parts.len()),
                };
                println!(
                    "{:<12} {:<20} {:>6} {:>10} {:<8} {:<40} {}",
                    d.name,
                    d.study,
                    d.parts.len(),
                    size,
                    here,
                    source_of(d),
                    d.license
                );
            }
            Ok(crate::StageOut::default())
        }
        DataCmd::Get {
            name,
            study,
            only,
            dir,
        } => {
            let mut opts = DataOptions::from_env(store.root());
            opts.only = only;
            if let Some(d) = dir {
                opts.data_dir = d;
            }
            let names: Vec<&str> = match (&name, &study) {
                (Some(n), _) => vec![n.as_str()],
                (None, Some(s)) => {
                    let names = study_datasets(s, &opts)?;
                    if names.is_empty() {
                        anyhow::bail!("study `{s}` has no datasets to download");
                    }
                    names
                }
                (None, None) => anyhow::bail!("give a dataset name or --study"),
            };
            let mut out = crate::StageOut {
                cached: true,
                ..Default::default()
            };
            for n in names {
                get_one(store, n, &opts, &mut out)?;
            }
            Ok(out)
        }
        DataCmd::MirrorServer { root, max_seconds } => {
            let mut served = ragprobe_data::test_server::Served::default();
            add_files(&root, &root, &mut served)?;
            let server = ragprobe_data::test_server::TestServer::start(served)?;
            println!("{}", server.url());
            use std::io::Write;
            std::io::stdout().flush()?;
            std::thread::sleep(std::time::Duration::from_secs(max_seconds));
            Ok(crate::StageOut::default())
        }
    }
}

/// Every file under `dir`, served at its path relative to `root`.
fn add_files(
    root: &std::path::Path,
    dir: &std::path::Path,
    served: &mut ragprobe_data::test_server::Served,
) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            add_files(root, &p, served)?;
        } else if p.is_file() {
            let rel = p.strip_prefix(root)?.to_string_lossy().replace('\\', "/");
            let bytes = std::fs::read(&p)?;
            let hub: Vec<&str> = rel.splitn(6, '/').collect();
            if let ["datasets", owner, name, "resolve", commit, path] = hub.as_slice() {
                let repo = format!("{owner}/{name}");
                served
                    .revisions
                    .insert((repo.clone(), commit.to_string()), commit.to_string());
                served
                    .hub_files
                    .insert((repo, commit.to_string(), path.to_string()), bytes);
            } else {
                served.plain_files.insert(format!("/{rel}"), bytes);
            }
        }
    }
    Ok(())
}

/// The downloadable datasets of `study`; an error with the instructions
/// of each dataset placed by hand whose files are missing.
fn study_datasets(study: &str, opts: &DataOptions) -> Result<Vec<&'static str>> {
    let of: Vec<&Dataset> = DATASETS.iter().filter(|d| d.study == study).collect();
    if of.is_empty() {
        let mut studies: Vec<&str> = DATASETS.iter().map(|d| d.study).collect();
        studies.sort();
        studies.dedup();
        anyhow::bail!("unknown study `{study}` (studies: {})", studies.join(", "));
    }
    let missing: Vec<String> = of
        .iter()
        .filter_map(|d| match d.access {
            Access::Manual(how) if ragprobe_data::parts_here(d, &opts.data_dir) < d.parts.len() => {
                Some(format!("`{}`: {how}", d.name))
            }
            _ => None,
        })
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "study `{study}` needs datasets placed by hand: {}",
            missing.join("; ")
        );
    }
    Ok(of
        .iter()
        .filter(|d| d.access == Access::Download)
        .map(|d| d.name)
        .collect())
}

/// `data get` of one dataset, its outputs added to `out`.
fn get_one(store: &Store, name: &str, opts: &DataOptions, out: &mut crate::StageOut) -> Result<()> {
    let r = ragprobe_data::get(store, name, opts)?;
    for p in &r.parts {
        tracing::info!(
            "data: {} {}: {}",
            r.dataset.name,
            p.part,
            if p.cached {
                "cached (no download)".to_string()
            } else {
                format!("{} file(s) downloaded, ingested", p.fetched)
            }
        );
        out.outputs
            .extend(p.outputs.iter().map(|o| (o.kind.clone(), o.id.clone())));
    }
    out.cached &= r.parts.iter().all(|p| p.cached);
    eprintln!("data: {} laid out in {}", r.dataset.name, r.dir.display());
    Ok(())
}

/// A download size as `data ls` and `run --dry-run` show it (decimal MB).
pub fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
