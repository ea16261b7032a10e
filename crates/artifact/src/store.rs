use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{io_err, ArtifactError, Result};
use crate::kinds;
use crate::manifest::{Manifest, Recipe, MANIFEST_KEY};
use crate::writer::{publish, ArtifactWriter, Written};
use crate::{is_full_id, sha256_reader, RAGPROBE_VERSION};

/// One output of an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputRef {
    /// The artifact's kind.
    pub kind: String,
    /// The artifact id (SHA-256 of its bytes).
    pub id: String,
    /// Rows in the artifact.
    pub rows: u64,
}

impl From<&Written> for OutputRef {
    fn from(w: &Written) -> Self {
        OutputRef {
            kind: w.kind.clone(),
            id: w.id.clone(),
            rows: w.rows,
        }
    }
}

impl From<&OutputRef> for Written {
    fn from(o: &OutputRef) -> Self {
        Written {
            kind: o.kind.clone(),
            id: o.id.clone(),
            rows: o.rows,
        }
    }
}

/// A finished stage invocation: its recipe and the artifacts it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The action key ([`Recipe::key`]).
    pub key: String,
    /// The recipe the stage ran with.
    pub recipe: Recipe,
    /// The artifacts it made.
    pub outputs: Vec<OutputRef>,
}

impl ActionRecord {
    /// The record's one output of `kind`. [`Store::cached`] guarantees one
    /// for each kind the caller named; an error otherwise (never a panic).
    pub fn output(&self, kind: &str) -> Result<Written> {
        let mut found = self.outputs.iter().filter(|o| o.kind == kind);
        match (found.next(), found.next()) {
            (Some(o), None) => Ok(Written::from(o)),
            _ => Err(ArtifactError::Other(format!(
                "action record {}: no single `{kind}` output",
                &self.key[..self.key.len().min(12)]
            ))),
        }
    }
}

/// A step held by this process ([`Store::lock_action`]); released on drop.
#[derive(Debug)]
pub struct ActionLock {
    _file: File,
}

/// A stored object, as `artifacts ls` lists it.
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    /// The object's id.
    pub id: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its manifest, or why it could not be read.
    pub manifest: Result<Manifest, String>,
}

/// A problem `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyProblem {
    /// The object's id.
    pub id: String,
    /// The object's file in the store.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

/// What `gc` removed.
#[derive(Debug, Clone, Default)]
pub struct GcReport {
    /// Objects kept because something live refers to them.
    pub kept: usize,
    /// Ids of the objects removed (or that would be, in a dry run).
    pub removed: Vec<String>,
    /// Total size of the removed objects.
    pub removed_bytes: u64,
    /// Stale temp files removed (or that would be, in a dry run).
    pub removed_tmp: usize,
    /// Temp files kept because a writer may still be using them.
    pub kept_tmp: usize,
}

/// Where a store looks for what it lacks: a remote (read-through). Set
/// with [`Store::with_fallback`]; consulted when an action record or an
/// artifact asked for is not in the store.
pub trait Fallback: Send + Sync {
    /// Bring the outputs of action `key` (and their lineage) into `store`,
    /// with the record. False when the remote has no such action.
    fn fetch_action(&self, store: &Store, key: &str) -> Result<bool>;
    /// Bring the artifact `spec` names (a full id or a unique prefix) into
    /// `store`; its id, or `None` when the remote lacks it.
    fn fetch_object(&self, store: &Store, spec: &str) -> Result<Option<String>>;
}

