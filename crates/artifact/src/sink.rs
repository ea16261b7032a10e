//! The generic code every kind shares: a batching [`Sink`], whole-artifact
//! [`read`] and [`write_all`], and per-batch [`rows_of`] for streaming
//! readers.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::column::Column;
use crate::kind::Kind;
use crate::{ArtifactError, ArtifactWriter, Recipe, Store, Written};

/// Rows buffered by a [`Sink`] before they are written as one batch: bounds
/// a writer's memory whatever the input size.
pub const BATCH_ROWS: usize = 4096;

fn column_error(kind: &str, id: Option<&str>, column: &str, message: String) -> ArtifactError {
    ArtifactError::Column {
        kind: kind.to_string(),
        id: id.map(str::to_string),
        column: column.to_string(),
        message,
    }
}

/// A writer for an artifact of kind `K` with its schema, for stages that
/// build their own columns (embeddings as one flat vector).
pub fn writer<K: Kind>(store: &Store, recipe: &Recipe) -> Result<ArtifactWriter, ArtifactError> {
    store.writer_with_schema(K::NAME, K::VERSION, Arc::new(K::schema()), recipe)
}

/// `rows` as one record batch of `K`'s schema.
fn to_batch<K: Kind>(
    columns: &[Column<K::Row>],
    schema: SchemaRef,
    rows: &[K::Row],
) -> Result<RecordBatch, ArtifactError> {
    let arrays = columns.iter().map(|c| (c.build)(rows)).collect();
    Ok(RecordBatch::try_new(schema, arrays)?)
}

fn decode<K: Kind>(
    columns: &[Column<K::Row>],
    batch: &RecordBatch,
    id: Option<&str>,
) -> Result<Vec<K::Row>, ArtifactError> {
    let mut rows: Vec<K::Row> = (0..batch.num_rows()).map(|_| K::Row::default()).collect();
    for c in columns {
        match batch.column_by_name(c.name) {
            Some(a) => {
                (c.fill)(a.as_ref(), &mut rows).map_err(|m| column_error(K::NAME, id, c.name, m))?
            }
            None if c.added_in > 1 => {}
            None => return Err(column_error(K::NAME, id, c.name, "is missing".to_string())),
        }
    }
    Ok(rows)
}

/// The rows of one batch of a `K` artifact (streaming readers).
pub fn rows_of<K: Kind>(batch: &RecordBatch) -> Result<Vec<K::Row>, ArtifactError> {
    decode::<K>(&K::columns(), batch, None)
}

/// Every row of artifact `id`, read as kind `K`. Columns a newer schema
/// version added read as defaults in older artifacts.
pub fn read<K: Kind>(store: &Store, id: &str) -> Result<Vec<K::Row>, ArtifactError> {
    let columns = K::columns();
    decode_all::<K>(store.open_batches(id, 8192)?, &columns, id)
}

/// Like [`read`], decoding only the named columns; the other fields keep
/// their defaults. For a stage that needs a few columns of a wide
/// artifact (scoring needs the answers, not the question text).
pub fn read_columns<K: Kind>(
    store: &Store,
    id: &str,
    names: &[&str],
) -> Result<Vec<K::Row>, ArtifactError> {
    let mut out = Vec::new();
    for rows in read_columns_batched::<K>(store, id, names)? {
        out.extend(rows?);
    }
    Ok(out)
}

/// Like [`read_columns`], a batch of rows at a time: for a caller that
/// keeps a compact form of each row and must never hold all the rows.
pub fn read_columns_batched<K: Kind>(
    store: &Store,
    id: &str,
    names: &[&str],
) -> Result<impl Iterator<Item = Result<Vec<K::Row>, ArtifactError>>, ArtifactError> {
    let columns: Vec<Column<K::Row>> = K::columns()
        .into_iter()
        .filter(|c| names.contains(&c.name))
        .collect();
    let reader = store.open_columns(id, 8192, names)?;
    let id = id.to_string();
    Ok(reader.map(move |b| decode::<K>(&columns, &b?, Some(&id))))
}

/// Decode batch by batch, so the batches are never all in memory.
fn decode_all<K: Kind>(
    reader: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    columns: &[Column<K::Row>],
    id: &str,
) -> Result<Vec<K::Row>, ArtifactError> {
    let mut out = Vec::new();
    for b in reader {
        out.extend(decode::<K>(columns, &b?, Some(id))?);
    }
    Ok(out)
}

/// Writes a whole artifact of kind `K`, rows in the kind's canonical order.
pub fn write_all<K: Kind>(
    store: &Store,
    recipe: &Recipe,
    mut rows: Vec<K::Row>,
    details: serde_json::Value,
) -> Result<Written, ArtifactError> {
    K::sort(&mut rows);
    let mut sink = Sink::<K>::new(store, recipe)?;
    for r in rows {
        sink.push(r)?;
    }
    sink.finish(details)
}

/// Batches rows of kind `K` into an artifact, [`BATCH_ROWS`] at a time.
pub struct Sink<K: Kind> {
    writer: ArtifactWriter,
    columns: Vec<Column<K::Row>>,
    pending: Vec<K::Row>,
}

impl<K: Kind> Sink<K> {
    /// Starts a `K` artifact made by `recipe`.
    pub fn new(store: &Store, recipe: &Recipe) -> Result<Self, ArtifactError> {
        Ok(Sink {
            writer: writer::<K>(store, recipe)?,
            columns: K::columns(),
            pending: Vec::with_capacity(BATCH_ROWS),
        })
    }

    /// Appends one row; a full buffer is written out.
    pub fn push(&mut self, row: K::Row) -> Result<(), ArtifactError> {
        self.pending.push(row);
        if self.pending.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ArtifactError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batch = to_batch::<K>(&self.columns, self.writer.schema(), &self.pending)?;
        self.writer.write(&batch)?;
        self.pending.clear();
        Ok(())
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.writer.rows() + self.pending.len() as u64
    }

    /// Writes what is buffered and publishes the artifact.
    pub fn finish(mut self, details: serde_json::Value) -> Result<Written, ArtifactError> {
        self.flush()?;
        self.writer.finish(details)
    }
}
