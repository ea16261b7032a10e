//! The case browser's data: compact, and packed for the page.
//!
//! Each passage is stored once, each question once and each case once;
//! responses refer to them by index. Two blocks, each JSON, gzip-compressed
//! and base64-encoded, unpacked in the page by the browser's own
//! `DecompressionStream` (no external script): the *index* (questions,
//! cases, responses, outcomes; what the filters and search need, decoded at
//! load) and the *passages* (decoded the first time a question is opened).

use base64::Engine as _;
use ragprobe_artifact::{
    condition, kinds, read, CaseRow, Cases, Expected, MetricRow, ScoreRow, Scores, Store,
};
use ragprobe_score::agreement::{read_stored_verdicts, Verdict, VerdictKey};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};

use crate::Result;

/// Most responses a report holds (the scores artifact holds them all).
pub const MAX_BROWSER_ROWS: usize = 250_000;

/// The browser's two packed blocks and a sentence about what they hold.
#[derive(Debug, Clone, Default)]
pub struct BrowserData {
    /// Questions, cases and responses: gzip, then base64.
    pub index: String,
    /// Passages: gzip, then base64.
    pub docs: String,
    /// Responses in the report.
    pub rows: usize,
    /// "N scored responses …", for the page.
    pub note: String,
}

/// gzip (deterministic: no name, no time) then base64.
pub fn pack(v: &Value) -> String {
    let json = serde_json::to_vec(v).expect("json serialises");
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(9));
    gz.write_all(&json).expect("writing to memory");
    let bytes = gz.finish().expect("writing to memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The inverse of [`pack`]; None when `b64` is not packed JSON.
pub fn unpack(b64: &str) -> Option<Value> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let mut json = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut json)
        .ok()?;
    serde_json::from_str(&json).ok()
}

/// A block of the case browser's data in a report page (`rp-index`: the
/// rows and their tags; `rp-docs`: the passages), unpacked: what a test or
/// a tool reads of a report without a web browser. None when the page has
/// no such block.
pub fn page_data(html: &str, block: &str) -> Option<Value> {
    let open = format!("id=\"{block}\">");
    let at = html.find(&open)? + open.len();
    unpack(&html[at..at + html[at..].find("</script>")?])
}

/// Interns strings: each distinct value gets the next index.
#[derive(Default)]
struct Table {
    index: HashMap<String, usize>,
    values: Vec<Value>,
}

impl Table {
    fn id(&mut self, key: String, value: impl FnOnce() -> Value) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.values.len();
        self.values.push(value());
        self.index.insert(key, i);
        i
    }

    fn str(&mut self, s: &str) -> usize {
        self.id(s.to_string(), || json!(s))
    }
}

/// What a response means for its study, in words, and whether that is
/// right (`None`: no verdict, e.g. a failed call): the first registered
/// study's reading ([`crate::StudyReport::verdict`]), else
/// - multiple choice: the option chosen;
/// - unanswerable: abstained (the shared flag or a study's
///   [`crate::StudyReport::abstained`]) or answered;
/// - conflict: noticed, switched to the foil, kept the answer, or wrong;
/// - otherwise: correct or wrong by answer matching (the shared accuracy
///   or a study's [`crate::StudyReport::correct`]).
pub fn verdict(r: &ScoreRow, studies: crate::Studies) -> (String, Option<bool>) {
    if r.failed {
        return ("the call failed".into(), None);
    }
    if let Some(v) = studies.iter().find_map(|s| s.verdict(r)) {
        return v;
    }
    let ok = r.flags.accuracy == Some(true) || studies.iter().any(|s| s.correct(r));
    if let Some(choice) = &r.mcq_choice {
        let chose = match choice.as_str() {
            "several" => "several options".to_string(),
            "none" => "no option".to_string(),
            c => format!("option {c}"),
        };
        return (
            format!("chose {chose}: {}", if ok { "correct" } else { "wrong" }),
            Some(ok),
        );
    }
    match r.expected {
        Expected::Unanswerable => {
            let abstained = abstained(r, studies);
            (
                if abstained {
                    "abstained (right: no passage holds the answer)".into()
                } else {
                    "answered an unanswerable question".into()
                },
                Some(abstained),
            )
        }
        Expected::Conflict => {
            let noticed = r.flags.says_conflict == Some(true);
            let v = if noticed {
                "noticed the conflict"
            } else if r.flags.foil_only == Some(true) {
                "switched to the foil"
            } else if ok {
                "kept the right answer"
            } else {
                "wrong"
            };
            (v.into(), Some(noticed || ok))
        }
        _ => ((if ok { "correct" } else { "wrong" }).into(), Some(ok)),
    }
}

/// The response abstains: the shared flag, or a study's reading.
fn abstained(r: &ScoreRow, studies: crate::Studies) -> bool {
    r.flags.says_unanswerable == Some(true) || studies.iter().any(|s| s.abstained(r))
}

