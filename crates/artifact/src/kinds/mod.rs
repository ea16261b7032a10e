//! Every artifact kind, one file each, and the registry of
//! kinds known by name at run time.
//!
//! Each kind has a file in `schemas/<kind>.md` listing every column with its
//! type, nullability and meaning; a test checks that the schemas here equal
//! those files, so code and documentation never drift.

mod cases;
mod contexts;
mod corpus;
mod embeddings;
mod genadv;
mod metrics;
mod questions;
mod responses;
mod scores;
mod verdicts;

pub use cases::{CaseDoc, CaseRow, Cases};
pub use contexts::{ContextRow, Contexts};
pub use corpus::{Corpus, CorpusRow};
pub use embeddings::{EmbeddingRow, Embeddings, EMBEDDING_DIM};
pub use genadv::{GenAdv, GenAdvRow};
pub use metrics::{MetricRow, Metrics};
pub use questions::{QuestionRow, Questions};
pub use responses::{ResponseRow, Responses};
pub use scores::{MatchFlags, ScoreRow, Scores, StudyCells};
pub use verdicts::{VerdictRow, Verdicts};

use arrow::datatypes::{DataType, Fields};

use crate::column::Column;
use crate::kind::KindInfo;

/// Every kind this build knows.
pub const ALL: &[KindInfo] = &[
    KindInfo::of::<Questions>(),
    KindInfo::of::<Corpus>(),
    KindInfo::of::<Contexts>(),
    KindInfo::of::<Embeddings>(),
    KindInfo::of::<Metrics>(),
    KindInfo::of::<Cases>(),
    KindInfo::of::<Responses>(),
    KindInfo::of::<Scores>(),
    KindInfo::of::<GenAdv>(),
    KindInfo::of::<Verdicts>(),
];

/// Look a kind up by name.
pub fn kind(name: &str) -> Option<&'static KindInfo> {
    ALL.iter().find(|k| k.name == name)
}

/// A row that carries gold answers the way questions and cases do: the
/// flattened aliases and, for RGB-style questions, one alias list per
/// required part.
trait GoldAnswers {
    fn answers(&self) -> &[String];
    fn answer_parts(&self) -> Option<&[Vec<String>]>;
    fn set_answers(&mut self, answers: Vec<String>);
    fn set_answer_parts(&mut self, parts: Option<Vec<Vec<String>>>);
}

/// The `answers` (non-null list, an absent cell read as empty) and
/// `answer_parts` columns, defined once for every kind that has them.
fn gold_answer_columns<R: GoldAnswers + 'static>() -> [Column<R>; 2] {
    [
        Column::utf8_list(
            "answers",
            false,
            |r: &R| Some(r.answers().iter().map(String::as_str).collect()),
            |r, v| r.set_answers(v.unwrap_or_default()),
        ),
        Column::utf8_list_list(
            "answer_parts",
            |r: &R| r.answer_parts(),
            |r, v| r.set_answer_parts(v),
        ),
    ]
}

/// Implements [`GoldAnswers`] for a row struct with `answers` and
/// `answer_parts` fields.
macro_rules! gold_answers_of {
    ($row:ty) => {
        impl super::GoldAnswers for $row {
            fn answers(&self) -> &[String] {
                &self.answers
            }
            fn answer_parts(&self) -> Option<&[Vec<String>]> {
                self.answer_parts.as_deref()
            }
            fn set_answers(&mut self, answers: Vec<String>) {
                self.answers = answers;
            }
            fn set_answer_parts(&mut self, parts: Option<Vec<Vec<String>>>) {
                self.answer_parts = parts;
            }
        }
    };
}
use gold_answers_of;

/// A row that names the case it belongs to, as cases and scores do.
trait CaseKeyed {
    /// `case_id`, `qid`, `dataset`, `lang`, `condition`, in that order.
    fn case_key(&self) -> [&str; 5];
    /// The same fields, to fill when reading.
    fn case_key_mut(&mut self) -> [&mut String; 5];
}

/// The five leading columns of a case-keyed row, defined once.
fn case_key_columns<R: CaseKeyed + 'static>() -> [Column<R>; 5] {
    [
        Column::utf8(
            "case_id",
            |r: &R| r.case_key()[0],
            |r, v| *r.case_key_mut()[0] = v,
        ),
        Column::utf8(
            "qid",
            |r: &R| r.case_key()[1],
            |r, v| *r.case_key_mut()[1] = v,
        ),
        Column::utf8(
            "dataset",
            |r: &R| r.case_key()[2],
            |r, v| *r.case_key_mut()[2] = v,
        ),
        Column::utf8(
            "lang",
            |r: &R| r.case_key()[3],
            |r, v| *r.case_key_mut()[3] = v,
        ),
        Column::utf8(
            "condition",
            |r: &R| r.case_key()[4],
            |r, v| *r.case_key_mut()[4] = v,
        ),
    ]
}

