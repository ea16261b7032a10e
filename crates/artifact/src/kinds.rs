//! Artifact kinds and their Arrow schemas (design.md §4).
//!
//! Each kind has a file in `schemas/<kind>.md` listing every column with its
//! type, nullability and meaning; a test checks that the schemas here equal
//! those files, so code and documentation never drift.

use arrow::datatypes::{DataType, Field, Fields, Schema};
use std::sync::Arc;

/// One known artifact kind.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub name: &'static str,
    pub schema_version: u32,
    pub schema: fn() -> Schema,
}

/// Every kind this build knows.
pub const ALL: &[Kind] = &[
    Kind {
        name: QUESTIONS,
        schema_version: 2,
        schema: questions_schema,
    },
    Kind {
        name: CORPUS,
        schema_version: 1,
        schema: corpus_schema,
    },
    Kind {
        name: CONTEXTS,
        schema_version: 1,
        schema: contexts_schema,
    },
    Kind {
        name: EMBEDDINGS,
        schema_version: 1,
        schema: embeddings_schema,
    },
    Kind {
        name: METRICS,
        schema_version: 1,
        schema: metrics_schema,
    },
    Kind {
        name: CASES,
        schema_version: 2,
        schema: crate::cases::cases_schema,
    },
    Kind {
        name: RESPONSES,
        schema_version: 1,
        schema: crate::responses::responses_schema,
    },
    Kind {
        name: SCORES,
        schema_version: 3,
        schema: crate::scores::scores_schema,
    },
    Kind {
        name: GENADV,
        schema_version: 1,
        schema: crate::genadv::genadv_schema,
    },
];

pub const QUESTIONS: &str = "questions";
pub const CORPUS: &str = "corpus";
pub const CONTEXTS: &str = "contexts";
pub const EMBEDDINGS: &str = "embeddings";
pub const METRICS: &str = "metrics";
pub const CASES: &str = "cases";
pub const RESPONSES: &str = "responses";
pub const SCORES: &str = "scores";
pub const GENADV: &str = "genadv";

/// Width of the embeddings kind (all-MiniLM-L6-v2).
pub const EMBEDDING_DIM: i32 = 384;

/// Look a kind up by name.
pub fn kind(name: &str) -> Option<&'static Kind> {
    ALL.iter().find(|k| k.name == name)
}

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// `list<utf8>` with nullable items (Arrow's default item field).
pub fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// questions: one row per question with its gold answers.
pub fn questions_schema() -> Schema {
    Schema::new(vec![
        utf8("qid", false),
        utf8("dataset", false),
        utf8("split", true),
        utf8("lang", false),
        utf8("question", false),
        Field::new("answers", list_of(DataType::Utf8), false),
        Field::new("answer_parts", list_of(list_of(DataType::Utf8)), true),
        Field::new("fake_answers", list_of(DataType::Utf8), true),
        utf8("subset", true),
        Field::new("option_labels", list_of(DataType::Utf8), true),
        Field::new("option_texts", list_of(DataType::Utf8), true),
        utf8("meta", true),
    ])
}

/// corpus: one row per passage.
pub fn corpus_schema() -> Schema {
    Schema::new(vec![
        utf8("doc_id", false),
        utf8("title", true),
        utf8("text", false),
        utf8("meta", true),
    ])
}

/// contexts: one row per (question, passage) pair, ranked.
pub fn contexts_schema() -> Schema {
    Schema::new(vec![
        utf8("qid", false),
        Field::new("rank", DataType::Int32, false),
        utf8("doc_id", false),
        utf8("title", true),
        utf8("text", false),
        Field::new("score", DataType::Float64, true),
        Field::new("has_answer", DataType::Boolean, true),
        utf8("has_answer_source", true),
        utf8("relevance", true),
        utf8("meta", true),
    ])
}

/// embeddings: one row per corpus passage, its sentence embedding.
pub fn embeddings_schema() -> Schema {
    Schema::new(vec![
        utf8("doc_id", false),
        Field::new(
            "embedding",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                EMBEDDING_DIM,
            ),
            false,
        ),
    ])
}

/// metrics: one aggregate number per row.
pub fn metrics_schema() -> Schema {
    Schema::new(vec![
        utf8("study", false),
        utf8("dataset", false),
        utf8("model", false),
        utf8("prompt", false),
        utf8("condition", false),
        utf8("metric", false),
        Field::new("value", DataType::Float64, true),
        Field::new("n", DataType::Int64, false),
        Field::new("ci_low", DataType::Float64, true),
        Field::new("ci_high", DataType::Float64, true),
        utf8("details", true),
    ])
}

/// The notation `schemas/*.md` uses for an Arrow type: `utf8`, `int32`,
/// `float64`, `bool`, `list<T>`, `fixed_size_list<T, N>`,
/// `struct<name: T, name?: T>` (`?` marks a nullable child).
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Utf8 => "utf8".into(),
        DataType::LargeUtf8 => "large_utf8".into(),
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "int8".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float32 => "float32".into(),
        DataType::Float64 => "float64".into(),
        DataType::List(f) => format!("list<{}>", type_name(f.data_type())),
        DataType::FixedSizeList(f, n) => {
            format!("fixed_size_list<{}, {n}>", type_name(f.data_type()))
        }
        DataType::Struct(fields) => format!("struct<{}>", struct_fields(fields)),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn struct_fields(fields: &Fields) -> String {
    fields
        .iter()
        .map(|f| {
            format!(
                "{}{}: {}",
                f.name(),
                if f.is_nullable() { "?" } else { "" },
                type_name(f.data_type())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