/// Outcome tags: right or wrong, the shared failure modes, the option
/// chosen, then each study's own ([`crate::StudyReport::tags`]).
pub fn tags(r: &ScoreRow, studies: crate::Studies, base_correct: Option<bool>) -> Vec<String> {
    let mut t = Vec::new();
    if r.failed {
        t.push("failed".to_string());
        return t;
    }
    let (_, ok) = verdict(r, studies);
    t.push(if ok == Some(true) { "right" } else { "wrong" }.to_string());
    if r.expected == Expected::Unanswerable && !abstained(r, studies) {
        t.push("hallucinated unanswerable".into());
    }
    if r.flags.foil_only == Some(true) {
        t.push("misled by the foil".into());
    }
    if let Some(c) = &r.mcq_choice {
        t.push(format!("chose {c}"));
    }
    for s in studies {
        s.tags(r, base_correct, &mut t);
    }
    t
}

/// A case's browser entry: its question and condition (interned), its
/// passages (interned by title and text) with their sources, the marked
/// (inserted) passages, the foil, the label and the answer position.
fn case_entry(
    c: Option<&CaseRow>,
    r: &ScoreRow,
    q: usize,
    cond: usize,
    docs: &mut Table,
    sources: &mut Table,
) -> Value {
    let ds: Vec<Value> = c
        .map(|c| {
            c.docs
                .iter()
                .map(|d| {
                    let title = d.title.clone().unwrap_or_default();
                    let key = format!("{title}\u{1f}{}", d.text);
                    let di = docs.id(key, || json!([title, d.text]));
                    json!([di, sources.str(d.source.as_str())])
                })
                .collect()
        })
        .unwrap_or_default();
    let inserted = c.and_then(|c| c.inserted_at).map(i64::from).unwrap_or(-1);
    let marked: Vec<i64> = c
        .map(|c| {
            c.docs
                .iter()
                .enumerate()
                .filter(|(i, d)| Some(*i as i64) == Some(inserted) || d.source.is_inserted())
                .map(|(i, _)| i as i64)
                .collect()
        })
        .unwrap_or_default();
    let foil = c.and_then(|c| c.foil.clone()).or_else(|| r.foil.clone());
    json!([
        q,
        cond,
        ds,
        marked,
        foil,
        r.expected.as_str(),
        r.answer_position
    ])
}

/// A judge's verdicts, keyed by case, judged model and prompt, from the
/// judgements artifacts `score --judge` wrote and the verdicts artifacts
/// `score --verdicts FILE` kept (their ids are in the `matcher` kappa
/// rows' details); None for an unparsed reply. An imported verdict may
/// leave the model or prompt out: it then applies to every one.
pub type JudgeVerdicts = HashMap<VerdictKey, Option<Verdict>>;

/// The verdicts of the judgements and verdicts artifacts `ids` (see
/// [`JudgeVerdicts`]).
pub fn judge_verdicts(store: &Store, ids: &[String]) -> Result<JudgeVerdicts> {
    let mut out = JudgeVerdicts::new();
    for id in ids {
        out.extend(read_stored_verdicts(store, id).map_err(|e| match e {
            ragprobe_score::ScoreError::Artifact(a) => crate::ReportError::Artifact(a),
            other => crate::ReportError::Invalid(other.to_string()),
        })?);
    }
    Ok(out)
}

/// The browser data of a scores artifact (with its cases' passages), its
/// rows tagged with the judge's verdicts in `judge`.
pub fn build(
    store: &Store,
    scores_id: &str,
    studies: crate::Studies,
    judge: &JudgeVerdicts,
) -> Result<BrowserData> {
    let rows = read::<Scores>(store, scores_id)?;
    let mut cases: HashMap<String, CaseRow> = HashMap::new();
    for (_, m) in crate::lineage(store, &[scores_id.to_string()]) {
        if m.kind == kinds::RESPONSES {
            if let Some(cid) = m.recipe.inputs.first() {
                if let Ok(cs) = read::<Cases>(store, cid) {
                    for c in cs {
                        cases.insert(c.case_id.clone(), c);
                    }
                }
            }
        }
    }
    Ok(from_rows(&rows, &cases, studies, judge))
}

/// The tag of a judged response whose verdict and string decision differ.
pub const JUDGE_DIFFERS: &str = "judge ≠ matcher";

/// A model as the browser names it: without its file hash or server
/// address, nor a `.gguf` ending.
pub fn model_label(model: &str) -> &str {
    model
        .split('@')
        .next()
        .unwrap_or(model)
        .trim_end_matches(".gguf")
}

