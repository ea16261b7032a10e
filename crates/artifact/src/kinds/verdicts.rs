//! `verdicts`: verdicts made outside ragprobe (people's labels, another
//! tool's judge), imported by `score --verdicts FILE` so that the report
//! can tag the responses they judge without the file.

use crate::column::Column;
use crate::kind::Kind;

/// The `verdicts` kind.
pub struct Verdicts;

/// One imported verdict (see `schemas/verdicts.md`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerdictRow {
    /// The case judged (`cases.case_id`).
    pub case_id: String,
    /// The model whose response it judges; None: every model's.
    pub model: Option<String>,
    /// The prompt template id; None: every prompt's.
    pub prompt: Option<String>,
    /// `correct`, `incorrect`, `abstained`, `gold`, `foil`, `both` or `neither`.
    pub verdict: String,
}

impl Kind for Verdicts {
    const NAME: &'static str = "verdicts";
    const VERSION: u32 = 1;
    type Row = VerdictRow;
    fn columns() -> Vec<Column<VerdictRow>> {
        type R = VerdictRow;
        vec![
            Column::utf8("case_id", |r: &R| &r.case_id, |r, v| r.case_id = v),
            Column::opt_utf8("model", |r: &R| r.model.as_deref(), |r, v| r.model = v),
            Column::opt_utf8("prompt", |r: &R| r.prompt.as_deref(), |r, v| r.prompt = v),
            Column::utf8("verdict", |r: &R| &r.verdict, |r, v| r.verdict = v),
        ]
    }
    /// (case_id, model, prompt): the file's order does not matter.
    fn sort(rows: &mut [VerdictRow]) {
        rows.sort_by(|a, b| {
            (&a.case_id, &a.model, &a.prompt).cmp(&(&b.case_id, &b.model, &b.prompt))
        });
    }
}
