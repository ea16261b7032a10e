//! Datasets by name (`ragprobe data ls | get`): the [`registry`] of every
//! input the reproduction pipelines read, downloaded through the Hugging
//! Face hub protocol or plain HTTPS ([`fetch`]), verified, laid out under
//! `<data dir>/<dataset>/` with the names the pipelines read, and ingested
//! into the store with the pipeline's own ingest options.
//!
//! **Verification.** A file whose SHA-256 the registry pins must have it; a
//! file without one has its hash recorded on first download in
//! `<data dir>/<dataset>/.hashes.json` (trust on first use), and a later
//! download with other bytes is refused, naming both hashes. A refused
//! file never reaches the store.
//!
//! **Caching.** A part whose files are laid out with their recorded hashes
//! and whose artifacts are in the store is a cache hit: no network, no
//! reading. A download killed at any moment resumes: hub files from
//! `hf-hub`'s `.sync.part`, HTTPS files from their `.part` with a range
//! request; finished files are not fetched again.
//!
//! **Environment** ([`DataOptions::from_env`]): `HF_ENDPOINT` (hub mirror),
//! `HF_TOKEN` (gated repositories), `HF_HUB_CACHE` / `HF_HOME` (the hub
//! cache), `HF_HUB_OFFLINE=1` (no network: what is cached is used, what is
//! not is named), `RAGPROBE_MIRROR` (replaces the scheme and host of every
//! other download), `RAGPROBE_DATA` (the data directory). A token never
//! appears in an error, a log or an artifact.

pub mod fetch;
pub mod registry;
pub mod test_server;
mod unpack;

