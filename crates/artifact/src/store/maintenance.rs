//! The store's upkeep: listing, verifying, export and import, adoption
//! of fetched objects, pins, and garbage collection.

use super::*;

impl Store {
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
