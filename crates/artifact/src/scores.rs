//! The `scores` kind: one scored response per row.

use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use std::sync::Arc;

use crate::tables::column;
use crate::{ArtifactError, Recipe, Store, Written};

/// One scored response. Flags are None when the row failed (no response)
/// or when the flag does not apply (no foil, no answer parts, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreRow {
    pub case_id: String,
    pub qid: String,
    pub dataset: String,
    pub lang: String,
    pub condition: String,
    pub prompt: String,
    /// The prompt template's study (`000`, `001`, `002`, `rgb`), as declared.
    pub prompt_study: Option<String>,
    /// The prompt template's role (closed-book, normal, unans, conflict,
    /// soft, strict, nomiracl, rgb): metric families are chosen from it.
    pub prompt_role: Option<String>,
    /// The prompt template's wording variant (v0, v1, v2, mcq, ...).
    pub prompt_variant: Option<String>,
    pub model: String,
    pub request_id: String,
    pub expected: String,
    pub answer_position: Option<String>,
    /// Some retrieved document holds a gold answer (None without retrieved documents).
    pub answerable: Option<bool>,
    /// The request failed: excluded from every denominator, counted.
    pub failed: bool,
    pub accuracy: Option<bool>,
    pub em: Option<bool>,
    pub f1: Option<f64>,
    pub says_unanswerable: Option<bool>,
    pub says_conflict: Option<bool>,
    /// Seed 002 §A.4 foil-only: matches the foil and not the reference.
    pub foil_only: Option<bool>,
    /// Matches the foil (whether or not it also matches the reference).
    pub foil_any: Option<bool>,
    /// The normalised response equals the normalised foil (exact foil
    /// match, seed 002 §C.4 "exact foil-only" with `em` false).
    pub foil_exact: Option<bool>,
    pub nomiracl_label: Option<String>,
    pub rgb_rejection: Option<bool>,
    pub rgb_fact_error: Option<bool>,
    pub rgb_correct: Option<bool>,
    /// Multiple choice: the chosen option's label, `several` or `none`.
    pub mcq_choice: Option<String>,
    pub foil: Option<String>,
    pub response: Option<String>,
}

/// scores: see schemas/scores.md.
pub fn scores_schema() -> Schema {
    let u = |n: &str, nullable| Field::new(n, DataType::Utf8, nullable);
    let b = |n: &str| Field::new(n, DataType::Boolean, true);
    Schema::new(vec![
        u("case_id", false),
        u("qid", false),
        u("dataset", false),
        u("lang", false),
        u("condition", false),
        u("prompt", false),
        u("prompt_study", true),
        u("prompt_role", true),
        u("prompt_variant", true),
        u("model", false),
        u("request_id", false),
        u("expected", false),
        u("answer_position", true),
        b("answerable"),
        Field::new("failed", DataType::Boolean, false),
        b("accuracy"),
        b("em"),
        Field::new("f1", DataType::Float64, true),
        b("says_unanswerable"),
        b("says_conflict"),
        b("foil_only"),
        b("foil_any"),
        b("foil_exact"),
        u("nomiracl_label", true),
        b("rgb_rejection"),
        b("rgb_fact_error"),
        b("rgb_correct"),
        u("mcq_choice", true),
        u("foil", true),
        u("response", true),
    ])
}

/// Write a whole `scores` artifact, sorted by (model, prompt, case_id).
pub fn write_scores(
    store: &Store,
    recipe: &Recipe,
    mut rows: Vec<ScoreRow>,
    details: serde_json::Value,
) -> Result<Written, ArtifactError> {
    rows.sort_by(|a, b| {
        (&a.model, &a.prompt, &a.case_id, &a.request_id).cmp(&(
            &b.model,
            &b.prompt,
            &b.case_id,
            &b.request_id,
        ))
    });
    let mut w = store.writer(crate::kinds::SCORES, recipe)?;
    for c in rows.chunks(4096) {
        let s = |f: fn(&ScoreRow) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(c.iter().map(f)))
        };
        let o = |f: fn(&ScoreRow) -> Option<&str>| -> ArrayRef {
            Arc::new(StringArray::from_iter(c.iter().map(f)))
        };
        let b = |f: fn(&ScoreRow) -> Option<bool>| -> ArrayRef {
            Arc::new(BooleanArray::from_iter(c.iter().map(f)))
        };
        let cols: Vec<ArrayRef> = vec![
            s(|r| &r.case_id),
            s(|r| &r.qid),
            s(|r| &r.dataset),
            s(|r| &r.lang),
            s(|r| &r.condition),
            s(|r| &r.prompt),
            o(|r| r.prompt_study.as_deref()),
            o(|r| r.prompt_role.as_deref()),
            o(|r| r.prompt_variant.as_deref()),
            s(|r| &r.model),
            s(|r| &r.request_id),
            s(|r| &r.expected),
            o(|r| r.answer_position.as_deref()),
            b(|r| r.answerable),
            Arc::new(BooleanArray::from_iter(c.iter().map(|r| Some(r.failed)))),
            b(|r| r.accuracy),
            b(|r| r.em),
            Arc::new(Float64Array::from_iter(c.iter().map(|r| r.f1))),
            b(|r| r.says_unanswerable),
            b(|r| r.says_conflict),
            b(|r| r.foil_only),
            b(|r| r.foil_any),
            b(|r| r.foil_exact),
            o(|r| r.nomiracl_label.as_deref()),
            b(|r| r.rgb_rejection),
            b(|r| r.rgb_fact_error),
            b(|r| r.rgb_correct),
            o(|r| r.mcq_choice.as_deref()),
            o(|r| r.foil.as_deref()),
            o(|r| r.response.as_deref()),
        ];
        w.write(&RecordBatch::try_new(w.schema(), cols)?)?;
    }
    w.finish(details)
}

