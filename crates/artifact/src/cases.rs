//! The `cases` kind: one evaluation input each — a question, its ordered
//! documents, the condition, and the label a robust model should give.

use arrow::array::{
    Array, ArrayRef, BooleanArray, Int32Array, ListArray, StringArray, StructArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::kinds::list_of;
use crate::tables::{column, list_strings};
use crate::{ArtifactError, Recipe, Store, Written};

/// One document of a case, in the order the model will see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseDoc {
    pub doc_id: String,
    pub title: Option<String>,
    pub text: String,
    /// retrieved | random | topk | conflict | edited | clean | adversarial |
    /// positive | negative | counterfactual | judged
    pub source: String,
    pub has_answer: Option<bool>,
}

/// One `cases` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseRow {
    pub case_id: String,
    pub qid: String,
    pub dataset: String,
    pub lang: String,
    pub condition: String,
    pub question: String,
    pub docs: Vec<CaseDoc>,
    pub answers: Vec<String>,
    pub answer_parts: Option<Vec<Vec<String>>>,
    /// answer | unanswerable | conflict | relevant | non_relevant
    pub expected: String,
    pub inserted_at: Option<i32>,
    pub foil: Option<String>,
    /// beginning | middle | end
    pub answer_position: Option<String>,
    /// JSON: parameters, seed, source doc ids.
    pub derivation: String,
    /// Multiple choice: (label, text) of each option, in order.
    pub options: Option<Vec<(String, String)>>,
}

pub(crate) fn doc_fields() -> Fields {
    Fields::from(vec![
        Field::new("doc_id", DataType::Utf8, false),
        Field::new("title", DataType::Utf8, true),
        Field::new("text", DataType::Utf8, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("has_answer", DataType::Boolean, true),
    ])
}

/// cases: see schemas/cases.md.
pub fn cases_schema() -> Schema {
    let utf8 = |n: &str, nullable| Field::new(n, DataType::Utf8, nullable);
    Schema::new(vec![
        utf8("case_id", false),
        utf8("qid", false),
        utf8("dataset", false),
        utf8("lang", false),
        utf8("condition", false),
        utf8("question", false),
        Field::new(
            "docs",
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(doc_fields()),
                true,
            ))),
            false,
        ),
        Field::new("answers", list_of(DataType::Utf8), false),
        Field::new("answer_parts", list_of(list_of(DataType::Utf8)), true),
        utf8("expected", false),
        Field::new("inserted_at", DataType::Int32, true),
        utf8("foil", true),
        utf8("answer_position", true),
        utf8("derivation", false),
        Field::new("option_labels", list_of(DataType::Utf8), true),
        Field::new("option_texts", list_of(DataType::Utf8), true),
    ])
}

fn strings<'a>(rows: &'a [CaseRow], f: impl Fn(&'a CaseRow) -> &'a str) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
}

fn opt_strings<'a>(rows: &'a [CaseRow], f: impl Fn(&'a CaseRow) -> Option<&'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter(rows.iter().map(f)))
}

fn string_lists(lists: impl Iterator<Item = Option<Vec<String>>>) -> ListArray {
    let mut b = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new());
    for l in lists {
        match l {
            Some(l) => {
                for s in l {
                    b.values().append_value(s);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    b.finish()
}

fn batch(rows: &[CaseRow], schema: Arc<Schema>) -> Result<RecordBatch, ArtifactError> {
    let docs: Vec<&CaseDoc> = rows.iter().flat_map(|r| r.docs.iter()).collect();
    let doc_struct = StructArray::try_new(
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
    )?;
    let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.docs.len()));
    let docs_list = ListArray::try_new(
        Arc::new(Field::new("item", DataType::Struct(doc_fields()), true)),
        offsets,
        Arc::new(doc_struct),
        None,
    )?;
    let mut parts = arrow::array::ListBuilder::new(arrow::array::ListBuilder::new(
        arrow::array::StringBuilder::new(),
    ));
    for r in rows {
        match &r.answer_parts {
            Some(ps) => {
                for p in ps {
                    for a in p {
                        parts.values().values().append_value(a);
                    }
                    parts.values().append(true);
                }
                parts.append(true);
            }
            None => parts.append(false),
        }
    }
    let cols: Vec<ArrayRef> = vec![
        strings(rows, |r| &r.case_id),
        strings(rows, |r| &r.qid),
        strings(rows, |r| &r.dataset),
        strings(rows, |r| &r.lang),
        strings(rows, |r| &r.condition),
        strings(rows, |r| &r.question),
        Arc::new(docs_list),
        Arc::new(string_lists(rows.iter().map(|r| Some(r.answers.clone())))),
        Arc::new(parts.finish()),
        strings(rows, |r| &r.expected),
        Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.inserted_at))),
        opt_strings(rows, |r| r.foil.as_deref()),
        opt_strings(rows, |r| r.answer_position.as_deref()),
        strings(rows, |r| &r.derivation),
        Arc::new(string_lists(rows.iter().map(|r| {
            r.options
                .as_ref()
                .map(|o| o.iter().map(|x| x.0.clone()).collect())
        }))),
        Arc::new(string_lists(rows.iter().map(|r| {
            r.options
                .as_ref()
                .map(|o| o.iter().map(|x| x.1.clone()).collect())
        }))),
    ];
    Ok(RecordBatch::try_new(schema, cols)?)
}