/// The browser's address (`#cases?…`, as its filters write it) listing
/// the responses of metric row `r` (its dataset, condition, model and
/// prompt) that carry the tag `outcome`.
pub fn filter_link(r: &MetricRow, outcome: &str) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in [
        ("dataset", r.dataset.as_str()),
        ("condition", r.condition.as_str()),
        ("model", model_label(&r.model)),
        ("prompt", r.prompt.as_str()),
        ("outcome", outcome),
    ] {
        if !v.is_empty() {
            q.append_pair(k, v);
        }
    }
    format!("#cases?{}", q.finish())
}

/// The judge's tags of a row: `judge: <verdict>`, and `judge ≠ matcher`
/// where the verdict and the string matcher's accuracy differ (the rows
/// the `matcher` table's disagreement counts).
fn judge_tags(r: &ScoreRow, judge: &JudgeVerdicts) -> Vec<String> {
    let found = VerdictKey::most_specific_first(&r.case_id, &r.model, &r.prompt)
        .find_map(|key| judge.get(&key));
    let Some(verdict) = found else {
        return Vec::new();
    };
    let mut t = vec![format!(
        "judge: {}",
        verdict.map_or("unparsed", Verdict::name)
    )];
    if let (Some(v), Some(acc)) = (verdict, r.flags.accuracy) {
        if v.correct() != acc {
            t.push(JUDGE_DIFFERS.into());
        }
    }
    t
}

/// [`build`] over rows already read.
pub fn from_rows(
    rows: &[ScoreRow],
    cases: &HashMap<String, CaseRow>,
    studies: crate::Studies,
    judge: &JudgeVerdicts,
) -> BrowserData {
    let base: HashMap<(&str, &str, &str), bool> = rows
        .iter()
        .filter(|r| r.condition == condition::BASE && !r.failed)
        .map(|r| {
            (
                (r.qid.as_str(), r.model.as_str(), r.prompt.as_str()),
                r.flags.accuracy == Some(true),
            )
        })
        .collect();
    let mut t = Interned::default();
    let mut out_rows = Vec::new();
    for r in rows.iter().take(MAX_BROWSER_ROWS) {
        let base_correct = base
            .get(&(r.qid.as_str(), r.model.as_str(), r.prompt.as_str()))
            .copied();
        let extra = judge_tags(r, judge);
        out_rows.push(t.row(r, cases.get(&r.case_id), studies, base_correct, &extra));
    }
    let total = rows.len();
    let shown = out_rows.len();
    let index = json!({
        "v": 1,
        "models": t.models.values, "prompts": t.prompts.values, "conditions": t.conditions.values,
        "datasets": t.datasets.values, "tags": t.tags.values, "sources": t.sources.values,
        "questions": t.questions.values, "cases": t.cases.values, "rows": out_rows,
    });
    let note = if total > shown {
        format!("{total} scored responses; the first {shown} are browsable here (all are in the scores artifact).")
    } else {
        format!("{total} scored responses.")
    };
    BrowserData {
        index: pack(&index),
        docs: pack(&Value::Array(t.docs.values)),
        rows: shown,
        note,
    }
}

/// The browser's interned values: each string, question, case and passage
/// stored once and referred to by its index.
#[derive(Default)]
struct Interned {
    models: Table,
    prompts: Table,
    conditions: Table,
    datasets: Table,
    tags: Table,
    sources: Table,
    questions: Table,
    cases: Table,
    docs: Table,
}

