//! `embeddings`: one row per corpus passage, its sentence embedding.

use arrow::array::{Array, ArrayRef, FixedSizeListArray, Float32Array};
use arrow::datatypes::{DataType, Field};
use std::sync::Arc;

use crate::column::{downcast, Column};
use crate::kind::Kind;

/// Width of the embeddings kind (all-MiniLM-L6-v2).
pub const EMBEDDING_DIM: i32 = 384;

/// The `embeddings` kind.
pub struct Embeddings;

/// One `embeddings` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbeddingRow {
    /// The passage (`corpus.doc_id`).
    pub doc_id: String,
    /// [`EMBEDDING_DIM`] values.
    pub embedding: Vec<f32>,
}

fn item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Float32, true))
}

impl Kind for Embeddings {
    const NAME: &'static str = "embeddings";
    const VERSION: u32 = 1;
    type Row = EmbeddingRow;
    fn columns() -> Vec<Column<EmbeddingRow>> {
        type R = EmbeddingRow;
        vec![
            Column::utf8("doc_id", |r: &R| &r.doc_id, |r, v| r.doc_id = v),
            Column::custom(
                "embedding",
                DataType::FixedSizeList(item(), EMBEDDING_DIM),
                false,
                |rows: &[R]| -> ArrayRef {
                    let values: Vec<f32> = rows
                        .iter()
                        .flat_map(|r| r.embedding.iter().copied())
                        .collect();
                    Arc::new(FixedSizeListArray::new(
                        item(),
                        EMBEDDING_DIM,
                        Arc::new(Float32Array::from(values)),
                        None,
                    ))
                },
                |a: &dyn Array, rows: &mut [R]| {
                    let list = downcast::<FixedSizeListArray>(a)?;
                    let values = downcast::<Float32Array>(list.values().as_ref())?.values();
                    let dim = EMBEDDING_DIM as usize;
                    let start = list.offset() * dim;
                    for (i, r) in rows.iter_mut().enumerate() {
                        r.embedding = values[start + i * dim..start + (i + 1) * dim].to_vec();
                    }
                    Ok(())
                },
            ),
        ]
    }
}
