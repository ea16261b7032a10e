//! `embeddings`: one shard of a corpus's passage embeddings, one row per
//! passage, the vector as raw little-endian bytes so that any width and
//! either float type fits one schema (the width and type are in the
//! manifest's `details`: `dim`, `dtype` = `f32` | `f16`).

use arrow::array::{Array, ArrayRef, BinaryArray};
use arrow::datatypes::DataType;
use std::sync::Arc;

use crate::column::{downcast, Column};
use crate::kind::Kind;

/// Width of an all-MiniLM-L6-v2 embedding (the in-process model).
pub const EMBEDDING_DIM: i32 = 384;

/// The `embeddings` kind.
pub struct Embeddings;

/// One `embeddings` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbeddingRow {
    /// The passage (`corpus.doc_id`).
    pub doc_id: String,
    /// The vector: `dim` little-endian values of the shard's `dtype`.
    pub vector: Vec<u8>,
}

impl Kind for Embeddings {
    const NAME: &'static str = "embeddings";
    const VERSION: u32 = 2;
    type Row = EmbeddingRow;
    fn columns() -> Vec<Column<EmbeddingRow>> {
        type R = EmbeddingRow;
        vec![
            Column::utf8("doc_id", |r: &R| &r.doc_id, |r, v| r.doc_id = v),
            Column::custom(
                "vector",
                DataType::Binary,
                false,
                |rows: &[R]| -> ArrayRef {
                    Arc::new(BinaryArray::from_iter_values(
                        rows.iter().map(|r| r.vector.as_slice()),
                    ))
                },
                |a: &dyn Array, rows: &mut [R]| {
                    let b = downcast::<BinaryArray>(a)?;
                    for (i, r) in rows.iter_mut().enumerate() {
                        r.vector = b.value(i).to_vec();
                    }
                    Ok(())
                },
            ),
        ]
    }
}
