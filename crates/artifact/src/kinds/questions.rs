//! `questions`: one row per question with its gold answers.

use crate::column::Column;
use crate::kind::Kind;

/// The `questions` kind.
pub struct Questions;

/// One `questions` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuestionRow {
    /// Stable question id: the source's, else `q` + 16 hex digits of SHA-256(dataset, question).
    pub qid: String,
    /// Dataset name.
    pub dataset: String,
    /// Split (BEIR: the qrels file the query is judged in).
    pub split: Option<String>,
    /// Language code.
    pub lang: String,
    /// The question text.
    pub question: String,
    /// Gold answer aliases, flattened; matching uses these.
    pub answers: Vec<String>,
    /// RGB's answer structure: one list of aliases per required part.
    pub answer_parts: Option<Vec<Vec<String>>>,
    /// The dataset's own wrong answers (RGB `fakeanswer`), a foil pool.
    pub fake_answers: Option<Vec<String>>,
    /// NoMIRACL subset: `relevant` or `non_relevant`.
    pub subset: Option<String>,
    /// Multiple choice: (label, text) of each option, in order.
    pub options: Option<Vec<(String, String)>>,
    /// The source record's unmapped fields as canonical JSON.
    pub meta: Option<String>,
}

super::gold_answers_of!(QuestionRow);

impl Kind for Questions {
    const NAME: &'static str = "questions";
    const VERSION: u32 = 2;
    type Row = QuestionRow;
    fn columns() -> Vec<Column<QuestionRow>> {
        type R = QuestionRow;
        let [answers, answer_parts] = super::gold_answer_columns::<R>();
        vec![
            Column::utf8("qid", |r: &R| &r.qid, |r, v| r.qid = v),
            Column::utf8("dataset", |r: &R| &r.dataset, |r, v| r.dataset = v),
            Column::opt_utf8("split", |r: &R| r.split.as_deref(), |r, v| r.split = v),
            Column::utf8("lang", |r: &R| &r.lang, |r, v| r.lang = v),
            Column::utf8("question", |r: &R| &r.question, |r, v| r.question = v),
            answers,
            answer_parts,
            Column::utf8_list(
                "fake_answers",
                true,
                |r: &R| {
                    r.fake_answers
                        .as_ref()
                        .map(|f| f.iter().map(String::as_str).collect())
                },
                |r, v| r.fake_answers = v,
            ),
            Column::opt_utf8("subset", |r: &R| r.subset.as_deref(), |r, v| r.subset = v),
            super::option_labels::<R>(|r| &r.options, |r| &mut r.options),
            super::option_texts::<R>(|r| &r.options, |r| &mut r.options),
            Column::opt_utf8("meta", |r: &R| r.meta.as_deref(), |r, v| r.meta = v),
        ]
    }
}
