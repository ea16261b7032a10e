use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{io_err, ArtifactError, Result};
use crate::manifest::{Manifest, MANIFEST_KEY};

/// Rows per Parquet row group. Bounds the writer's memory on large inputs
/// (a row group is buffered until it is flushed) and keeps files readable in
/// pieces.
pub const ROW_GROUP_ROWS: usize = 8192;

/// Fixed writer settings: part of the artifact contract, since the bytes are
/// the id. Changing any of these changes the ids of what they cover.
///
/// Top-level binary columns (the stored vectors of `embeddings`) are written
/// plain, uncompressed, without a dictionary or statistics: their values
/// are unique and incompressible (snappy gave 12.62 MB for 12.62 MB per
/// row group of f32 vectors), and written plain they are read straight out
/// of the mapped file (see `Store::open_file`) instead of through a
/// decompression, a dictionary attempt and a copy.
fn writer_properties(schema: &Schema) -> WriterProperties {
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    for field in schema.fields() {
        if matches!(field.data_type(), DataType::Binary | DataType::LargeBinary) {
            let column = ColumnPath::from(field.name().as_str());
            props = props
                .set_column_compression(column.clone(), Compression::UNCOMPRESSED)
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column.clone(), Encoding::PLAIN)
                .set_column_statistics_enabled(column, EnabledStatistics::None);
        }
    }
    props.build()
}

/// A sink that hashes every byte on its way to the file.
struct HashingFile {
    inner: BufWriter<File>,
    hasher: Sha256,
}

impl Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The outcome of writing one artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The artifact's kind.
    pub kind: String,
    /// The artifact id: SHA-256 of the file's bytes.
    pub id: String,
    /// Rows written.
    pub rows: u64,
}

/// Streams record batches into a temporary file in the store; on
/// [`finish`](Self::finish) embeds the manifest, fsyncs, and renames the file
/// to `objects/<sha256>.parquet`. Dropped without `finish`, it deletes the
/// temporary file: no partial object ever becomes visible.
pub struct ArtifactWriter {
    tmp_path: PathBuf,
    objects_dir: PathBuf,
    writer: Option<ArrowWriter<HashingFile>>,
    manifest: Manifest,
    schema: SchemaRef,
}

impl ArtifactWriter {
    pub(crate) fn create(
        tmp_path: PathBuf,
        objects_dir: PathBuf,
        schema: SchemaRef,
        manifest: Manifest,
    ) -> Result<Self> {
        let file = File::create(&tmp_path).map_err(io_err(&tmp_path))?;
        let sink = HashingFile {
            inner: BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
        };
        let writer = ArrowWriter::try_new(sink, schema.clone(), Some(writer_properties(&schema)))
            .map_err(|e| ArtifactError::Parquet {
            path: tmp_path.clone(),
            message: e.to_string(),
        })?;
        Ok(ArtifactWriter {
            tmp_path,
            objects_dir,
            writer: Some(writer),
            manifest,
            schema,
        })
    }

    /// The Arrow schema batches must have.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The kind of artifact being written.
    pub fn kind(&self) -> &str {
        &self.manifest.kind
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.manifest.rows
    }

    /// Append one batch. Its schema must equal the kind's schema.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.schema() != self.schema {
            return Err(ArtifactError::Other(format!(
                "internal: batch schema for `{}` artifact differs from the kind's schema",
                self.manifest.kind
            )));
        }
        let w = self.writer.as_mut().expect("writer present until finish");
        w.write(batch).map_err(|e| ArtifactError::Parquet {
            path: self.tmp_path.clone(),
            message: e.to_string(),
        })?;
        self.manifest.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Close the file with `details` recorded in the manifest, and move it into
    /// the store. Returns the artifact id.
    pub fn finish(mut self, details: serde_json::Value) -> Result<Written> {
        self.manifest.details = details;
        let mut w = self.writer.take().expect("writer present until finish");
        w.append_key_value_metadata(KeyValue::new(
            MANIFEST_KEY.to_string(),
            self.manifest.to_json(),
        ));
        let sink = w.into_inner().map_err(|e| ArtifactError::Parquet {
            path: self.tmp_path.clone(),
            message: e.to_string(),
        })?;
        let HashingFile { inner, hasher } = sink;
        let file = inner.into_inner().map_err(|e| ArtifactError::Io {
            path: self.tmp_path.clone(),
            error: e.into_error(),
        })?;
        file.sync_all().map_err(io_err(&self.tmp_path))?;
        drop(file);
        let id = hex::encode(hasher.finalize());
        let dest = self.objects_dir.join(format!("{id}.parquet"));
        publish(&self.tmp_path, &dest)?;
        if let (Some(root), Ok(meta)) = (self.objects_dir.parent(), std::fs::metadata(&dest)) {
            crate::store::record_verified(root, &id, &meta);
        }
        Ok(Written {
            kind: self.manifest.kind.clone(),
            id,
            rows: self.manifest.rows,
        })
    }
}

impl Drop for ArtifactWriter {
    fn drop(&mut self) {
        if self.writer.is_some() || self.tmp_path.exists() {
            let _ = std::fs::remove_file(&self.tmp_path);
        }
    }
}

/// Atomically move a complete, fsynced temp file to `dest` and fsync the
/// directory. An existing `dest` is replaced: it should hold the same bytes
/// (content addressing), and replacing it heals a corrupted copy.
pub(crate) fn publish(tmp: &Path, dest: &Path) -> Result<()> {
    std::fs::rename(tmp, dest).map_err(io_err(dest))?;
    if let Some(dir) = dest.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}
