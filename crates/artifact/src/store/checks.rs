//! Reading and checking what the store holds: Parquet footers and their
//! manifests, action records against their outputs, verification stamps.

use super::*;

/// When `path` last changed: a file's mtime; for a directory (an index
/// being built), the newest mtime of the directory and the files in it,
/// since a build that writes through a memory map leaves the directory's
/// own mtime alone.
pub(super) fn last_modified(path: &Path) -> Option<std::time::SystemTime> {
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

pub(super) fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Read the manifest from a Parquet file's footer.
pub(crate) fn read_manifest(path: &Path) -> Result<Manifest> {
    let (manifest, _) = read_footer(path)?;
    Ok(manifest)
}

pub(super) fn read_footer(path: &Path) -> Result<(Manifest, Schema)> {
    let (manifest, builder) = open_footer(path)?;
    Ok((manifest, builder.schema().as_ref().clone()))
}

/// A Parquet reader builder for `path` (footer read once) and its checked
/// manifest.
///
/// The file is memory-mapped: pages are then slices of the mapping rather
/// than `read` copies into fresh buffers (at 1M vectors the copies and the
/// zeroing of those buffers were a third of an exact dense search's
/// reading). Objects are never changed in place (writes go to a temporary
/// file renamed into place, removal unlinks), so the mapping stays valid.
pub(super) fn open_footer(
    path: &Path,
) -> Result<(Manifest, ParquetRecordBatchReaderBuilder<bytes::Bytes>)> {
    footer_of(path, map_object(path)?)
}

/// [`open_footer`] over the object's bytes `data`, already mapped.
pub(super) fn footer_of(
    path: &Path,
    data: bytes::Bytes,
) -> Result<(Manifest, ParquetRecordBatchReaderBuilder<bytes::Bytes>)> {
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(data).map_err(|e| ArtifactError::Parquet {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let manifest = manifest_in(path, builder.metadata().file_metadata())?;
    Ok((manifest, builder))
}

/// The bytes of the store object at `path`, memory-mapped (see
/// [`open_footer`] for why the mapping stays valid).
pub(super) fn map_object(path: &Path) -> Result<bytes::Bytes> {
    let file = File::open(path).map_err(io_err(path))?;
    let len = file.metadata().map_err(io_err(path))?.len();
    if len == 0 {
        return Ok(bytes::Bytes::new());
    }
    // SAFETY: store objects are immutable once renamed into place: nothing
    // truncates or rewrites a file while it is mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err(path))?;
    Ok(bytes::Bytes::from_owner(map))
}

/// The checked manifest in a Parquet file's key-value metadata; `path`
/// labels errors.
pub(super) fn manifest_in(
    path: &Path,
    meta: &parquet::file::metadata::FileMetaData,
) -> Result<Manifest> {
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
pub(super) fn record_ok(r: &ActionRecord) -> bool {
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
pub(super) fn check_manifest(path: &Path, m: &Manifest) -> Result<()> {
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
pub(super) fn check_columns(id: &str, path: &Path, m: &Manifest, schema: &Schema) -> Result<()> {
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
pub(super) fn check_readable(path: &Path) -> Result<()> {
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