use ragprobe_artifact::{Store, Written};
use ragprobe_ingest::{ingest, IngestOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use registry::{find, Access, Dataset, FileSpec, Part, Source, Take, Unpack, DATASETS};

/// What can go wrong getting a dataset. Every message is one line naming
/// the dataset, the file and the cause.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// No such dataset or part.
    #[error("{0}")]
    Unknown(String),
    /// The dataset cannot be downloaded automatically: what to do instead.
    #[error("{0}")]
    Manual(String),
    /// A download failed (network, HTTP status, disk).
    #[error("{0}")]
    Fetch(String),
    /// The source has no such file (HTTP 404 at the pinned revision).
    #[error("{0}")]
    NotFound(String),
    /// Offline, and the file was never downloaded.
    #[error("{0}")]
    Offline(String),
    /// A file's bytes are not the expected ones.
    #[error("{0}")]
    Mismatch(String),
    /// An archive could not be unpacked (not a zip, a member missing or
    /// unsafe, a record that is not JSON).
    #[error("{0}")]
    Archive(String),
    /// Ingesting the downloaded files failed.
    #[error(transparent)]
    Ingest(#[from] ragprobe_ingest::IngestError),
    /// The store failed.
    #[error(transparent)]
    Artifact(#[from] ragprobe_artifact::ArtifactError),
}

/// Where and how to download.
#[derive(Debug, Clone)]
pub struct DataOptions {
    /// The hub's base URL (`HF_ENDPOINT`; default `https://huggingface.co`).
    pub hub_endpoint: String,
    /// A token for gated repositories (`HF_TOKEN`).
    pub hub_token: Option<String>,
    /// The hub cache (`HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub`).
    pub hub_cache: PathBuf,
    /// No network (`HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// Replaces the scheme and host of every non-hub URL (`RAGPROBE_MIRROR`).
    pub mirror: Option<String>,
    /// Where datasets are laid out (`RAGPROBE_DATA`, else `<store>/datasets`).
    pub data_dir: PathBuf,
    /// Only these parts (all when empty).
    pub only: Vec<String>,
    /// Attempts per file on transport failures.
    pub retries: u32,
    /// Progress bars on stderr.
    pub progress: bool,
}

impl DataOptions {
    /// The options the environment sets, for a store at `store_root`.
    pub fn from_env(store_root: &Path) -> DataOptions {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let hub_cache = var("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| var("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .unwrap_or_else(|| home.join(".cache/huggingface/hub"));
        DataOptions {
            hub_endpoint: var("HF_ENDPOINT").unwrap_or_else(|| "https://huggingface.co".into()),
            hub_token: var("HF_TOKEN"),
            hub_cache,
            offline: var("HF_HUB_OFFLINE")
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            mirror: var("RAGPROBE_MIRROR"),
            data_dir: var("RAGPROBE_DATA")
                .map(PathBuf::from)
                .unwrap_or_else(|| store_root.join("datasets")),
            only: Vec::new(),
            retries: 5,
            progress: true,
        }
    }
}

/// What `data get` did for one part.
#[derive(Debug, Clone)]
pub struct PartReport {
    /// The part's name.
    pub part: String,
    /// Its artifacts (questions, contexts, corpus as the format gives).
    pub outputs: Vec<Written>,
    /// Files downloaded now.
    pub fetched: usize,
    /// True when nothing was downloaded nor read (a cache hit).
    pub cached: bool,
}

/// What `data get` did.
#[derive(Debug, Clone)]
pub struct DataReport {
    /// The dataset.
    pub dataset: &'static Dataset,
    /// The directory its files are laid out in (the study pipeline's `data`).
    pub dir: PathBuf,
    /// Each part fetched.
    pub parts: Vec<PartReport>,
}

/// Hashes recorded for a study directory's files (name -> SHA-256, or
/// `absent` for an optional file the source lacks), and each part's
/// outputs (`<dataset>/<part>` -> kind, id, rows), in `<dir>/.hashes.json`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Record {
    files: BTreeMap<String, String>,
    outputs: BTreeMap<String, Vec<(String, String, u64)>>,
}

fn read_record(dir: &Path) -> Record {
    std::fs::read(dir.join(".hashes.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn write_record(dir: &Path, r: &Record) -> Result<(), DataError> {
    let path = dir.join(".hashes.json");
    let tmp = dir.join(".hashes.json.part");
    let text = serde_json::to_vec_pretty(r).expect("record serialises");
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| DataError::Fetch(format!("{}: {e}", path.display())))
}

/// Holds `<dir>/.lock` while a process lays out or ingests a study
/// directory: steps of one pipeline (and two runs) fetching the same
/// dataset share its files and its `.hashes.json`, so they take turns.
fn lock_dir(dir: &Path) -> Result<std::fs::File, DataError> {
    let path = dir.join(".lock");
    let fail = |e: std::io::Error| DataError::Fetch(format!("{}: {e}", path.display()));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(fail)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::info!("{}: in use by another download; waiting", dir.display());
            file.lock().map_err(fail)?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
    }
    Ok(file)
}

/// A study directory held for laying out: created, locked against other
/// processes ([`lock_dir`]), its record read, and a downloader runtime.
struct StudyDir {
    dir: PathBuf,
    rt: tokio::runtime::Runtime,
    _lock: std::fs::File,
    record: Record,
}

impl StudyDir {
    fn open(dataset: &Dataset, opts: &DataOptions) -> Result<StudyDir, DataError> {
        let dir = opts.data_dir.join(dataset.study);
        std::fs::create_dir_all(&dir)
            .map_err(|e| DataError::Fetch(format!("{}: {e}", dir.display())))?;
        let rt = runtime()?;
        let _lock = lock_dir(&dir)?;
        let record = read_record(&dir);
        Ok(StudyDir {
            dir,
            rt,
            _lock,
            record,
        })
    }
}

/// Files of one part downloaded at once.
const PARALLEL_FILES: usize = 4;

/// What `.hashes.json` records for an optional file the source lacks.
const ABSENT: &str = "absent";

/// A byte progress bar on stderr (hidden unless `show`).
pub(crate) fn bar(show: bool, total: Option<u64>, what: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    // One display for the files downloading at once.
    static BARS: std::sync::LazyLock<indicatif::MultiProgress> =
        std::sync::LazyLock::new(indicatif::MultiProgress::new);
    let b = BARS.add(indicatif::ProgressBar::new(total.unwrap_or(0)));
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    b.set_prefix(what.to_string());
    b
}

/// How many parts of `dataset` are laid out under `data_dir` (every file
/// there, or recorded as absent from its source).
pub fn parts_here(dataset: &Dataset, data_dir: &Path) -> usize {
    let dir = data_dir.join(dataset.study);
    let record = read_record(&dir);
    dataset
        .parts
        .iter()
        .filter(|p| {
            p.files.iter().all(|f| {
                dir.join(f.name).is_file()
                    || superseded(p, f, &dir)
                    || record.files.get(f.name).is_some_and(|h| h == ABSENT)
            })
        })
        .count()
}

/// Downloads (what is missing), verifies and ingests the parts of dataset
/// `name` that `opts.only` selects.
pub fn get(store: &Store, name: &str, opts: &DataOptions) -> Result<DataReport, DataError> {
    get_dataset(store, find(name).map_err(DataError::Unknown)?, opts)
}

/// [`get`] of a dataset given by its entry (the registry's, or one a test
/// or an extension writes).
pub fn get_dataset(
    store: &Store,
    dataset: &'static Dataset,
    opts: &DataOptions,
) -> Result<DataReport, DataError> {
    let name = dataset.name;
    if let Access::Manual(how) = dataset.access {
        return Err(DataError::Manual(format!(
            "dataset `{name}` cannot be downloaded automatically: {how}"
        )));
    }
    let parts = dataset.select(&opts.only).map_err(DataError::Unknown)?;
    // Held to the end: its lock keeps other runs out of the directory.
    let mut study = StudyDir::open(dataset, opts)?;
    let mut reports = Vec::new();
    for part in parts {
        reports.push(study.get_part(store, dataset, part, opts)?);
    }
    Ok(DataReport {
        dataset,
        dir: study.dir.clone(),
        parts: reports,
    })
}

/// What [`lay_out`] laid out.
#[derive(Debug, Clone)]
pub struct LaidOut {
    /// The directory of the dataset's study (`<data dir>/<study>`).
    pub dir: PathBuf,
    /// What to ingest, the selected parts' in order (files, or a part's
    /// directory).
    pub paths: Vec<PathBuf>,
    /// Files downloaded now.
    pub fetched: usize,
}

/// Downloads (what is missing) and verifies the parts `opts.only` selects,
/// without ingesting them: what a pipeline's ingest step that names the
/// dataset (`fetch = "nomiracl"`) reads with its own options. A dataset
/// that must be placed by hand is used when its files are there, and
/// otherwise its instructions are the error.
pub fn lay_out(dataset: &'static Dataset, opts: &DataOptions) -> Result<LaidOut, DataError> {
    let parts = dataset.select(&opts.only).map_err(DataError::Unknown)?;
    if let Access::Manual(_) = dataset.access {
        return placed_by_hand(dataset, opts);
    }
    let mut study = StudyDir::open(dataset, opts)?;
    let mut out = LaidOut {
        dir: study.dir.clone(),
        paths: Vec::new(),
        fetched: 0,
    };
    for part in parts {
        let (paths, fetched) = study.lay_out_part(dataset, part, opts)?;
        out.paths.extend(paths);
        out.fetched += fetched;
    }
    Ok(out)
}

/// The parts `opts.only` selects of a dataset placed by hand, as
/// [`lay_out`] gives them, when every file is there; otherwise the error
/// names the first missing file and says how to get it. Reads no file and
/// makes no request: a pipeline hashes these paths to key its step.
pub fn placed_by_hand(dataset: &'static Dataset, opts: &DataOptions) -> Result<LaidOut, DataError> {
    let parts = dataset.select(&opts.only).map_err(DataError::Unknown)?;
    let dir = opts.data_dir.join(dataset.study);
    let how = match dataset.access {
        Access::Manual(how) => how,
        Access::Download => "`ragprobe data get` downloads it",
    };
    let mut paths = Vec::new();
    for part in &parts {
        if let Some(f) = part.files.iter().find(|f| !dir.join(f.name).is_file()) {
            return Err(DataError::Manual(format!(
                "dataset `{}`: {} is not there, and the dataset cannot be downloaded automatically: {how}",
                dataset.name,
                dir.join(f.name).display()
            )));
        }
        paths.extend(ingest_paths(
            part,
            &dir,
            part.files.iter().map(|f| dir.join(f.name)),
        ));
    }
    Ok(LaidOut {
        dir,
        paths,
        fetched: 0,
    })
}

/// What is ingested for a part laid out in `dir`: its `ingest` path when it
/// names one, else its files.
fn ingest_paths(part: &Part, dir: &Path, files: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    match part.ingest {
        Some(p) => vec![dir.join(p)],
        None => files.collect(),
    }
}

/// True when `f` is an archive of `part` that is no longer needed: every
/// output [`Part::unpack`] makes of it is there (outputs are renamed into
/// place whole, so one that exists is complete).
fn superseded(part: &Part, f: &FileSpec, dir: &Path) -> bool {
    let mut outputs = part
        .unpack
        .iter()
        .filter(|u| u.archive == f.name)
        .peekable();
    outputs.peek().is_some() && outputs.all(|u| dir.join(u.to).exists())
}

/// A file [`lay_out`] would download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The part it belongs to.
    pub part: &'static str,
    /// Its name in the dataset's directory.
    pub file: &'static str,
    /// Its size, when the registry knows it.
    pub bytes: Option<u64>,
    /// It must be placed by hand.
    pub manual: bool,
}

/// The files of the parts `opts.only` selects that are not laid out yet
/// (nor recorded absent from their source): what a run would download.
/// Reads no file and makes no request.
pub fn pending(dataset: &'static Dataset, opts: &DataOptions) -> Result<Vec<Pending>, DataError> {
    let parts = dataset.select(&opts.only).map_err(DataError::Unknown)?;
    let dir = opts.data_dir.join(dataset.study);
    let record = read_record(&dir);
    Ok(parts
        .iter()
        .flat_map(|p| p.files.iter().map(move |f| (p.name, f)))
        .filter(|(part, f)| {
            !dir.join(f.name).is_file()
                && record.files.get(f.name).is_none_or(|h| h != ABSENT)
                && !parts
                    .iter()
                    .any(|p| p.name == *part && superseded(p, f, &dir))
        })
        .map(|(part, f)| Pending {
            part,
            file: f.name,
            bytes: f.bytes,
            manual: matches!(dataset.access, Access::Manual(_)),
        })
        .collect())
}

/// The identity of the selected parts' sources: each file's name, source
/// (repository, revision and path, or URL) and pinned hash. Neither the
/// mirror nor the data directory is part of it, so a pipeline step that
/// fetches a dataset keys on what it reads, not where from.
pub fn identity(dataset: &'static Dataset, only: &[String]) -> Result<Vec<String>, DataError> {
    let parts = dataset.select(only).map_err(DataError::Unknown)?;
    Ok(parts
        .iter()
        .flat_map(|p| {
            p.files.iter().map(move |f| {
                format!(
                    "{}/{}/{}: {:?} sha256={}",
                    dataset.name,
                    p.name,
                    f.name,
                    f.source,
                    f.sha256.unwrap_or("-")
                )
            })
        })
        .collect())
}

impl StudyDir {
    /// Lays out one part ([`StudyDir::lay_out_part`]) and ingests it, or
    /// reports the artifacts recorded for it when its files are all there
    /// and every one of them is in `store`.
    fn get_part(
        &mut self,
        store: &Store,
        dataset: &Dataset,
        part: &Part,
        opts: &DataOptions,
    ) -> Result<PartReport, DataError> {
        let key = format!("{}/{}", dataset.name, part.name);
        let dir = &self.dir;
        // A cache hit: every file laid out as recorded, every output stored.
        if let Some(outs) = self.record.outputs.get(&key) {
            let record = &self.record;
            let files_ok = part.files.iter().all(|f| match record.files.get(f.name) {
                Some(h) if h == ABSENT => true,
                Some(_) => dir.join(f.name).is_file() || superseded(part, f, dir),
                None => false,
            });
            if files_ok && outs.iter().all(|(_, id, _)| store.contains(id)) {
                return Ok(PartReport {
                    part: part.name.to_string(),
                    outputs: outs
                        .iter()
                        .map(|(kind, id, rows)| Written {
                            kind: kind.clone(),
                            id: id.clone(),
                            rows: *rows,
                        })
                        .collect(),
                    fetched: 0,
                    cached: true,
                });
            }
        }
        let (paths, fetched) = self.lay_out_part(dataset, part, opts)?;
        let (dir, record) = (&self.dir, &mut self.record);
        let ingest_opts = IngestOptions {
            format: Some(dataset.format),
            paths,
            dataset: Some(part.dataset.to_string()),
            lang: part.lang.map(str::to_string),
            evidence_dir: part.evidence.map(|e| dir.join(e)),
            passage_words: 100,
            progress: opts.progress,
            ..Default::default()
        };
        let r = ingest(store, &ingest_opts)?;
        record.outputs.insert(
            key,
            r.outputs
                .iter()
                .map(|o| (o.kind.clone(), o.id.clone(), o.rows))
                .collect(),
        );
        write_record(dir, record)?;
        Ok(PartReport {
            part: part.name.to_string(),
            outputs: r.outputs,
            fetched,
            cached: false,
        })
    }

    /// Downloads what is missing of one part, verifies every file of it, and
    /// returns what is ingested for it (its files, or its `ingest` directory)
    /// with the number of files downloaded now.
    fn lay_out_part(
        &mut self,
        dataset: &Dataset,
        part: &Part,
        opts: &DataOptions,
    ) -> Result<(Vec<PathBuf>, usize), DataError> {
        let StudyDir {
            dir, rt, record, ..
        } = self;
        let dir: &Path = dir;
        let what = |f: &FileSpec| format!("dataset `{}` file `{}`", dataset.name, f.name);
        // The missing files download at once (up to PARALLEL_FILES), each to
        // its own `.part`; then every file is checked in the part's order.
        let mut missing = Vec::new();
        for f in part.files {
            let dest = dir.join(f.name);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    DataError::Fetch(format!("{}: {}: {e}", what(f), parent.display()))
                })?;
            }
            if !dest.is_file() && !superseded(part, f, dir) {
                missing.push((f, dest));
            }
        }
        let results: Vec<Result<(), DataError>> = {
            use futures::StreamExt;
            rt.block_on(
                futures::stream::iter(missing.iter().map(|(f, dest)| {
                    let what = what(f);
                    async move { fetch::fetch(&f.source, dest, opts, &what).await }
                }))
                .buffered(PARALLEL_FILES)
                .collect(),
            )
        };
        let mut outcomes: BTreeMap<&str, Result<(), DataError>> =
            missing.iter().map(|(f, _)| f.name).zip(results).collect();
        let mut fetched = 0;
        let mut paths = Vec::new();
        for f in part.files {
            let dest = dir.join(f.name);
            let what = what(f);
            if superseded(part, f, dir) {
                continue;
            }
            if let Some(outcome) = outcomes.remove(f.name) {
                match outcome {
                    Ok(()) => fetched += 1,
                    Err(DataError::NotFound(m)) if f.optional => {
                        tracing::info!("{m} (optional: skipped)");
                        record.files.insert(f.name.to_string(), ABSENT.into());
                        continue;
                    }
                    // Offline, an optional file not cached may not exist at all.
                    Err(DataError::Offline(m)) if f.optional => {
                        tracing::warn!("{m} (optional: skipped)");
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let got = verify(f, &dest, record, &what)?;
            record.files.insert(f.name.to_string(), got);
            paths.push(dest);
        }
        write_record(dir, record)?;
        for u in part.unpack {
            if !dir.join(u.to).exists() {
                let what = format!("dataset `{}` archive `{}`", dataset.name, u.archive);
                unpack::unpack(&dir.join(u.archive), u, dir, &what)?;
            }
        }
        Ok((ingest_paths(part, dir, paths.into_iter()), fetched))
    }
}

/// The SHA-256 of the file `f` laid out at `dest`, checked against the
/// registry's pinned hash or, failing that, the one recorded at its first
/// download. Other bytes are removed (the next `data get` fetches them
/// again) and refused, naming both hashes.
fn verify(f: &FileSpec, dest: &Path, record: &Record, what: &str) -> Result<String, DataError> {
    let got = fetch::sha256_file(dest).map_err(|e| DataError::Fetch(format!("{what}: {e}")))?;
    let expected = f
        .sha256
        .map(str::to_string)
        .or_else(|| record.files.get(f.name).cloned());
    match expected {
        Some(want) if got != want => {
            let _ = std::fs::remove_file(dest);
            let why = if f.sha256.is_some() {
                "the registry pins"
            } else {
                "was recorded at its first download"
            };
            Err(DataError::Mismatch(format!(
                "{what}: SHA-256 {got}, expected {want} ({why}); the file was removed and nothing was ingested"
            )))
        }
        _ => Ok(got),
    }
}

/// `hf:<owner>/<name>[/<path>][@<revision>]` split into (repo, path, revision);
/// the revision defaults to `main`.
fn parse_hf(spec: &str, with_path: bool) -> Result<(String, String, String), DataError> {
    let bad = || {
        DataError::Unknown(format!(
            "model `{spec}`: expected hf:<owner>/<name>{}[@<revision>]",
            if with_path { "/<file>" } else { "" }
        ))
    };
    let rest = spec.strip_prefix("hf:").ok_or_else(bad)?;
    let (path_part, revision) = match rest.rsplit_once('@') {
        Some((p, r)) if !r.is_empty() && !r.contains('/') => (p, r),
        _ => (rest, "main"),
    };
    let mut it = path_part.splitn(3, '/');
    let (owner, name, file) = (it.next().unwrap_or(""), it.next().unwrap_or(""), it.next());
    if owner.is_empty() || name.is_empty() || file.is_some() != with_path {
        return Err(bad());
    }
    let file = file.unwrap_or("");
    if with_path && file.split('/').any(|s| s.is_empty() || s == "..") {
        return Err(bad());
    }
    Ok((
        format!("{owner}/{name}"),
        file.to_string(),
        revision.to_string(),
    ))
}

fn runtime() -> Result<tokio::runtime::Runtime, DataError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| DataError::Fetch(format!("starting the downloader: {e}")))
}