/// Read a whole `scores` artifact.
pub fn read_scores(store: &Store, id: &str) -> Result<Vec<ScoreRow>, ArtifactError> {
    let (_, batches) = store.read_all(id)?;
    let mut out = Vec::new();
    for bt in &batches {
        let s = |n: &str| column::<StringArray>(bt, n);
        let b = |n: &str| column::<BooleanArray>(bt, n);
        let os = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
        let ob = |a: &BooleanArray, i: usize| (!a.is_null(i)).then(|| a.value(i));
        let (case_id, qid, dataset, lang, cond, prompt, model, rid, expected, pos) = (
            s("case_id")?,
            s("qid")?,
            s("dataset")?,
            s("lang")?,
            s("condition")?,
            s("prompt")?,
            s("model")?,
            s("request_id")?,
            s("expected")?,
            s("answer_position")?,
        );
        let (answerable, failed, acc, em, su, sc, fo, fa, rr, rf, rc) = (
            b("answerable")?,
            b("failed")?,
            b("accuracy")?,
            b("em")?,
            b("says_unanswerable")?,
            b("says_conflict")?,
            b("foil_only")?,
            b("foil_any")?,
            b("rgb_rejection")?,
            b("rgb_fact_error")?,
            b("rgb_correct")?,
        );
        // Added in schema v3; v2 artifacts read them as null.
        let maybe_s = |n: &str| {
            bt.column_by_name(n)
                .is_some()
                .then(|| column::<StringArray>(bt, n))
                .transpose()
        };
        let (pstudy, prole, pvariant) = (
            maybe_s("prompt_study")?,
            maybe_s("prompt_role")?,
            maybe_s("prompt_variant")?,
        );
        let fx = bt
            .column_by_name("foil_exact")
            .is_some()
            .then(|| column::<BooleanArray>(bt, "foil_exact"))
            .transpose()?;
        let (f1, nl, foil, resp, mc) = (
            column::<Float64Array>(bt, "f1")?,
            s("nomiracl_label")?,
            s("foil")?,
            s("response")?,
            s("mcq_choice")?,
        );
        for i in 0..bt.num_rows() {
            out.push(ScoreRow {
                case_id: case_id.value(i).into(),
                qid: qid.value(i).into(),
                dataset: dataset.value(i).into(),
                lang: lang.value(i).into(),
                condition: cond.value(i).into(),
                prompt: prompt.value(i).into(),
                prompt_study: pstudy.and_then(|a| os(a, i)),
                prompt_role: prole.and_then(|a| os(a, i)),
                prompt_variant: pvariant.and_then(|a| os(a, i)),
                model: model.value(i).into(),
                request_id: rid.value(i).into(),
                expected: expected.value(i).into(),
                answer_position: os(pos, i),
                answerable: ob(answerable, i),
                failed: failed.value(i),
                accuracy: ob(acc, i),
                em: ob(em, i),
                f1: (!f1.is_null(i)).then(|| f1.value(i)),
                says_unanswerable: ob(su, i),
                says_conflict: ob(sc, i),
                foil_only: ob(fo, i),
                foil_any: ob(fa, i),
                foil_exact: fx.and_then(|a| ob(a, i)),
                nomiracl_label: os(nl, i),
                rgb_rejection: ob(rr, i),
                rgb_fact_error: ob(rf, i),
                rgb_correct: ob(rc, i),
                mcq_choice: os(mc, i),
                foil: os(foil, i),
                response: os(resp, i),
            });
        }
    }
    Ok(out)
}