/// A store directory (see the crate docs for its layout).
#[derive(Clone)]
pub struct Store {
    root: PathBuf,
    fallback: Option<std::sync::Arc<dyn Fallback>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("fallback", &self.fallback.is_some())
            .finish()
    }
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Store {
    /// Open (creating if needed) the store at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Store> {
        let root = root.into();
        for sub in ["objects", "actions", "pins", "tmp", "log", "indexes"] {
            let d = root.join(sub);
            std::fs::create_dir_all(&d).map_err(io_err(&d))?;
        }
        Ok(Store {
            root,
            fallback: None,
        })
    }

    /// This store, reading through to `fallback` for what it lacks.
    pub fn with_fallback(mut self, fallback: std::sync::Arc<dyn Fallback>) -> Store {
        self.fallback = Some(fallback);
        self
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of object `id`: `objects/<id>.parquet`.
    pub fn object_path(&self, id: &str) -> PathBuf {
        self.root.join("objects").join(format!("{id}.parquet"))
    }

    fn action_path(&self, key: &str) -> PathBuf {
        self.root.join("actions").join(format!("{key}.json"))
    }

    /// A fresh temporary path inside the store (same filesystem as objects,
    /// so the final rename is atomic).
    pub fn tmp_path(&self, suffix: &str) -> PathBuf {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        self.root
            .join("tmp")
            .join(format!("{}-{nanos}-{n}{suffix}", std::process::id()))
    }

    /// Start writing an artifact with an explicit schema.
    pub fn writer_with_schema(
        &self,
        kind: &str,
        schema_version: u32,
        schema: SchemaRef,
        recipe: &Recipe,
    ) -> Result<ArtifactWriter> {
        let manifest = Manifest {
            kind: kind.to_string(),
            schema_version,
            ragprobe_version: RAGPROBE_VERSION.to_string(),
            recipe: recipe.for_manifest(),
            rows: 0,
            details: serde_json::Value::Null,
        };
        ArtifactWriter::create(
            self.tmp_path(".parquet.tmp"),
            self.root.join("objects"),
            schema,
            manifest,
        )
    }

    /// The action record for `recipe`, if the stage already ran with it and
    /// every output is still in the store. With a fallback, a step that
    /// ran elsewhere is fetched (record, outputs and lineage) first.
    ///
    /// Guarantees, on `Some`: the record holds one output of each kind in
    /// `kinds` (so a caller may index by kind without checking again), every
    /// output's bytes hash to its id, and every output's own manifest says
    /// it was made by this recipe ([`Store::check_record_outputs`]). A
    /// record that fails any of these is not a cache hit: the stage runs
    /// again and its fresh record replaces the bad one.
    pub fn cached(&self, recipe: &Recipe, kinds: &[&str]) -> Result<Option<ActionRecord>> {
        let hit = self.cached_here(recipe, kinds)?;
        match (&hit, &self.fallback) {
            (None, Some(f)) if f.fetch_action(self, &recipe.key())? => {
                self.cached_here(recipe, kinds)
            }
            _ => Ok(hit),
        }
    }

    fn cached_here(&self, recipe: &Recipe, kinds: &[&str]) -> Result<Option<ActionRecord>> {
        let path = self.action_path(&recipe.key());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ArtifactError::Io { path, error: e }),
        };
        let record: ActionRecord = match serde_json::from_str(&text) {
            Ok(r) if record_ok(&r) => r,
            Ok(_) => {
                tracing::warn!("{}: action record with an invalid output id or kind; ignored, running the stage again", path.display());
                return Ok(None);
            }
            Err(e) => {
                tracing::warn!(
                    "{}: unreadable action record ({e}); running the stage again",
                    path.display()
                );
                return Ok(None);
            }
        };
        if record.key != recipe.key() || record.recipe != *recipe {
            tracing::warn!(
                "{}: the action record is for another recipe; ignored, running the stage again",
                path.display()
            );
            return Ok(None);
        }
        if let Some(k) = kinds
            .iter()
            .find(|k| record.outputs.iter().filter(|o| o.kind == **k).count() != 1)
        {
            tracing::warn!(
                "{}: the action record does not name exactly one `{k}` output; ignored, running the stage again",
                path.display()
            );
            return Ok(None);
        }
        if !record
            .outputs
            .iter()
            .all(|o| self.object_path(&o.id).is_file())
        {
            tracing::info!(
                "action {} has outputs missing from the store; running the stage again",
                &record.key[..12]
            );
            return Ok(None);
        }
        // A cache hit hands out only verified outputs: a corrupted object is
        // removed and the stage runs again, which writes the same bytes back
        // (the store heals itself).
        for o in &record.outputs {
            if let Err(e) = self.verify_object(&o.id) {
                tracing::warn!("cached output {} of action {} is damaged ({e}); removing it and running the stage again", &o.id[..12], &record.key[..12]);
                let _ = std::fs::remove_file(self.object_path(&o.id));
                return Ok(None);
            }
        }
        if let Err(e) = self.check_record_outputs(&record) {
            tracing::warn!("{e}; ignored, running the stage again");
            return Ok(None);
        }
        Ok(Some(record))
    }

    /// Checks a record against what its outputs' own manifests say: each
    /// output is of the kind the record names, holds the rows it names, and
    /// was made by the record's recipe (stage, version, parameters, inputs,
    /// resources) or by one of its shards ([`Recipe::shard`]). Every output
    /// must be in the store.
    ///
    /// A record's key ties it to a recipe, but only the outputs' manifests,
    /// inside the hashed bytes, tie the outputs to that recipe: without this
    /// check a record kept its key and recipe while naming another step's
    /// outputs (a forged or mixed-up record from a remote), and the stage
    /// answered "cached" with the wrong artifact.
    pub fn check_record_outputs(&self, record: &ActionRecord) -> Result<()> {
        check_record_against(record, |o| self.manifest(&o.id))
    }

    /// Holds the step `recipe` for this process until the guard is dropped:
    /// another process (or thread) asking for the same recipe waits here,
    /// then finds the step cached instead of making every model request a
    /// second time (two concurrent `run`s of one pipeline on one store sent
    /// each request twice). The lock is the kernel's (`flock`): a process
    /// killed while holding it releases it. Take it before [`Store::cached`].
    pub fn lock_action(&self, recipe: &Recipe) -> Result<ActionLock> {
        let key = recipe.key();
        let dir = self.root.join("locks");
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let path = dir.join(format!("{key}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::info!(
                    "{} step {}: another process is running it; waiting for it to finish",
                    recipe.stage,
                    &key[..12]
                );
                file.lock().map_err(io_err(&path))?;
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&path)(e)),
        }
        Ok(ActionLock { _file: file })
    }

    /// Record that `recipe` produced `outputs` (atomically).
    pub fn record_action(&self, recipe: &Recipe, outputs: &[Written]) -> Result<ActionRecord> {
        let record = ActionRecord {
            key: recipe.key(),
            recipe: recipe.clone(),
            outputs: outputs.iter().map(OutputRef::from).collect(),
        };
        let text = serde_json::to_string_pretty(&record).expect("action record serialises");
        self.write_atomic(&self.action_path(&record.key), text.as_bytes())?;
        Ok(record)
    }

    fn write_atomic(&self, dest: &Path, bytes: &[u8]) -> Result<()> {
        let tmp = self.tmp_path(".tmp");
        let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
        drop(f);
        publish(&tmp, dest)
    }

    /// Append one JSON line to the run log (wall-clock facts; never hashed).
    pub fn log_run(&self, mut event: serde_json::Value) {
        let path = self.root.join("log").join("runs.jsonl");
        if let Some(obj) = event.as_object_mut() {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            obj.insert("unix_time".into(), secs.into());
        }
        let line = format!("{event}\n");
        let res = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = res {
            tracing::warn!("{}: could not append to the run log: {e}", path.display());
        }
    }

    /// Ids of every object in the store, sorted.
    pub fn ids(&self) -> Result<Vec<String>> {
        let dir = self.root.join("objects");
        let mut ids = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_suffix(".parquet") {
                if is_full_id(id) {
                    ids.push(id.to_string());
                }
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Resolve what a user typed to an artifact id: a full id, a unique id
    /// prefix (at least 4 hex digits), or a path to a `.parquet` file (which
    /// is imported into the store first).
    pub fn resolve(&self, spec: &str) -> Result<String> {
        let as_path = Path::new(spec);
        if spec.ends_with(".parquet") || (as_path.is_file() && !is_hex(spec)) {
            return self.import(as_path);
        }
        if !is_hex(spec) || spec.len() < 4 {
            return Err(ArtifactError::NotFound(spec.to_string()));
        }
        let spec_l = spec.to_ascii_lowercase();
        // A full id needs no directory listing (pushing 1,000 ids would
        // otherwise list the objects 1,000 times).
        if self.contains(&spec_l) {
            return Ok(spec_l);
        }
        let matches: Vec<String> = self
            .ids()?
            .into_iter()
            .filter(|id| id.starts_with(&spec_l))
            .collect();
        match matches.len() {
            0 => match &self.fallback {
                Some(f) => f
                    .fetch_object(self, &spec_l)?
                    .ok_or_else(|| ArtifactError::NotFound(spec.to_string())),
                None => Err(ArtifactError::NotFound(spec.to_string())),
            },
            1 => Ok(matches.into_iter().next().unwrap()),
            _ => Err(ArtifactError::Ambiguous {
                prefix: spec.to_string(),
                candidates: matches,
            }),
        }
    }

    /// Resolve and check the artifact's kind.
    pub fn resolve_kind(&self, spec: &str, kind: &str) -> Result<String> {
        let id = self.resolve(spec)?;
        let m = self.manifest(&id)?;
        if m.kind != kind {
            return Err(ArtifactError::WrongKind {
                id,
                expected: kind.to_string(),
                actual: m.kind,
            });
        }
        Ok(id)
    }

    /// The manifest of a stored object (reads the footer only).
    pub fn manifest(&self, id: &str) -> Result<Manifest> {
        read_manifest(&self.object_path(id))
    }

    /// Verify the object's hash, then open it for streaming reads.
    pub fn open_batches(&self, id: &str, batch_size: usize) -> Result<ParquetRecordBatchReader> {
        self.open_reader(id, batch_size, None)
    }

    /// Like [`open_batches`](Self::open_batches), reading only the named
    /// top-level columns; names the file lacks are left out.
    pub fn open_columns(
        &self,
        id: &str,
        batch_size: usize,
        names: &[&str],
    ) -> Result<ParquetRecordBatchReader> {
        self.open_reader(id, batch_size, Some(names))
    }

    /// Verify, check the schema, and open a reader of every column or of
    /// the `names` given.
    fn open_reader(
        &self,
        id: &str,
        batch_size: usize,
        names: Option<&[&str]>,
    ) -> Result<ParquetRecordBatchReader> {
        self.verify_object(id)?;
        let path = self.object_path(id);
        let (manifest, mut builder) = open_footer(&path)?;
        check_columns(id, &path, &manifest, builder.schema())?;
        if let Some(names) = names {
            let roots: Vec<usize> = builder
                .schema()
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| names.contains(&f.name().as_str()))
                .map(|(i, _)| i)
                .collect();
            let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), roots);
            builder = builder.with_projection(mask);
        }
        builder
            .with_batch_size(batch_size)
            .build()
            .map_err(|e| ArtifactError::Parquet {
                path,
                message: e.to_string(),
            })
    }

    /// Read a whole (verified) artifact into memory.
    pub fn read_all(&self, id: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let reader = self.open_batches(id, 8192)?;
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        Ok((schema, batches))
    }

    /// Check that the object's bytes hash to its id. A file hashed before
    /// and unchanged since (same length and modification time, recorded
    /// in `<store>/verified/<id>`) is not hashed again: objects never
    /// change, and at millions of rows hashing every read was a fifth of
    /// an exact dense search. `artifacts verify` always hashes
    /// ([`Self::verify_object_fully`]).
    pub fn verify_object(&self, id: &str) -> Result<()> {
        let path = self.object_path(id);
        let meta = std::fs::metadata(&path).map_err(io_err(&path))?;
        let stamp = file_stamp(&meta);
        let stamp_path = self.root.join("verified").join(id);
        if stamp.is_some() && std::fs::read_to_string(&stamp_path).ok() == stamp {
            return Ok(());
        }
        self.verify_object_fully(id)?;
        record_verified(&self.root, id, &meta);
        Ok(())
    }

    /// Hash the object's bytes and check them against its id.
    pub fn verify_object_fully(&self, id: &str) -> Result<()> {
        let path = self.object_path(id);
        let f = File::open(&path).map_err(io_err(&path))?;
        let actual = sha256_reader(std::io::BufReader::new(f)).map_err(io_err(&path))?;
        if actual != id {
            return Err(ArtifactError::HashMismatch {
                id: id.to_string(),
                actual,
            });
        }
        Ok(())
    }

    /// Every stored object with its size and manifest.
    pub fn list(&self) -> Result<Vec<ObjectInfo>> {
        self.ids()?
            .into_iter()
            .map(|id| {
                let path = self.object_path(&id);
                let bytes = std::fs::metadata(&path).map_err(io_err(&path))?.len();
                let manifest = read_manifest(&path).map_err(|e| e.to_string());
                Ok(ObjectInfo {
                    id,
                    bytes,
                    manifest,
                })
            })
            .collect()
    }

    /// Check every object: hash equals the id, the manifest parses, and the
    /// row count matches. Returns every problem found (empty = healthy).
    pub fn verify(&self) -> Result<Vec<VerifyProblem>> {
        let mut problems = Vec::new();
        for id in self.ids()? {
            let path = self.object_path(&id);
            let res = self
                .verify_object_fully(&id)
                .and_then(|_| check_readable(&path));
            // A damaged object loses its record, so that reads hash (and
            // refuse) it; a sound one gets a fresh record.
            match (&res, std::fs::metadata(&path)) {
                (Ok(()), Ok(meta)) => record_verified(&self.root, &id, &meta),
                _ => {
                    let _ = std::fs::remove_file(self.root.join("verified").join(&id));
                }
            }
            if let Err(e) = res {
                problems.push(VerifyProblem {
                    id: id.clone(),
                    path,
                    message: e.to_string(),
                });
            }
        }
        Ok(problems)
    }

    /// Copy an object out of the store. `dest` may be a directory (the file
    /// is then named `<id>.parquet`, which `import` checks) or a file path.
    pub fn export(&self, id: &str, dest: &Path) -> Result<PathBuf> {
        self.export_with(id, dest, false)
    }

    /// [`Store::export`]: `dest` is a directory (existing, or named with a
    /// trailing `/`) or a file path. An existing target is refused unless
    /// `force`, and a target that is not a regular file (a FIFO, a device,
    /// a directory) always; the copy goes to a temp file beside the target,
    /// synced and renamed, and the temp file never outlives a failure.
    pub fn export_with(&self, id: &str, dest: &Path, force: bool) -> Result<PathBuf> {
        self.verify_object(id)?;
        let as_dir = dest.is_dir() || dest.as_os_str().to_string_lossy().ends_with('/');
        let target = if as_dir {
            if !dest.is_dir() {
                return Err(ArtifactError::Other(format!(
                    "{}: no such directory",
                    dest.display()
                )));
            }
            dest.join(format!("{id}.parquet"))
        } else {
            dest.to_path_buf()
        };
        if let Ok(m) = std::fs::symlink_metadata(&target) {
            if !m.file_type().is_file() {
                return Err(ArtifactError::Other(format!(
                    "{}: exists and is not a regular file; refusing to replace it",
                    target.display()
                )));
            }
            if !force {
                return Err(ArtifactError::Other(format!(
                    "{}: exists; pass --force to overwrite it",
                    target.display()
                )));
            }
        }
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(ArtifactError::Other(format!(
                "{}: no such directory",
                dir.display()
            )));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let result = std::fs::copy(self.object_path(id), &tmp)
            .and_then(|_| File::open(&tmp)?.sync_all())
            .and_then(|_| std::fs::rename(&tmp, &target));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(ArtifactError::Io {
                path: target,
                error: e,
            });
        }
        Ok(target)
    }

    /// Bring a Parquet artifact file into the store and pin it (so `gc` keeps
    /// it). Refused when the file is named `<id>.parquet` and its bytes hash
    /// to something else, when it has no valid manifest, or when its data do
    /// not decode to the row count the manifest records.
    pub fn import(&self, path: &Path) -> Result<String> {
        let f = File::open(path).map_err(io_err(path))?;
        let actual = sha256_reader(std::io::BufReader::new(f)).map_err(io_err(path))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if is_full_id(&stem) && stem != actual {
            return Err(ArtifactError::AlteredImport {
                path: path.to_path_buf(),
                expected: stem,
                actual,
            });
        }
        if self.object_path(&actual).is_file() && self.verify_object_fully(&actual).is_ok() {
            self.pin(&actual)?;
            return Ok(actual);
        }
        check_readable(path).map_err(|e| ArtifactError::BadImport {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let tmp = self.tmp_path(".parquet.tmp");
        std::fs::copy(path, &tmp).map_err(io_err(&tmp))?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(&tmp))?;
        // Hash the copy: the source could change between the two reads.
        let copied = sha256_reader(std::io::BufReader::new(
            File::open(&tmp).map_err(io_err(&tmp))?,
        ))
        .map_err(io_err(&tmp))?;
        if copied != actual {
            let _ = std::fs::remove_file(&tmp);
            return Err(ArtifactError::BadImport {
                path: path.to_path_buf(),
                message: "the file changed while it was being imported".into(),
            });
        }
        publish(&tmp, &self.object_path(&actual))?;
        self.pin(&actual)?;
        tracing::info!("imported {} as {actual}", path.display());
        Ok(actual)
    }

    /// Move a downloaded file into the store as object `id`: its bytes must
    /// hash to `id` and its manifest must be valid; then it is renamed into place
    /// (atomic). On any failure the file stays where it is, for the caller
    /// to remove. Used by `artifacts pull`, which trusts no remote. Returns
    /// the object's manifest.
    pub fn adopt(&self, file: &Path, id: &str) -> Result<Manifest> {
        let f = File::open(file).map_err(io_err(file))?;
        let actual = sha256_reader(std::io::BufReader::new(f)).map_err(io_err(file))?;
        self.adopt_hashed(file, id, &actual)
    }

    /// [`Store::adopt`] for a file whose SHA-256 the caller computed over
    /// the bytes as it wrote them (a download hashed on the way), saving a
    /// second read. The file is synced here before it is renamed.
    pub fn adopt_hashed(&self, file: &Path, id: &str, actual: &str) -> Result<Manifest> {
        if !is_full_id(id) {
            return Err(ArtifactError::Other(format!(
                "{id:?} is not an artifact id"
            )));
        }
        if actual != id {
            return Err(ArtifactError::HashMismatch {
                id: id.to_string(),
                actual: actual.to_string(),
            });
        }
        // The bytes are the ones asked for; their footer must still be a
        // manifest this build reads (decoding every row is left to the
        // readers, which check columns as they go).
        let manifest = read_manifest(file)?;
        File::open(file)
            .and_then(|f| f.sync_all())
            .map_err(io_err(file))?;
        publish(file, &self.object_path(id))?;
        Ok(manifest)
    }

    /// True when object `id` is in the store (present; not verified).
    pub fn contains(&self, id: &str) -> bool {
        is_full_id(id) && self.object_path(id).is_file()
    }

    /// The action record stored under `key`, as it is (its outputs may be
    /// missing); `None` when there is none or it is unreadable.
    pub fn action_record(&self, key: &str) -> Option<ActionRecord> {
        if !is_full_id(key) {
            return None;
        }
        std::fs::read_to_string(self.action_path(key))
            .ok()
            .and_then(|t| serde_json::from_str::<ActionRecord>(&t).ok())
            .filter(record_ok)
    }

    /// Store an action record made elsewhere (pulled from a remote). Refused
    /// unless it is well formed, its key is its recipe's key, and its
    /// outputs (already in the store) were made by that recipe
    /// ([`Store::check_record_outputs`]), so a tampered record can never
    /// answer for another recipe nor hand out another step's outputs.
    pub fn put_action_record(&self, record: &ActionRecord) -> Result<()> {
        check_record(record)?;
        self.check_record_outputs(record)?;
        let text = serde_json::to_string_pretty(record).expect("action record serialises");
        self.write_atomic(&self.action_path(&record.key), text.as_bytes())
    }

    /// Keep `id` through `gc` although no action record names it.
    pub fn pin(&self, id: &str) -> Result<()> {
        let p = self.root.join("pins").join(id);
        if !p.exists() {
            self.write_atomic(&p, b"")?;
        }
        Ok(())
    }

    /// Every action record in the store.
    pub fn actions(&self) -> Result<Vec<ActionRecord>> {
        let dir = self.root.join("actions");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io_err(&dir))? {
            let path = entry.map_err(io_err(&dir))?.path();
            if path.extension().is_some_and(|e| e == "json") {
                match std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| serde_json::from_str::<ActionRecord>(&t).ok())
                    .filter(record_ok)
                {
                    Some(r) => out.push(r),
                    None => tracing::warn!("{}: unreadable action record, ignored", path.display()),
                }
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Delete objects that no action record and no pin refers to, and any
    /// leftover temporary files. With `dry_run`, only report.
    pub fn gc(&self, dry_run: bool) -> Result<GcReport> {
        self.gc_with(dry_run, STALE_TMP)
    }

    /// [`Store::gc`] with a given age past which a temp file is stale.
    ///
    /// Live: outputs of action records, pinned ids, and — transitively —
    /// every input recorded in a live artifact's manifest (a scores
    /// artifact keeps the responses it was made from, even when a partly
    /// failed generation recorded no action). Temp files are removed only
    /// when not modified for `stale_after`: a writer in progress keeps its
    /// file fresh, so gc never pulls it from under a running stage.
    pub fn gc_with(&self, dry_run: bool, stale_after: std::time::Duration) -> Result<GcReport> {
        let mut live = std::collections::BTreeSet::new();
        for a in self.actions()? {
            live.extend(a.outputs.into_iter().map(|o| o.id));
        }
        let pins = self.root.join("pins");
        for entry in std::fs::read_dir(&pins).map_err(io_err(&pins))? {
            live.insert(
                entry
                    .map_err(io_err(&pins))?
                    .file_name()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        let mut todo: Vec<String> = live.iter().cloned().collect();
        while let Some(id) = todo.pop() {
            let path = self.object_path(&id);
            if !path.is_file() {
                continue;
            }
            if let Ok(m) = read_manifest(&path) {
                for input in m.recipe.inputs {
                    if live.insert(input.clone()) {
                        todo.push(input);
                    }
                }
            }
        }
        let mut report = GcReport::default();
        for id in self.ids()? {
            if live.contains(&id) {
                report.kept += 1;
                continue;
            }
            let path = self.object_path(&id);
            report.removed_bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if !dry_run {
                std::fs::remove_file(&path).map_err(io_err(&path))?;
                let _ = std::fs::remove_file(self.root.join("verified").join(&id));
            }
            report.removed.push(id);
        }
        let tmp = self.root.join("tmp");
        let now = std::time::SystemTime::now();
        for entry in std::fs::read_dir(&tmp).map_err(io_err(&tmp))? {
            let p = entry.map_err(io_err(&tmp))?.path();
            let age = last_modified(&p).and_then(|t| now.duration_since(t).ok());
            if age.is_none_or(|a| a < stale_after) {
                report.kept_tmp += 1;
                continue;
            }
            report.removed_tmp += 1;
            if !dry_run {
                // A directory is an index a build left unfinished.
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
        Ok(report)
    }
}

/// When `path` last changed: a file's mtime; for a directory (an index
/// being built), the newest mtime of the directory and the files in it,
/// since a build that writes through a memory map leaves the directory's
/// own mtime alone.
fn last_modified(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    let own = meta.modified().ok()?;
    if !meta.is_dir() {
        return Some(own);
    }
    let newest = std::fs::read_dir(path)
        .ok()?
        .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
        .max();
    Some(newest.map_or(own, |n| n.max(own)))
}

/// A temp file untouched this long belongs to no running writer.
pub const STALE_TMP: std::time::Duration = std::time::Duration::from_secs(3600);

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Read the manifest from a Parquet file's footer.
pub(crate) fn read_manifest(path: &Path) -> Result<Manifest> {
    let (manifest, _) = read_footer(path)?;
    Ok(manifest)
}

fn read_footer(path: &Path) -> Result<(Manifest, Schema)> {
    let (manifest, builder) = open_footer(path)?;
    Ok((manifest, builder.schema().as_ref().clone()))
}

/// A Parquet reader builder for `path` (footer read once) and its checked
/// manifest.
fn open_footer(path: &Path) -> Result<(Manifest, ParquetRecordBatchReaderBuilder<File>)> {
    let file = File::open(path).map_err(io_err(path))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| ArtifactError::Parquet {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let manifest = manifest_in(path, builder.metadata().file_metadata())?;
    Ok((manifest, builder))
}

/// The checked manifest in a Parquet file's key-value metadata; `path`
/// labels errors.
fn manifest_in(path: &Path, meta: &parquet::file::metadata::FileMetaData) -> Result<Manifest> {
    let text = meta
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == MANIFEST_KEY))
        .and_then(|k| k.value.clone())
        .ok_or_else(|| ArtifactError::NoManifest {
            path: path.to_path_buf(),
        })?;
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|e| ArtifactError::BadManifest {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    check_manifest(path, &manifest)?;
    Ok(manifest)
}

/// The length of an artifact's Parquet footer metadata, from the file's
/// last 8 bytes (length + `PAR1`); `None` when they are not a footer.
pub fn footer_metadata_len(last8: &[u8; 8]) -> Option<u64> {
    parquet::file::metadata::FooterTail::try_new(last8)
        .ok()
        .filter(|t| !t.is_encrypted_footer())
        .map(|t| t.metadata_length() as u64)
}

/// The checked manifest held in an artifact's Parquet footer metadata (the
/// `footer_metadata_len` bytes before the last 8), for readers that fetch
/// only a file's tail (a remote). `name` labels errors.
pub fn manifest_from_footer(name: &str, metadata: &[u8]) -> Result<Manifest> {
    let path = PathBuf::from(name);
    let meta =
        parquet::file::metadata::ParquetMetaDataReader::decode_metadata(metadata).map_err(|e| {
            ArtifactError::Parquet {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
    manifest_in(&path, meta.file_metadata())
}

/// Records that object `id` (whose file has metadata `meta`) hashes to its
/// id: by `verify_object`, and by the writer, which hashed the bytes as it
/// wrote them. Best effort: without the record the next read hashes again.
pub(crate) fn record_verified(root: &Path, id: &str, meta: &std::fs::Metadata) {
    if let Some(stamp) = file_stamp(meta) {
        let dir = root.join("verified");
        let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join(id), stamp));
    }
}

/// A file's identity as a string: length, modification time and, on Unix,
/// inode and change time. Equal stamps mean the file was not rewritten
/// since (how the store and the search indexes skip hashing a file again).
pub fn file_stamp(meta: &std::fs::Metadata) -> Option<String> {
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    // On Unix also the inode and the change time, which tools that keep
    // modification times (cp -p, rsync -t, touch -r) cannot set back.
    #[cfg(unix)]
    let extra = {
        use std::os::unix::fs::MetadataExt;
        format!(" {} {}.{}", meta.ino(), meta.ctime(), meta.ctime_nsec())
    };
    #[cfg(not(unix))]
    let extra = String::new();
    Some(format!("{} {}{extra}", meta.len(), mtime.as_nanos()))
}

/// An action record's outputs name content ids and kind names; a tampered
/// record (`"id": "../../../x"`) is never followed.
fn record_ok(r: &ActionRecord) -> bool {
    r.outputs
        .iter()
        .all(|o| crate::is_full_id(&o.id) && valid_kind(&o.kind))
}

/// [`record_ok`], and the key is the recipe's key: what a record from
/// outside the store (a remote) must satisfy.
pub fn check_record(r: &ActionRecord) -> Result<()> {
    if !record_ok(r) {
        return Err(ArtifactError::Other(format!(
            "action record {:?}: an output id or kind is not valid",
            r.key
        )));
    }
    let key = r.recipe.key();
    if key != r.key {
        return Err(ArtifactError::Other(format!(
            "action record {:?}: its recipe's key is {key}; the record was altered",
            r.key
        )));
    }
    Ok(())
}

/// [`Store::check_record_outputs`] over any source of manifests (the local
/// store, or a remote's object footers for `remote verify`).
pub fn check_record_against(
    record: &ActionRecord,
    mut manifest_of: impl FnMut(&OutputRef) -> Result<Manifest>,
) -> Result<()> {
    let short = &record.key[..record.key.len().min(12)];
    let bad = |message: String| {
        Err(ArtifactError::Other(format!(
            "action record {short} ({} step): {message}; the record was altered or mixed up",
            record.recipe.stage
        )))
    };
    if record.outputs.is_empty() {
        return bad("it names no outputs".into());
    }
    let expected = record.recipe.for_manifest();
    for o in &record.outputs {
        let m = manifest_of(o)?;
        let id = &o.id[..o.id.len().min(12)];
        if m.kind != o.kind {
            return bad(format!(
                "it names {id} as its `{}` output, but that artifact is a `{}` artifact",
                o.kind, m.kind
            ));
        }
        if m.rows != o.rows {
            return bad(format!(
                "it says output {id} has {} rows, its manifest says {}",
                o.rows, m.rows
            ));
        }
        if m.recipe != expected && !m.recipe.is_part_of(&expected) {
            return bad(format!(
                "output {id} was made by another recipe ({} step, key {})",
                m.recipe.stage,
                &m.recipe.key()[..12]
            ));
        }
    }
    Ok(())
}

/// A kind name is a short lowercase word (`questions`, `cases`, ...).
pub fn valid_kind(kind: &str) -> bool {
    !kind.is_empty()
        && kind.len() <= 64
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// What a manifest may hold, checked wherever one is read: a kind name
/// (never text that could forge output lines), input ids that are content
/// ids, and for a known kind a schema version this build reads (an
/// artifact written by a newer ragprobe is refused, not misread).
fn check_manifest(path: &Path, m: &Manifest) -> Result<()> {
    let bad = |message: String| {
        Err(ArtifactError::BadManifest {
            path: path.to_path_buf(),
            message,
        })
    };
    if !valid_kind(&m.kind) {
        return bad(format!("kind {:?} is not a kind name", m.kind));
    }
    if let Some(i) = m.recipe.inputs.iter().find(|i| !crate::is_full_id(i)) {
        return bad(format!("input id {i:?} is not a content id"));
    }
    if let Some(k) = kinds::kind(&m.kind) {
        if m.schema_version == 0 || m.schema_version > k.schema_version {
            return bad(format!("`{}` schema version {} is not one this ragprobe reads (1 to {}); a newer ragprobe wrote it?", m.kind, m.schema_version, k.schema_version));
        }
    }
    Ok(())
}

/// The columns a known kind's reader expects have that kind's types: a
/// crafted file with, say, `answers: list<int64>` is an error naming the
/// artifact and the column, not a panic in a reader.
fn check_columns(id: &str, path: &Path, m: &Manifest, schema: &Schema) -> Result<()> {
    let Some(k) = kinds::kind(&m.kind) else {
        return Ok(());
    };
    let expected = (k.schema)();
    for f in schema.fields() {
        if let Ok(e) = expected.field_with_name(f.name()) {
            if !e.data_type().equals_datatype(f.data_type()) {
                return Err(ArtifactError::BadManifest {
                    path: path.to_path_buf(),
                    message: format!(
                        "artifact {id}: column `{}` is {}, the `{}` schema says {}",
                        f.name(),
                        f.data_type(),
                        m.kind,
                        e.data_type()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Decode every row of the file and check the manifest's row count and, for
/// known kinds, the schema.
fn check_readable(path: &Path) -> Result<()> {
    let (manifest, schema) = read_footer(path)?;
    let file = File::open(path).map_err(io_err(path))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| ArtifactError::Parquet {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let mut rows = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| ArtifactError::Parquet {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        rows += batch.num_rows() as u64;
    }
    if rows != manifest.rows {
        return Err(ArtifactError::BadManifest {
            path: path.to_path_buf(),
            message: format!("manifest says {} rows, the data has {rows}", manifest.rows),
        });
    }
    if let Some(k) = kinds::kind(&manifest.kind) {
        if k.schema_version == manifest.schema_version && *(k.schema)().fields() != *schema.fields()
        {
            return Err(ArtifactError::BadManifest {
                path: path.to_path_buf(),
                message: format!("columns differ from the `{}` schema", manifest.kind),
            });
        }
    }
    Ok(())
}
