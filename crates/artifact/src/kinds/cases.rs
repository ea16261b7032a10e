//! `cases`: one evaluation input each — a question, its ordered documents,
//! the condition, and the label a robust model should give.

use arrow::array::{Array, ArrayRef, BooleanArray, ListArray, StringArray, StructArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Fields};
use std::sync::Arc;

use crate::column::{cell, downcast, vocab_value, Column};
use crate::domain::{DocSource, Expected};
use crate::kind::Kind;

/// The `cases` kind.
pub struct Cases;

/// One document of a case, in the order the model will see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseDoc {
    /// Passage id (`contexts.doc_id`, or the id of the inserted passage).
    pub doc_id: String,
    /// Passage title, if it has one.
    pub title: Option<String>,
    /// Passage text as shown to the model.
    pub text: String,
    /// Where the document came from (retrieved, random, conflict, edited, ...).
    pub source: DocSource,
    /// Whether the document holds a gold answer; None when unknown.
    pub has_answer: Option<bool>,
}

/// One `cases` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseRow {
    /// 24 hex digits of SHA-256(qid, condition, parameters): stable across runs.
    pub case_id: String,
    /// The question (`questions.qid`); cases of one question share it.
    pub qid: String,
    /// Dataset name.
    pub dataset: String,
    /// Language code of the question.
    pub lang: String,
    /// The condition (`closed-book`, `base`, `add-random`, `add-conflict`, ...).
    pub condition: String,
    /// The question text.
    pub question: String,
    /// The documents in the order the prompt shows them.
    pub docs: Vec<CaseDoc>,
    /// Gold answer aliases (kept even when `expected` is a label).
    pub answers: Vec<String>,
    /// RGB's required answer parts, each a list of aliases, when the question has them.
    pub answer_parts: Option<Vec<Vec<String>>>,
    /// What a robust model should say: the answer, `unanswerable`, `conflict`, ...
    pub expected: Expected,
    /// 0-based slot of the inserted document, for add-one conditions.
    pub inserted_at: Option<i32>,
    /// The designated wrong answer (conflict and evidence-edit cases).
    pub foil: Option<String>,
    /// beginning | middle | end
    pub answer_position: Option<String>,
    /// JSON: parameters, seed, source doc ids.
    pub derivation: String,
    /// Multiple choice: (label, text) of each option, in order.
    pub options: Option<Vec<(String, String)>>,
}

fn doc_fields() -> Fields {
    Fields::from(vec![
        Field::new("doc_id", DataType::Utf8, false),
        Field::new("title", DataType::Utf8, true),
        Field::new("text", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("has_answer", DataType::Boolean, true),
    ])
}

fn doc_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(doc_fields()), true))
}

/// `docs`: a list of document structs per case.
fn docs_column() -> Column<CaseRow> {
    Column::custom(
        "docs",
        DataType::List(doc_item()),
        false,
        |rows: &[CaseRow]| -> ArrayRef {
            let docs: Vec<&CaseDoc> = rows.iter().flat_map(|r| r.docs.iter()).collect();
            let doc_struct = StructArray::new(
                doc_fields(),
                vec![
                    Arc::new(StringArray::from_iter_values(
                        docs.iter().map(|d| d.doc_id.as_str()),
                    )) as ArrayRef,
                    Arc::new(StringArray::from_iter(
                        docs.iter().map(|d| d.title.as_deref()),
                    )),
                    Arc::new(StringArray::from_iter_values(
                        docs.iter().map(|d| d.text.as_str()),
                    )),
                    Arc::new(StringArray::from_iter_values(
                        docs.iter().map(|d| d.source.as_str()),
                    )),
                    Arc::new(BooleanArray::from_iter(docs.iter().map(|d| d.has_answer))),
                ],
                None,
            );
            let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.docs.len()));
            Arc::new(ListArray::new(
                doc_item(),
                offsets,
                Arc::new(doc_struct),
                None,
            ))
        },
        |a: &dyn Array, rows: &mut [CaseRow]| {
            let list = downcast::<ListArray>(a)?;
            for (i, r) in rows.iter_mut().enumerate() {
                let d = list.value(i);
                let d = downcast::<StructArray>(d.as_ref())?;
                let field = |n: &str| {
                    d.column_by_name(n)
                        .ok_or_else(|| format!("has no field `{n}`"))
                };
                let s = |n: &str| -> Result<StringArray, String> {
                    downcast::<StringArray>(field(n)?.as_ref()).cloned()
                };
                let (did, title, text, source) =
                    (s("doc_id")?, s("title")?, s("text")?, s("source")?);
                let has = downcast::<BooleanArray>(field("has_answer")?.as_ref())?.clone();
                r.docs = (0..d.len())
                    .map(|j| -> Result<CaseDoc, String> {
                        Ok(CaseDoc {
                            doc_id: did.value(j).to_string(),
                            title: cell(&title, j).map(str::to_string),
                            text: text.value(j).to_string(),
                            source: vocab_value(source.value(j))?,
                            has_answer: cell(&has, j),
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            Ok(())
        },
    )
}

super::gold_answers_of!(CaseRow);
super::case_keyed!(CaseRow);

impl Kind for Cases {
    const NAME: &'static str = "cases";
    const VERSION: u32 = 2;
    type Row = CaseRow;
    fn columns() -> Vec<Column<CaseRow>> {
        type R = CaseRow;
        let [answers, answer_parts] = super::gold_answer_columns::<R>();
        let key = super::case_key_columns::<R>();
        key.into_iter()
            .chain([
                Column::utf8("question", |r: &R| &r.question, |r, v| r.question = v),
                docs_column(),
                answers,
                answer_parts,
                Column::vocab("expected", |r: &R| r.expected, |r, v| r.expected = v),
                Column::opt_int32(
                    "inserted_at",
                    |r: &R| r.inserted_at,
                    |r, v| r.inserted_at = v,
                ),
                Column::opt_utf8("foil", |r: &R| r.foil.as_deref(), |r, v| r.foil = v),
                Column::opt_utf8(
                    "answer_position",
                    |r: &R| r.answer_position.as_deref(),
                    |r, v| r.answer_position = v,
                ),
                Column::utf8("derivation", |r: &R| &r.derivation, |r, v| r.derivation = v),
                super::option_labels::<R>(|r| &r.options, |r| &mut r.options),
                super::option_texts::<R>(|r| &r.options, |r| &mut r.options),
            ])
            .collect()
    }
}
