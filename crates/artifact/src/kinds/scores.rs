//! `scores`: one scored response per row.

use crate::column::Column;
use crate::domain::Expected;
use crate::kind::Kind;

/// The `scores` kind.
pub struct Scores;

/// One scored response. Flags are None when the row failed (no response)
/// or when the flag does not apply (no foil, no answer parts, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreRow {
    /// The case.
    pub case_id: String,
    /// The question; conditions of one question pair on it.
    pub qid: String,
    /// Dataset name.
    pub dataset: String,
    /// Language code.
    pub lang: String,
    /// The case's condition.
    pub condition: String,
    /// Prompt template id of the response.
    pub prompt: String,
    /// The prompt template's study (`000`, `001`, `002`, `rgb`), as declared.
    pub prompt_study: Option<String>,
    /// The prompt template's role (closed-book, normal, unans, conflict,
    /// soft, strict, nomiracl, rgb): metric families are chosen from it.
    pub prompt_role: Option<String>,
    /// The prompt template's wording variant (v0, v1, v2, mcq, ...).
    pub prompt_variant: Option<String>,
    /// The model that answered.
    pub model: String,
    /// The request (`responses.request_id`).
    pub request_id: String,
    /// The case's expected label.
    pub expected: Expected,
    /// beginning / middle / end (evidence edit).
    pub answer_position: Option<String>,
    /// Some retrieved document holds a gold answer (None without retrieved documents).
    pub answerable: Option<bool>,
    /// The request failed: excluded from every denominator, counted.
    pub failed: bool,
    /// The string matchers' decisions on the response.
    pub flags: MatchFlags,
    /// The studies' own per-row readings of the response.
    pub study: StudyCells,
    /// Multiple choice: the chosen option's label, `several` or `none`.
    pub mcq_choice: Option<String>,
    /// The case's foil.
    pub foil: Option<String>,
    /// The raw response text (for the report's case browser).
    pub response: Option<String>,
}

/// The string matchers' decisions on one response, each None where the
/// case gives the matcher nothing to decide (no gold, no foil). One value,
/// so the compact rows the score stage reads back copy it whole.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MatchFlags {
    /// A normalised gold alias is a substring of the normalised response (MCQ: the right option chosen).
    pub accuracy: Option<bool>,
    /// The normalised response equals a normalised gold alias.
    pub em: Option<bool>,
    /// SQuAD token F1, max over aliases.
    pub f1: Option<f64>,
    /// The normalised response contains "unanswerable".
    pub says_unanswerable: Option<bool>,
    /// The normalised response contains "conflict".
    pub says_conflict: Option<bool>,
    /// Seed 002 §A.4 foil-only: matches the foil and not the reference.
    pub foil_only: Option<bool>,
    /// Matches the foil (whether or not it also matches the reference).
    pub foil_any: Option<bool>,
    /// The normalised response equals the normalised foil (exact foil
    /// match, seed 002 §C.4 "exact foil-only" with `em` false).
    pub foil_exact: Option<bool>,
}

/// The per-row readings that belong to one study's parser rather than to
/// the shared matchers (they are columns of the `scores` schema, so every
/// score id depends on them). Generic over the label's string type: the
/// score stage's compact rows hold `StudyCells<&str>` with labels stored once.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StudyCells<S = String> {
    /// yes / idk / invalid by NoMIRACL's parsing rules (NoMIRACL cases only).
    pub nomiracl_label: Option<S>,
    /// Says "insufficient information" (RGB negative rejection).
    pub rgb_rejection: Option<bool>,
    /// Says "factual errors" (RGB error detection).
    pub rgb_fact_error: Option<bool>,
    /// Every required RGB answer part matched by one of its aliases.
    pub rgb_correct: Option<bool>,
}

impl StudyCells {
    /// The same readings with the label mapped (`intern` stores it once).
    pub fn map_label<'a, T>(&'a self, intern: impl FnOnce(&'a str) -> T) -> StudyCells<T> {
        StudyCells {
            nomiracl_label: self.nomiracl_label.as_deref().map(intern),
            rgb_rejection: self.rgb_rejection,
            rgb_fact_error: self.rgb_fact_error,
            rgb_correct: self.rgb_correct,
        }
    }
}

impl ScoreRow {
    /// The per-row values a paired comparison may use, by name.
    pub const PER_ROW_VALUES: &'static [&'static str] = &[
        "acc",
        "em",
        "f1",
        "foil_only",
        "says_unanswerable",
        "says_conflict",
        "rgb_correct",
    ];

    /// The per-row value `name` (one of [`Self::PER_ROW_VALUES`], or the
    /// aliases `accuracy` and `mr`) as a number: a flag as 1 or 0, F1 as
    /// it is; None for an unknown name or a row without the value.
    pub fn value(&self, name: &str) -> Option<f64> {
        let f = |x: Option<bool>| x.map(|v| if v { 1.0 } else { 0.0 });
        match name {
            "acc" | "accuracy" => f(self.flags.accuracy),
            "em" => f(self.flags.em),
            "f1" => self.flags.f1,
            "foil_only" | "mr" => f(self.flags.foil_only),
            "says_unanswerable" => f(self.flags.says_unanswerable),
            "says_conflict" => f(self.flags.says_conflict),
            "rgb_correct" => f(self.study.rgb_correct),
            _ => None,
        }
    }
}