/// Write a whole `cases` artifact in the given row order.
pub fn write_cases(
    store: &Store,
    recipe: &Recipe,
    rows: &[CaseRow],
    details: serde_json::Value,
) -> Result<Written, ArtifactError> {
    let mut w = store.writer(crate::kinds::CASES, recipe)?;
    for chunk in rows.chunks(2048) {
        let b = batch(chunk, w.schema())?;
        w.write(&b)?;
    }
    w.finish(details)
}

/// Read a whole `cases` artifact.
pub fn read_cases(store: &Store, id: &str) -> Result<Vec<CaseRow>, ArtifactError> {
    let (_, batches) = store.read_all(id)?;
    let mut out = Vec::new();
    for b in &batches {
        let s = |n: &str| column::<StringArray>(b, n);
        let (case_id, qid, dataset, lang, condition, question, expected, foil, pos, derivation) = (
            s("case_id")?,
            s("qid")?,
            s("dataset")?,
            s("lang")?,
            s("condition")?,
            s("question")?,
            s("expected")?,
            s("foil")?,
            s("answer_position")?,
            s("derivation")?,
        );
        let docs = column::<ListArray>(b, "docs")?;
        let answers = column::<ListArray>(b, "answers")?;
        let parts = column::<ListArray>(b, "answer_parts")?;
        let inserted = column::<Int32Array>(b, "inserted_at")?;
        // Schema v1 cases (before options) have no option columns.
        let (ol, ot) = (
            column::<ListArray>(b, "option_labels").ok(),
            column::<ListArray>(b, "option_texts").ok(),
        );
        let opt = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
        for i in 0..b.num_rows() {
            let d = docs.value(i);
            let d = d
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| ArtifactError::Other("docs is not a list of structs".into()))?;
            let dc = |n: &str| {
                d.column_by_name(n)
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
                    .ok_or_else(|| ArtifactError::Other(format!("docs.{n} missing")))
            };
            let (did, title, text, source) =
                (dc("doc_id")?, dc("title")?, dc("text")?, dc("source")?);
            let has = d
                .column_by_name("has_answer")
                .and_then(|c| c.as_any().downcast_ref::<BooleanArray>().cloned())
                .ok_or_else(|| ArtifactError::Other("docs.has_answer missing".into()))?;
            let case_docs = (0..d.len())
                .map(|j| CaseDoc {
                    doc_id: did.value(j).to_string(),
                    title: opt(&title, j),
                    text: text.value(j).to_string(),
                    source: source.value(j).to_string(),
                    has_answer: (!has.is_null(j)).then(|| has.value(j)),
                })
                .collect();
            let answer_parts = (!parts.is_null(i)).then(|| {
                let inner = parts.value(i);
                let inner = inner
                    .as_any()
                    .downcast_ref::<ListArray>()
                    .expect("list<list<utf8>>")
                    .clone();
                (0..inner.len()).map(|j| list_strings(&inner, j)).collect()
            });
            out.push(CaseRow {
                case_id: case_id.value(i).into(),
                qid: qid.value(i).into(),
                dataset: dataset.value(i).into(),
                lang: lang.value(i).into(),
                condition: condition.value(i).into(),
                question: question.value(i).into(),
                docs: case_docs,
                answers: list_strings(answers, i),
                answer_parts,
                expected: expected.value(i).into(),
                inserted_at: (!inserted.is_null(i)).then(|| inserted.value(i)),
                foil: opt(foil, i),
                answer_position: opt(pos, i),
                derivation: derivation.value(i).into(),
                options: ol.zip(ot).and_then(|(ol, ot)| {
                    (!ol.is_null(i)).then(|| {
                        list_strings(ol, i)
                            .into_iter()
                            .zip(list_strings(ot, i))
                            .collect()
                    })
                }),
            });
        }
    }
    Ok(out)
}