/// A model file named `hf:<owner>/<name>/<path in the repository>[@<revision>]`
/// (the revision defaults to `main`), fetched through the hub protocol into
/// the hub cache (`HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_OFFLINE` as for
/// datasets) and returned as a path there. A file already cached is used
/// without the network. The caller hashes the file: its content, not the
/// name, is the model's identity in cache keys.
pub fn model_file(spec: &str, opts: &DataOptions) -> Result<PathBuf, DataError> {
    let (repo, file, revision) = parse_hf(spec, true)?;
    let what = format!("model `{spec}`");
    runtime()?.block_on(fetch::hub_file(
        hf_hub::RepoType::Model,
        &repo,
        &revision,
        &file,
        opts,
        &what,
    ))
}

/// The files `names` of the model repository `hf:<owner>/<name>[@<revision>]`
/// (an encoder's `config.json`, `tokenizer.json`, `model.safetensors`),
/// fetched as [`model_file`] does; returns the directory holding them all
/// (the hub cache's snapshot of that revision).
pub fn model_dir(spec: &str, names: &[&str], opts: &DataOptions) -> Result<PathBuf, DataError> {
    let (repo, _, revision) = parse_hf(spec, false)?;
    let rt = runtime()?;
    let mut dir = None;
    for name in names {
        let what = format!("model `{spec}` file `{name}`");
        let p = rt.block_on(fetch::hub_file(
            hf_hub::RepoType::Model,
            &repo,
            &revision,
            name,
            opts,
            &what,
        ))?;
        dir = p.parent().map(Path::to_path_buf);
    }
    dir.ok_or_else(|| DataError::Unknown(format!("model `{spec}`: no files named")))
}