super::case_keyed!(ScoreRow);

impl Kind for Scores {
    const NAME: &'static str = "scores";
    const VERSION: u32 = 3;
    type Row = ScoreRow;
    fn columns() -> Vec<Column<ScoreRow>> {
        let mut c = row_columns();
        c.extend(judgement_columns());
        c
    }
    /// (model, prompt, case_id, request_id).
    fn sort(rows: &mut [ScoreRow]) {
        fn key(r: &ScoreRow) -> [&str; 4] {
            [&r.model, &r.prompt, &r.case_id, &r.request_id]
        }
        rows.sort_by(|a, b| key(a).cmp(&key(b)));
    }
}

type R = ScoreRow;

/// The columns that say which response a row is: case, prompt, model,
/// request, label, and whether it failed.
fn row_columns() -> Vec<Column<ScoreRow>> {
    let key = super::case_key_columns::<R>();
    key.into_iter()
        .chain([
            Column::utf8("prompt", |r: &R| &r.prompt, |r, v| r.prompt = v),
            Column::opt_utf8(
                "prompt_study",
                |r: &R| r.prompt_study.as_deref(),
                |r, v| r.prompt_study = v,
            )
            .added_in(3),
            Column::opt_utf8(
                "prompt_role",
                |r: &R| r.prompt_role.as_deref(),
                |r, v| r.prompt_role = v,
            )
            .added_in(3),
            Column::opt_utf8(
                "prompt_variant",
                |r: &R| r.prompt_variant.as_deref(),
                |r, v| r.prompt_variant = v,
            )
            .added_in(3),
            Column::utf8("model", |r: &R| &r.model, |r, v| r.model = v),
            Column::utf8("request_id", |r: &R| &r.request_id, |r, v| r.request_id = v),
            Column::vocab("expected", |r: &R| r.expected, |r, v| r.expected = v),
            Column::opt_utf8(
                "answer_position",
                |r: &R| r.answer_position.as_deref(),
                |r, v| r.answer_position = v,
            ),
            Column::opt_bool("answerable", |r: &R| r.answerable, |r, v| r.answerable = v),
            Column::boolean("failed", |r: &R| r.failed, |r, v| r.failed = v),
        ])
        .collect()
}

/// The judgements of the response, in column order: the shared flags,
/// then the studies' labels, the choice, the foil and the response text.
fn judgement_columns() -> Vec<Column<ScoreRow>> {
    vec![
        Column::opt_bool(
            "accuracy",
            |r: &R| r.flags.accuracy,
            |r, v| r.flags.accuracy = v,
        ),
        Column::opt_bool("em", |r: &R| r.flags.em, |r, v| r.flags.em = v),
        Column::opt_float64("f1", |r: &R| r.flags.f1, |r, v| r.flags.f1 = v),
        Column::opt_bool(
            "says_unanswerable",
            |r: &R| r.flags.says_unanswerable,
            |r, v| r.flags.says_unanswerable = v,
        ),
        Column::opt_bool(
            "says_conflict",
            |r: &R| r.flags.says_conflict,
            |r, v| r.flags.says_conflict = v,
        ),
        Column::opt_bool(
            "foil_only",
            |r: &R| r.flags.foil_only,
            |r, v| r.flags.foil_only = v,
        ),
        Column::opt_bool(
            "foil_any",
            |r: &R| r.flags.foil_any,
            |r, v| r.flags.foil_any = v,
        ),
        Column::opt_bool(
            "foil_exact",
            |r: &R| r.flags.foil_exact,
            |r, v| r.flags.foil_exact = v,
        )
        .added_in(3),
        Column::opt_utf8(
            "nomiracl_label",
            |r: &R| r.study.nomiracl_label.as_deref(),
            |r, v| r.study.nomiracl_label = v,
        ),
        Column::opt_bool(
            "rgb_rejection",
            |r: &R| r.study.rgb_rejection,
            |r, v| r.study.rgb_rejection = v,
        ),
        Column::opt_bool(
            "rgb_fact_error",
            |r: &R| r.study.rgb_fact_error,
            |r, v| r.study.rgb_fact_error = v,
        ),
        Column::opt_bool(
            "rgb_correct",
            |r: &R| r.study.rgb_correct,
            |r, v| r.study.rgb_correct = v,
        ),
        Column::opt_utf8(
            "mcq_choice",
            |r: &R| r.mcq_choice.as_deref(),
            |r, v| r.mcq_choice = v,
        ),
        Column::opt_utf8("foil", |r: &R| r.foil.as_deref(), |r, v| r.foil = v),
        Column::opt_utf8(
            "response",
            |r: &R| r.response.as_deref(),
            |r, v| r.response = v,
        ),
    ]
}
