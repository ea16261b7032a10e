//! What predictions are scored against: the questions or cases artifact,
//! read in batches of the columns scoring needs.

use super::*;

/// Predictions scored (on all cores) and written per block.
pub(super) const SCORE_BLOCK: usize = 1 << 12;

/// The columns of a questions artifact that scoring reads: not the
/// question text or metadata.
pub(super) const QUESTION_COLUMNS: [&str; 5] =
    ["qid", "dataset", "lang", "answers", "answer_parts"];

/// What predictions are joined to: the rows of a cases artifact, or a
/// questions artifact held as Arrow batches of the columns scoring reads,
/// each question made a case only while its row is scored. At a million
/// questions, a case row per question (a dozen owned strings each) was
/// most of the stage's memory.
pub(super) enum Targets {
    Cases(Vec<CaseRow>),
    /// Batches of [`QUESTION_BATCH`] rows (the last may be shorter).
    Questions(Vec<QuestionBatch>),
}

/// Rows per batch of a questions target: question `i` is row
/// `i % QUESTION_BATCH` of batch `i / QUESTION_BATCH`.
pub(super) const QUESTION_BATCH: usize = 8192;

/// One batch of a questions artifact, the columns scoring reads typed
/// (as the questions kind declares them), with the lists' items.
pub(super) struct QuestionBatch {
    qid: StringArray,
    dataset: Labels,
    lang: Labels,
    /// `list<utf8>` and its items.
    answers: ListArray,
    answer_items: StringArray,
    /// `list<list<utf8>>`, its lists and their items.
    answer_parts: ListArray,
    part_lists: ListArray,
    part_items: StringArray,
}

impl QuestionBatch {
    pub(super) fn new(b: &RecordBatch, id: &str) -> Result<Self> {
        // The questions reader's own errors.
        let bad = |name: &str, message: String| {
            ScoreError::Artifact(ArtifactError::Column {
                kind: kinds::QUESTIONS.to_string(),
                id: Some(id.to_string()),
                column: name.to_string(),
                message,
            })
        };
        let col = |name: &str| {
            b.column_by_name(name)
                .cloned()
                .ok_or_else(|| bad(name, "is missing".to_string()))
        };
        fn typed<T: Array + Clone + 'static>(a: &dyn Array) -> Result<T, String> {
            column::downcast::<T>(a).cloned()
        }
        let strings =
            |name: &str| typed::<StringArray>(col(name)?.as_ref()).map_err(|m| bad(name, m));
        let answers: ListArray = typed(col("answers")?.as_ref()).map_err(|m| bad("answers", m))?;
        let answer_parts: ListArray =
            typed(col("answer_parts")?.as_ref()).map_err(|m| bad("answer_parts", m))?;
        let part_lists: ListArray =
            typed(answer_parts.values().as_ref()).map_err(|m| bad("answer_parts", m))?;
        Ok(QuestionBatch {
            qid: strings("qid")?,
            dataset: Labels::new(strings("dataset")?),
            lang: Labels::new(strings("lang")?),
            answer_items: typed(answers.values().as_ref()).map_err(|m| bad("answers", m))?,
            answers,
            part_items: typed(part_lists.values().as_ref()).map_err(|m| bad("answer_parts", m))?,
            part_lists,
            answer_parts,
        })
    }

    /// Row `i` as a case of condition `external` expecting an answer,
    /// written over `case` (one case per scoring task, its strings reused,
    /// not a dozen allocations per row). Null list items are left out, as
    /// the questions reader does.
    pub(super) fn fill(&self, i: usize, case: &mut CaseRow) {
        fn set(s: &mut String, v: &str) {
            s.clear();
            s.push_str(v);
        }
        /// The non-null items `range` of `items` over `out`'s strings.
        fn set_items(out: &mut Vec<String>, items: &StringArray, range: std::ops::Range<usize>) {
            let mut n = 0;
            for j in range.filter(|&j| !items.is_null(j)) {
                match out.get_mut(n) {
                    Some(s) => set(s, items.value(j)),
                    None => out.push(items.value(j).to_string()),
                }
                n += 1;
            }
            out.truncate(n);
        }
        let range = |l: &ListArray, i: usize| {
            if l.is_null(i) {
                0..0
            } else {
                let o = l.value_offsets();
                o[i] as usize..o[i + 1] as usize
            }
        };
        let qid = self.qid.value(i);
        set(&mut case.case_id, qid);
        set(&mut case.qid, qid);
        set(&mut case.dataset, self.dataset.get(i));
        set(&mut case.lang, self.lang.get(i));
        set(&mut case.condition, "external");
        set(&mut case.derivation, "{}");
        case.expected = Expected::Answer;
        set_items(
            &mut case.answers,
            &self.answer_items,
            range(&self.answers, i),
        );
        if self.answer_parts.is_null(i) {
            case.answer_parts = None;
        } else {
            let parts = case.answer_parts.get_or_insert_with(Vec::new);
            let lists = range(&self.answer_parts, i);
            parts.resize_with(lists.len(), Vec::new);
            for (part, l) in parts.iter_mut().zip(lists) {
                set_items(part, &self.part_items, range(&self.part_lists, l));
            }
        }
    }
}