/// Implements [`CaseKeyed`] for a row struct with the five fields.
macro_rules! case_keyed {
    ($row:ty) => {
        impl super::CaseKeyed for $row {
            fn case_key(&self) -> [&str; 5] {
                [
                    &self.case_id,
                    &self.qid,
                    &self.dataset,
                    &self.lang,
                    &self.condition,
                ]
            }
            fn case_key_mut(&mut self) -> [&mut String; 5] {
                [
                    &mut self.case_id,
                    &mut self.qid,
                    &mut self.dataset,
                    &mut self.lang,
                    &mut self.condition,
                ]
            }
        }
    };
}
use case_keyed;

/// Multiple-choice options as (label, text) pairs.
type Options = Option<Vec<(String, String)>>;

/// One of the two parallel option lists (schema v2 of questions and
/// cases): `part` picks a pair's label or text when writing; `fill` stores a
/// row's list when reading (None for a null cell).
fn option_list<R: 'static>(
    name: &'static str,
    get: fn(&R) -> &Options,
    set: fn(&mut R) -> &mut Options,
    part: fn(&(String, String)) -> &str,
    fill: fn(&mut Options, Option<Vec<String>>),
) -> Column<R> {
    use crate::column::{downcast, list_strings, string_lists};
    use arrow::array::{Array, ListArray};
    Column::custom(
        name,
        crate::column::list_of(DataType::Utf8),
        true,
        move |rows: &[R]| -> arrow::array::ArrayRef {
            std::sync::Arc::new(string_lists(rows.iter().map(|r| {
                get(r)
                    .as_ref()
                    .map(|o| o.iter().map(part).collect::<Vec<_>>())
            })))
        },
        move |a, rows| {
            let a = downcast::<ListArray>(a)?;
            for (i, r) in rows.iter_mut().enumerate() {
                let v = if a.is_null(i) {
                    None
                } else {
                    Some(list_strings(a, i)?)
                };
                fill(set(r), v);
            }
            Ok(())
        },
    )
    .added_in(2)
}

/// `option_labels`: the labels of the options, in order.
fn option_labels<R: 'static>(
    get: fn(&R) -> &Options,
    set: fn(&mut R) -> &mut Options,
) -> Column<R> {
    option_list(
        "option_labels",
        get,
        set,
        |o| &o.0,
        |opts, labels| {
            *opts = labels.map(|ls| ls.into_iter().map(|l| (l, String::new())).collect());
        },
    )
}

/// `option_texts`: the texts of the options, paired with `option_labels`
/// (read after it; options without a text are dropped, as a zip would).
fn option_texts<R: 'static>(get: fn(&R) -> &Options, set: fn(&mut R) -> &mut Options) -> Column<R> {
    option_list(
        "option_texts",
        get,
        set,
        |o| &o.1,
        |opts, texts| {
            if let Some(opts) = opts.as_mut() {
                let texts = texts.unwrap_or_default();
                opts.truncate(texts.len());
                for (o, t) in opts.iter_mut().zip(texts) {
                    o.1 = t;
                }
            }
        },
    )
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

use crate::kind::Kind;

/// Kind names, for lookups by name (`Store::resolve_kind`).
pub const QUESTIONS: &str = Questions::NAME;
/// Name of the `corpus` kind.
pub const CORPUS: &str = Corpus::NAME;
/// Name of the `contexts` kind.
pub const CONTEXTS: &str = Contexts::NAME;
/// Name of the `embeddings` kind.
pub const EMBEDDINGS: &str = Embeddings::NAME;
/// Name of the `metrics` kind.
pub const METRICS: &str = Metrics::NAME;
/// Name of the `cases` kind.
pub const CASES: &str = Cases::NAME;
/// Name of the `responses` kind.
pub const RESPONSES: &str = Responses::NAME;
/// Name of the `scores` kind.
pub const SCORES: &str = Scores::NAME;
/// Name of the `genadv` kind.
pub const GENADV: &str = GenAdv::NAME;
/// Name of the `verdicts` kind.
pub const VERDICTS: &str = Verdicts::NAME;