impl Interned {
    /// One browsed row: its case (with question and passages), model,
    /// prompt, response, tags, verdict and whether it is right.
    fn row(
        &mut self,
        r: &ScoreRow,
        c: Option<&CaseRow>,
        studies: crate::Studies,
        base_correct: Option<bool>,
        extra_tags: &[String],
    ) -> Value {
        let ds = self.datasets.str(&r.dataset);
        let q = self
            .questions
            .id(format!("{}\u{1f}{}", r.dataset, r.qid), || {
                json!([
                    r.qid,
                    ds,
                    c.map(|c| c.question.as_str()).unwrap_or(""),
                    c.map(|c| c.answers.clone()).unwrap_or_default()
                ])
            });
        let cond = self.conditions.str(&r.condition);
        let (docs, sources) = (&mut self.docs, &mut self.sources);
        let case = self.cases.id(r.case_id.clone(), || {
            case_entry(c, r, q, cond, docs, sources)
        });
        let (v, ok) = verdict(r, studies);
        let t: Vec<usize> = tags(r, studies, base_correct)
            .iter()
            .chain(extra_tags)
            .map(|t| self.tags.str(t))
            .collect();
        json!([
            case,
            self.models.str(model_label(&r.model)),
            self.prompts.str(&r.prompt),
            r.response.as_deref().unwrap_or(""),
            t,
            v,
            ok.map(|b| b as u8)
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ragprobe_artifact::{CaseDoc, DocSource};

    fn unpack(b64: &str) -> Value {
        super::unpack(b64).expect("packed JSON")
    }

    fn score(case: &str, cond: &str, prompt: &str) -> ScoreRow {
        ScoreRow {
            case_id: case.into(),
            qid: "q1".into(),
            dataset: "nq".into(),
            condition: cond.into(),
            prompt: prompt.into(),
            model: "m@abc".into(),
            flags: ragprobe_artifact::MatchFlags {
                accuracy: Some(true),
                ..Default::default()
            },
            response: Some("Paris".into()),
            ..Default::default()
        }
    }

    fn case(id: &str, cond: &str, docs: &[&str]) -> CaseRow {
        CaseRow {
            case_id: id.into(),
            qid: "q1".into(),
            dataset: "nq".into(),
            condition: cond.into(),
            question: "capital of France?".into(),
            answers: vec!["Paris".into()],
            docs: docs
                .iter()
                .map(|t| CaseDoc {
                    doc_id: t.to_string(),
                    title: None,
                    text: t.to_string(),
                    source: DocSource::Retrieved,
                    has_answer: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn passages_questions_and_cases_are_stored_once() {
        // Two conditions share two passages; four prompts answer each case.
        let cases: HashMap<String, CaseRow> = [
            case("c-base", "base", &["p1", "p2"]),
            case("c-add", "add-random", &["p1", "p2", "p3"]),
        ]
        .into_iter()
        .map(|c| (c.case_id.clone(), c))
        .collect();
        let rows: Vec<ScoreRow> = ["c-base", "c-add"]
            .iter()
            .flat_map(|c| {
                let cond = if *c == "c-base" { "base" } else { "add-random" };
                ["p-a", "p-b", "p-c", "p-d"].map(|p| score(c, cond, p))
            })
            .collect();
        let b = from_rows(&rows, &cases, &[], &JudgeVerdicts::new());
        let index = unpack(&b.index);
        let docs = unpack(&b.docs);
        assert_eq!(docs.as_array().unwrap().len(), 3, "p1, p2, p3 once each");
        assert_eq!(index["questions"].as_array().unwrap().len(), 1);
        assert_eq!(index["cases"].as_array().unwrap().len(), 2);
        assert_eq!(index["rows"].as_array().unwrap().len(), 8);
        assert_eq!(index["models"], json!(["m"]));
        assert_eq!(b.rows, 8);
    }

    /// A judged row carries the judge's verdict as a tag, and `judge ≠
    /// matcher` exactly where the verdict and the string accuracy differ
    /// (an unparsed reply differs from nothing).
    #[test]
    fn judge_verdicts_tag_their_rows_and_flag_disagreements() {
        let mut judge = JudgeVerdicts::new();
        let key = |c: &str| VerdictKey {
            case: c.into(),
            model: Some("m@abc".into()),
            prompt: Some("p".into()),
        };
        judge.insert(key("c1"), Some(Verdict::Incorrect));
        judge.insert(key("c2"), Some(Verdict::Correct));
        judge.insert(key("c3"), None);
        judge.insert(key("c4"), Some(Verdict::Foil));
        let rows: Vec<ScoreRow> = ["c1", "c2", "c3", "c4", "c5"]
            .iter()
            .map(|c| score(c, "base", "p"))
            .collect();
        let tags: Vec<Vec<String>> = rows.iter().map(|r| judge_tags(r, &judge)).collect();
        let flag = "judge ≠ matcher".to_string();
        assert_eq!(tags[0], ["judge: incorrect".to_string(), flag.clone()]);
        assert_eq!(tags[1], ["judge: correct"]);
        assert_eq!(tags[2], ["judge: unparsed"]);
        assert_eq!(tags[3], ["judge: foil".to_string(), flag]);
        assert!(tags[4].is_empty(), "not judged");
        let b = from_rows(&rows, &HashMap::new(), &[], &judge);
        let index = unpack(&b.index);
        assert!(index["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("judge ≠ matcher")));
    }

    #[test]
    fn verdicts_without_a_study() {
        let mut r = score("c", "base", "mcq");
        r.mcq_choice = Some("B".into());
        r.flags.accuracy = Some(false);
        assert_eq!(
            verdict(&r, &[]),
            ("chose option B: wrong".into(), Some(false))
        );

        let mut r = score("c", "base", "unans");
        r.expected = Expected::Unanswerable;
        r.flags.accuracy = None;
        r.flags.says_unanswerable = Some(false);
        assert_eq!(verdict(&r, &[]).1, Some(false));
        assert!(tags(&r, &[], None).contains(&"hallucinated unanswerable".to_string()));
    }

    #[test]
    fn packing_is_deterministic() {
        let v = json!({"a": [1, 2, 3]});
        assert_eq!(pack(&v), pack(&v));
        assert_eq!(unpack(&pack(&v)), v);
    }
}