/// A column of few distinct values (dataset, language): one string when
/// the whole batch has it, as it usually does (not 8,192 copies).
pub(super) enum Labels {
    Same(String),
    Each(StringArray),
}

impl Labels {
    pub(super) fn new(a: StringArray) -> Labels {
        match a.iter().next().flatten() {
            Some(first) if a.null_count() == 0 && a.iter().all(|v| v == Some(first)) => {
                Labels::Same(first.to_string())
            }
            _ => Labels::Each(a),
        }
    }

    pub(super) fn get(&self, i: usize) -> &str {
        match self {
            Labels::Same(s) => s,
            Labels::Each(a) => a.value(i),
        }
    }
}

impl Targets {
    pub(super) fn questions(store: &Store, id: &str) -> Result<Targets> {
        let reader = store.open_columns(id, QUESTION_BATCH, &QUESTION_COLUMNS)?;
        let schema = reader.schema();
        let mut batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(ArtifactError::from)?;
        let n = batches.len();
        if batches
            .iter()
            .take(n.saturating_sub(1))
            .any(|b| b.num_rows() != QUESTION_BATCH)
        {
            // Not the reader's usual batches: make them so.
            let all = concat_batches(&schema, &batches).map_err(ArtifactError::from)?;
            batches = (0..all.num_rows())
                .step_by(QUESTION_BATCH)
                .map(|s| all.slice(s, QUESTION_BATCH.min(all.num_rows() - s)))
                .collect();
        }
        let batches = batches
            .iter()
            .map(|b| QuestionBatch::new(b, id))
            .collect::<Result<_>>()?;
        Ok(Targets::Questions(batches))
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Targets::Cases(c) => c.len(),
            Targets::Questions(b) => b.iter().map(|b| b.qid.len()).sum(),
        }
    }

    pub(super) fn case_id(&self, i: usize) -> &str {
        match self {
            Targets::Cases(c) => &c[i].case_id,
            Targets::Questions(b) => b[i / QUESTION_BATCH].qid.value(i % QUESTION_BATCH),
        }
    }

    pub(super) fn qid(&self, i: usize) -> &str {
        match self {
            Targets::Cases(c) => &c[i].qid,
            Targets::Questions(b) => b[i / QUESTION_BATCH].qid.value(i % QUESTION_BATCH),
        }
    }

    /// Target `i` as a case: a cases target's own row, or a question
    /// written over `scratch`.
    pub(super) fn case<'s>(&'s self, i: usize, scratch: &'s mut CaseRow) -> &'s CaseRow {
        match self {
            Targets::Cases(c) => &c[i],
            Targets::Questions(b) => {
                b[i / QUESTION_BATCH].fill(i % QUESTION_BATCH, scratch);
                scratch
            }
        }
    }
}
