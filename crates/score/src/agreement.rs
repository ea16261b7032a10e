//! How far a metric depends on its string matcher: the string decision
//! (`accuracy`, the SQuAD-normalised substring match) set against other
//! verdicts on the same rows — people's labels or another tool's judge,
//! imported with `score --verdicts FILE`.
//!
//! A verdicts file is JSON Lines, one object a line (or CSV, TSV,
//! Parquet with these columns): `id` (the case id,
//! `cases.case_id`, as the scores and the case browser show it), `model`
//! and `prompt` (optional: the model and prompt template of the response
//! judged; without them the verdict holds for every model's or prompt's
//! response to that case; the most specific one applies) and `verdict`
//! (below). A line naming no scored row is
//! counted (`verdicts_unmatched`), never silently dropped.
//!
//! For each (dataset, model, prompt, condition), over the rows that have
//! both a string decision and a verdict (failed requests excluded), the
//! metrics (study `matcher`):
//!
//! * `string_accuracy`, `verdict_accuracy`: the share judged correct by
//!   each (x100), on the same rows, with question-clustered intervals;
//! * `disagreement`: the share of rows where they differ (x100, interval);
//! * `kappa`: Cohen's kappa of the two binary decisions (an `abstained`
//!   verdict is "not correct"), with the confusion matrix in its details.
//!
//! A verdict is `correct`, `incorrect` or `abstained`, or, on a case with
//! a foil (a conflicting or edited passage), `gold`, `foil`, `both` or
//! `neither` (correct = gold or both, as substring accuracy counts a
//! response holding both). On rows with a foil verdict the same four
//! metrics compare the string matchers' `foil_only` with the verdict
//! `foil`: `string_foil_only`, `verdict_foil_only`, `foil_disagreement`,
//! `foil_kappa` (a response that names the foil only to reject it is where
//! they part).
//!
//! Every metric family is also computed under both matchers: the metric
//! rows of breakdown `matcher`, group `string` (the rows as scored) and
//! group `verdicts` (each row's `accuracy` replaced by "the verdict is
//! correct" where it has a verdict, and `foil_only`/`foil_any` by the foil
//! verdict where it has one; exact match and the studies' own labels
//! are left as they are). Same populations, same bootstrap. With
//! [`Matcher::Verdicts`] (`score --matcher judge`) the headline metric rows
//! (and `--by` breakdowns) are the `verdicts` group's: the tables then
//! show every family under the verdicts, each row saying so in its details.
//!
//! Cohen's kappa (Cohen 1960): with p_o the observed agreement and p_e the
//! agreement expected from the two marginals, kappa = (p_o - p_e) / (1 -
//! p_e); undefined (no value) when p_e = 1 (both say the same for every
//! row, so agreement could not have been otherwise).

use ragprobe_artifact::MetricRow;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::metrics::{b, Clusters, Key, Out};
use crate::scored::Scored;
use crate::{Result, ScoreError};

/// One verdict: on a question's answer (correct, incorrect, abstained),
/// or, for a case with a foil (a conflicting or edited passage), on which
/// answer the response gives (gold, foil, both, neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The response answers the question.
    Correct,
    /// It does not.
    Incorrect,
    /// It declines to answer.
    Abstained,
    /// It gives the gold answer and not the foil.
    Gold,
    /// It gives the foil and not the gold answer.
    Foil,
    /// It gives both (or cannot decide between them).
    Both,
    /// It gives neither.
    Neither,
}

impl Verdict {
    /// A judge's reply as the judge template asks for it: a JSON object
    /// `{"verdict": "correct" | "incorrect" | "abstained"}` (text or a code
    /// fence around it allowed). None when there is no such object: the
    /// reply is unparsed, counted, never guessed.
    pub fn from_judge_reply(text: &str) -> Option<Verdict> {
        let start = text.find('{')?;
        let end = start + text[start..].find('}')?;
        let v: Value = serde_json::from_str(&text[start..=end]).ok()?;
        Verdict::parse(v.get("verdict")?.as_str()?.trim())
    }

    /// The verdict's word, as files and the judge's replies spell it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Correct => "correct",
            Verdict::Incorrect => "incorrect",
            Verdict::Abstained => "abstained",
            Verdict::Gold => "gold",
            Verdict::Foil => "foil",
            Verdict::Both => "both",
            Verdict::Neither => "neither",
        }
    }

    fn parse(s: &str) -> Option<Verdict> {
        match s {
            "correct" => Some(Verdict::Correct),
            "incorrect" => Some(Verdict::Incorrect),
            "abstained" => Some(Verdict::Abstained),
            "gold" => Some(Verdict::Gold),
            "foil" => Some(Verdict::Foil),
            "both" => Some(Verdict::Both),
            "neither" => Some(Verdict::Neither),
            _ => None,
        }
    }

    /// The answer is correct: `correct`, or `gold`/`both` (as substring
    /// accuracy counts a response holding both answers).
    pub fn correct(self) -> bool {
        matches!(self, Verdict::Correct | Verdict::Gold | Verdict::Both)
    }

    /// The response gives the foil and not the gold answer (the string
    /// matchers' `foil_only`); None for a verdict that says nothing of a
    /// foil.
    pub fn foil_only(self) -> Option<bool> {
        match self {
            Verdict::Foil => Some(true),
            Verdict::Gold | Verdict::Both | Verdict::Neither => Some(false),
            Verdict::Correct | Verdict::Incorrect | Verdict::Abstained => None,
        }
    }
}

/// Whose response a verdict is on: a case, and the model and prompt
/// template that answered it (None: any).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VerdictKey {
    /// The case id.
    pub case: String,
    /// The model that answered; None: every model.
    pub model: Option<String>,
    /// The prompt template id; None: every prompt.
    pub prompt: Option<String>,
}

impl VerdictKey {
    /// The keys a verdict on `model`'s response to `case` under `prompt`
    /// may have, most specific first: model and prompt, the model's, the
    /// prompt's, then the case's. A lookup takes the first that is there.
    pub fn most_specific_first(
        case: &str,
        model: &str,
        prompt: &str,
    ) -> impl Iterator<Item = VerdictKey> {
        let (m, p) = (Some(model.to_string()), Some(prompt.to_string()));
        let case = case.to_string();
        [(m.clone(), p.clone()), (m, None), (None, p), (None, None)]
            .into_iter()
            .map(move |(model, prompt)| VerdictKey {
                case: case.clone(),
                model,
                prompt,
            })
    }
}

/// The verdicts of a file (or a judge's), by [`VerdictKey`].
#[derive(Debug, Clone, PartialEq)]
pub struct Verdicts {
    by_case: HashMap<VerdictKey, Verdict>,
    /// SHA-256 of the file: the score recipe records it.
    pub sha256: String,
    /// The file's name (or the judge's), for errors and details.
    pub file: String,
    /// What made them (a judge's counts: rows judged, requests, tokens),
    /// written into the `kappa` rows' details; null for a file.
    pub notes: Value,
}

impl Verdicts {
    /// Read a verdicts file (JSON Lines, blank lines skipped; or CSV, TSV,
    /// Parquet with those columns, by the file's ending). A line that
    /// is not an object with a string `id` and a known `verdict`, or a
    /// second verdict for the same case and model, is an error naming the
    /// file, the line and the field.
    pub fn read(path: &Path) -> Result<Verdicts> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| ScoreError::Invalid(format!("{file}: {e}")))?;
        let bad = |line: u64, m: String| ScoreError::Invalid(format!("{file}:{line}: {m}"));
        let mut by_case = HashMap::new();
        for (line, rec) in records(path, &bytes, &bad)? {
            let bad = |m: String| bad(line, m);
            let field = |k: &str| -> Result<Option<String>> {
                match rec.get(k) {
                    // An empty cell (CSV) is no value.
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) if s.is_empty() => Ok(None),
                    Some(Value::String(s)) => Ok(Some(s.clone())),
                    Some(other) => Err(bad(format!("field `{k}` must be a string, found {other}"))),
                }
            };
            let id = field("id")?.ok_or_else(|| bad("field `id` is missing".into()))?;
            let model = field("model")?;
            let prompt = field("prompt")?;
            let word = field("verdict")?.ok_or_else(|| bad("field `verdict` is missing".into()))?;
            let verdict = Verdict::parse(&word).ok_or_else(|| {
                bad(format!(
                    "field `verdict`: `{word}` is not one of correct, incorrect, abstained, gold, foil, both, neither"
                ))
            })?;
            let key = VerdictKey {
                case: id,
                model,
                prompt,
            };
            if let Some(dup) = insert_once(&mut by_case, key, verdict) {
                return Err(bad(dup));
            }
        }
        Ok(Verdicts {
            by_case,
            sha256: ragprobe_artifact::sha256_hex(&bytes),
            file,
            notes: Value::Null,
        })
    }

    /// Verdicts made elsewhere (a judge's), named `file`, identified by
    /// `sha256` (what the score recipe records); two for one key are an
    /// error naming it.
    pub fn from_entries(
        entries: impl IntoIterator<Item = (VerdictKey, Verdict)>,
        sha256: String,
        file: String,
        notes: Value,
    ) -> Result<Verdicts> {
        let mut by_case = HashMap::new();
        for (k, v) in entries {
            if let Some(dup) = insert_once(&mut by_case, k, v) {
                return Err(ScoreError::Invalid(format!("{file}: {dup}")));
            }
        }
        Ok(Verdicts {
            by_case,
            sha256,
            file,
            notes,
        })
    }

    /// The verdicts in the file.
    pub fn len(&self) -> usize {
        self.by_case.len()
    }

    /// No verdict in the file.
    pub fn is_empty(&self) -> bool {
        self.by_case.is_empty()
    }

    /// The verdict on `model`'s response to `case_id` under `prompt`: the
    /// most specific that applies (model and prompt, the model's, the
    /// prompt's, then the case's), with its key.
    pub fn get(&self, case_id: &str, model: &str, prompt: &str) -> Option<(Verdict, &VerdictKey)> {
        VerdictKey::most_specific_first(case_id, model, prompt)
            .find_map(|key| self.by_case.get_key_value(&key).map(|(k, v)| (*v, k)))
    }
}

impl Verdicts {
    /// Keep the verdicts in `store` as a `verdicts` artifact (stage
    /// `verdicts`, the file's SHA-256 its source), so that the report can
    /// tag the responses they judge without the file; its id goes into
    /// [`Verdicts::notes`] as `imported`, which the metric rows made with
    /// them carry (`made_by.imported`). The same file gives the same id.
    pub fn keep(&mut self, store: &ragprobe_artifact::Store) -> Result<String> {
        let mut recipe =
            ragprobe_artifact::Recipe::new(ragprobe_artifact::kinds::VERDICTS, 1, json!({}));
        recipe
            .sources
            .insert(self.file.clone(), self.sha256.clone());
        let rows = self
            .by_case
            .iter()
            .map(|(k, v)| ragprobe_artifact::VerdictRow {
                case_id: k.case.clone(),
                model: k.model.clone(),
                prompt: k.prompt.clone(),
                verdict: v.name().into(),
            })
            .collect();
        let id = ragprobe_artifact::write_all::<ragprobe_artifact::Verdicts>(
            store,
            &recipe,
            rows,
            json!({}),
        )?
        .id;
        self.notes = json!({ "imported": [id] });
        Ok(id)
    }
}

/// The verdicts of a stored artifact, keyed as [`Verdicts::get`] looks
/// them up: a judgements artifact's ([`read_judgements`]; None for an
/// unparsed reply) or an imported `verdicts` artifact's
/// ([`Verdicts::keep`]; a word it does not know is an error naming the
/// artifact and the row).
pub fn read_stored_verdicts(
    store: &ragprobe_artifact::Store,
    id: &str,
) -> Result<Vec<(VerdictKey, Option<Verdict>)>> {
    if store.manifest(id)?.kind != ragprobe_artifact::kinds::VERDICTS {
        return read_judgements(store, id);
    }
    ragprobe_artifact::read::<ragprobe_artifact::Verdicts>(store, id)?
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let v = Verdict::parse(&r.verdict).ok_or_else(|| {
                ScoreError::Invalid(format!(
                    "verdicts artifact {id}: row {}: field `verdict`: `{}` is not a verdict",
                    i + 1,
                    r.verdict
                ))
            })?;
            let key = VerdictKey {
                case: r.case_id,
                model: r.model,
                prompt: r.prompt,
            };
            Ok((key, Some(v)))
        })
        .collect()
}

/// The replies of a judgements artifact (`score --judge` writes one per
/// judged responses artifact): each reply's verdict ([`Verdict::from_judge_reply`];
/// None for an unparsed one), keyed by its case and the judged model and
/// prompt its manifest records; failed requests (no reply) are left out.
pub fn read_judgements(
    store: &ragprobe_artifact::Store,
    id: &str,
) -> Result<Vec<(VerdictKey, Option<Verdict>)>> {
    let m = store.manifest(id)?;
    let get = |k: &str| m.details[k].as_str().map(String::from);
    let (model, prompt) = (get("judged_model"), get("judged_prompt"));
    Ok(
        ragprobe_artifact::read::<ragprobe_artifact::Responses>(store, id)?
            .into_iter()
            .filter_map(|r| {
                let verdict = Verdict::from_judge_reply(r.text.as_deref()?);
                let key = VerdictKey {
                    case: r.case_id,
                    model: model.clone(),
                    prompt: prompt.clone(),
                };
                Some((key, verdict))
            })
            .collect(),
    )
}

/// The records of a verdicts file, at their lines (rows for Parquet).
fn records(
    path: &Path,
    bytes: &[u8],
    bad: &crate::predictions::read::BadLine,
) -> Result<Vec<crate::predictions::read::Record>> {
    use crate::predictions::read::{csv_records, parquet_records};
    let name = path.to_string_lossy().to_lowercase();
    if name.ends_with(".parquet") {
        return parquet_records(path, bad);
    }
    if name.ends_with(".csv") || name.ends_with(".tsv") {
        return csv_records(path, if name.ends_with(".tsv") { b'\t' } else { b',' }, bad);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| bad(0, format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => out.push((n, m)),
            Ok(_) => return Err(bad(n, "not a JSON object".into())),
            Err(e) => return Err(bad(n, format!("not JSON: {e}"))),
        }
    }
    Ok(out)
}

/// Insert `v` at `k`; the message when `k` already has a verdict.
fn insert_once(
    map: &mut HashMap<VerdictKey, Verdict>,
    k: VerdictKey,
    v: Verdict,
) -> Option<String> {
    let msg = format!(
        "a second verdict for case `{}`{}{}",
        k.case,
        k.model
            .as_ref()
            .map(|m| format!(", model `{m}`"))
            .unwrap_or_default(),
        k.prompt
            .as_ref()
            .map(|p| format!(", prompt `{p}`"))
            .unwrap_or_default()
    );
    map.insert(k, v).is_some().then_some(msg)
}

/// Two binary decisions on the same rows: the string matcher's and the
/// verdicts' ("correct" or not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Confusion {
    /// Both say correct.
    pub both: u64,
    /// Only the string matcher says correct.
    pub string_only: u64,
    /// Only the verdict says correct.
    pub verdict_only: u64,
    /// Both say not correct.
    pub neither: u64,
}

impl Confusion {
    /// Count one row.
    pub fn add(&mut self, string: bool, verdict: bool) {
        match (string, verdict) {
            (true, true) => self.both += 1,
            (true, false) => self.string_only += 1,
            (false, true) => self.verdict_only += 1,
            (false, false) => self.neither += 1,
        }
    }

    /// Rows counted.
    pub fn n(&self) -> u64 {
        self.both + self.string_only + self.verdict_only + self.neither
    }

    /// The share of rows where the two agree (p_o).
    pub fn agreement(&self) -> Option<f64> {
        let n = self.n() as f64;
        (n > 0.0).then(|| (self.both + self.neither) as f64 / n)
    }

    /// Cohen's kappa; None without rows or when p_e = 1.
    pub fn kappa(&self) -> Option<f64> {
        let n = self.n() as f64;
        let po = self.agreement()?;
        let s = (self.both + self.string_only) as f64 / n;
        let v = (self.both + self.verdict_only) as f64 / n;
        let pe = s * v + (1.0 - s) * (1.0 - v);
        (pe < 1.0).then(|| (po - pe) / (1.0 - pe))
    }
}

/// The agreement metrics of `rows` against `verdicts` (see the module
/// docs), and the lines of the file that named no scored row.
pub fn agreement(rows: &[Scored], verdicts: &Verdicts, out: &mut Out) {
    type Group<'a> = (&'a str, &'a str, &'a str, &'a str);
    let mut groups: BTreeMap<Group, Vec<(usize, Verdict)>> = BTreeMap::new();
    let mut used: std::collections::HashSet<&VerdictKey> = Default::default();
    for (i, r) in rows.iter().enumerate() {
        if r.failed || r.flags.accuracy.is_none() {
            continue;
        }
        if let Some((v, key)) = verdicts.get(r.case_id, r.model, r.prompt) {
            used.insert(key);
            groups
                .entry((r.dataset, r.model, r.prompt, r.condition))
                .or_default()
                .push((i, v));
        }
    }
    let unmatched = verdicts.len() - used.len();
    if unmatched > 0 {
        tracing::warn!(
            "{}: {unmatched} of {} verdicts name no scored row (case id and model)",
            verdicts.file,
            verdicts.len()
        );
    }
    for ((dataset, model, prompt, condition), judged) in groups {
        let k = Key {
            study: "matcher",
            dataset: dataset.into(),
            model: model.into(),
            prompt: prompt.into(),
        };
        group_rows(rows, &judged, &k, condition, verdicts, unmatched, out);
    }
}

/// The `matcher` metrics of one group's judged rows (`(row, verdict)`):
/// the answer's (every row), then the foil's (the rows whose case has a
/// foil and whose verdict is a foil verdict).
fn group_rows(
    rows: &[Scored],
    judged: &[(usize, Verdict)],
    k: &Key,
    condition: &str,
    verdicts: &Verdicts,
    unmatched: usize,
    out: &mut Out,
) {
    let answer: Vec<(&str, bool, bool)> = judged
        .iter()
        .map(|&(i, v)| {
            (
                rows[i].qid,
                rows[i].flags.accuracy == Some(true),
                v.correct(),
            )
        })
        .collect();
    let abstained = judged
        .iter()
        .filter(|(_, v)| *v == Verdict::Abstained)
        .count();
    let notes = json!({"abstained": abstained, "verdicts_unmatched": unmatched, "verdicts": verdicts.file, "made_by": verdicts.notes});
    compare(
        out,
        k,
        condition,
        &answer,
        &ANSWER,
        &verdicts.file,
        notes.clone(),
    );
    let foil: Vec<(&str, bool, bool)> = judged
        .iter()
        .filter_map(|&(i, v)| Some((rows[i].qid, rows[i].flags.foil_only?, v.foil_only()?)))
        .collect();
    if !foil.is_empty() {
        compare(out, k, condition, &foil, &FOIL, &verdicts.file, notes);
    }
}

/// The names of one comparison's four metrics, and what it compares.
struct Names {
    string: &'static str,
    verdict: &'static str,
    disagreement: &'static str,
    kappa: &'static str,
    what: &'static str,
}

/// The answer: substring accuracy against "the verdict is correct".
const ANSWER: Names = Names {
    string: "string_accuracy",
    verdict: "verdict_accuracy",
    disagreement: "disagreement",
    kappa: "kappa",
    what: "correct (the string matcher's accuracy; a verdict correct, gold or both; abstained = not correct)",
};

/// The foil: the string matchers' `foil_only` against the verdict `foil`.
const FOIL: Names = Names {
    string: "string_foil_only",
    verdict: "verdict_foil_only",
    disagreement: "foil_disagreement",
    kappa: "foil_kappa",
    what: "foil only (the string matchers' foil_only; the verdict foil)",
};

/// Four metrics of two binary decisions on the same rows (`(qid, string,
/// verdict)`): each one's share (x100, interval), the share where they
/// differ (interval), and Cohen's kappa with the confusion matrix.
fn compare(
    out: &mut Out,
    k: &Key,
    condition: &str,
    pairs: &[(&str, bool, bool)],
    names: &Names,
    file: &str,
    notes: Value,
) {
    let mut conf = Confusion::default();
    let n = pairs.len();
    let (mut s_c, mut v_c, mut differ) = (
        Clusters::with_capacity(n),
        Clusters::with_capacity(n),
        Clusters::with_capacity(n),
    );
    for &(qid, s, v) in pairs {
        conf.add(s, v);
        s_c.add(qid, b(s));
        v_c.add(qid, b(v));
        differ.add(qid, b(s != v));
    }
    let d = |who: &str| json!({"definition": format!("{who}: {}", names.what), "verdicts": file});
    out.mean(
        k,
        condition,
        names.string,
        &s_c,
        100.0,
        d("the string matcher's share on the rows with a verdict"),
    );
    out.mean(
        k,
        condition,
        names.verdict,
        &v_c,
        100.0,
        d("the verdicts' share"),
    );
    out.mean(
        k,
        condition,
        names.disagreement,
        &differ,
        100.0,
        d("the share of rows where they differ"),
    );
    let mut details = json!({"definition": format!("Cohen's kappa of the string decision and the verdict: {}", names.what),
        "confusion": {"both": conf.both, "string_only": conf.string_only, "verdict_only": conf.verdict_only, "neither": conf.neither},
        "agreement": conf.agreement()});
    if let (Some(dst), Some(src)) = (details.as_object_mut(), notes.as_object()) {
        dst.extend(src.clone());
    }
    out.rows.push(MetricRow {
        value: conf.kappa(),
        n: conf.n() as i64,
        details: Some(details.to_string()),
        ..k.row(condition, names.kappa)
    });
}

/// Which decision the headline metrics take (`score --matcher`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Matcher {
    /// The string matchers, as the studies score (the default).
    #[default]
    String,
    /// The verdicts (`--verdicts` or `--judge`) where a row has one, the
    /// string decision elsewhere (as [`with_verdicts`]).
    Verdicts,
}

impl Matcher {
    /// Every matcher, in `--matcher`'s order.
    pub const ALL: [Matcher; 2] = [Matcher::String, Matcher::Verdicts];

    /// The name `--matcher` takes (`judge` for the verdicts, whoever made
    /// them) and the recipe records.
    pub fn name(self) -> &'static str {
        match self {
            Matcher::String => "string",
            Matcher::Verdicts => "judge",
        }
    }

    /// The matcher called `name` ([`Matcher::name`]).
    pub fn parse(name: &str) -> Option<Matcher> {
        Matcher::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl std::fmt::Display for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The rows with each decision a verdict gives replaced by it: `accuracy`
/// by "the verdict is correct" where the row has a verdict (and a string
/// decision; failed requests stay out), `foil_only`/`foil_any` by a foil
/// verdict where the row has one; every other column as scored. A row
/// without a verdict keeps its string decision (in the cascade, the rows
/// not sent are those on which the string matchers agree).
pub fn with_verdicts<'a>(rows: &[Scored<'a>], verdicts: &Verdicts) -> Vec<Scored<'a>> {
    rows.iter()
        .map(|r| {
            let mut r = *r;
            if !r.failed && r.flags.accuracy.is_some() {
                if let Some((v, _)) = verdicts.get(r.case_id, r.model, r.prompt) {
                    r.flags.accuracy = Some(v.correct());
                    if let (Some(f), Some(_)) = (v.foil_only(), r.flags.foil_only) {
                        r.flags.foil_only = Some(f);
                        r.flags.foil_any = Some(matches!(v, Verdict::Foil | Verdict::Both));
                    }
                }
            }
            r
        })
        .collect()
}

/// Every metric family under both matchers (see the module docs): rows of
/// breakdown `matcher`, groups `string` then `verdicts`.
pub fn under_both_matchers(
    rows: &[Scored],
    verdicts: &Verdicts,
    opts: &crate::ScoreOptions,
) -> Vec<MetricRow> {
    let replaced = with_verdicts(rows, verdicts);
    let mut out = Vec::new();
    for (i, (group, set)) in [("string", rows), ("verdicts", &replaced[..])]
        .into_iter()
        .enumerate()
    {
        let mut o = Out::new(opts);
        crate::metrics::all(set, &mut o);
        for mut r in o.rows {
            crate::add_details(
                &mut r,
                [("group_index", json!(i)), ("ordered", json!(false))],
            );
            r.breakdown = Some("matcher".into());
            r.breakdown_group = Some(group.into());
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked by hand: 10 rows, both correct 4, string only 1, verdict
    /// only 2, neither 3. p_o = 7/10; string says correct 5/10, verdict
    /// 6/10; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5
    /// = 0.4.
    #[test]
    fn kappa_and_agreement_worked_by_hand() {
        let mut c = Confusion::default();
        for (s, v, n) in [
            (true, true, 4),
            (true, false, 1),
            (false, true, 2),
            (false, false, 3),
        ] {
            for _ in 0..n {
                c.add(s, v);
            }
        }
        assert_eq!(c.n(), 10);
        assert!((c.agreement().unwrap() - 0.7).abs() < 1e-12);
        assert!((c.kappa().unwrap() - 0.4).abs() < 1e-12);
        // Perfect agreement with both classes: kappa 1.
        let p = Confusion {
            both: 3,
            neither: 2,
            ..Default::default()
        };
        assert!((p.kappa().unwrap() - 1.0).abs() < 1e-12);
        // All one class for both: p_e = 1, kappa undefined.
        let one = Confusion {
            both: 5,
            ..Default::default()
        };
        assert_eq!((one.agreement(), one.kappa()), (Some(1.0), None));
        // Systematic disagreement: kappa -1.
        let anti = Confusion {
            string_only: 2,
            verdict_only: 2,
            ..Default::default()
        };
        assert!((anti.kappa().unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(Confusion::default().kappa(), None);
    }

    #[test]
    fn judge_replies_parse_only_as_the_json_the_template_asks_for() {
        let v = Verdict::from_judge_reply;
        assert_eq!(v("{\"verdict\": \"correct\"}"), Some(Verdict::Correct));
        assert_eq!(
            v("Sure.\n```json\n{\"verdict\": \"abstained\"}\n```"),
            Some(Verdict::Abstained)
        );
        assert_eq!(
            v("{\"verdict\": \" incorrect \"}"),
            Some(Verdict::Incorrect)
        );
        assert_eq!(v("{\"verdict\": \"both\"}"), Some(Verdict::Both));
        // What each verdict says of the answer and of the foil.
        let says = |x: Verdict| (x.correct(), x.foil_only());
        assert_eq!(says(Verdict::Gold), (true, Some(false)));
        assert_eq!(
            says(Verdict::Both),
            (true, Some(false)),
            "as substring accuracy counts both"
        );
        assert_eq!(says(Verdict::Foil), (false, Some(true)));
        assert_eq!(says(Verdict::Neither), (false, Some(false)));
        assert_eq!(says(Verdict::Abstained), (false, None));
        for unparsed in [
            "correct",
            "{\"verdict\": \"right\"}",
            "{verdict: correct}",
            "",
            "{\"score\": 1}",
        ] {
            assert_eq!(v(unparsed), None, "{unparsed}");
        }
    }

    #[test]
    fn a_bad_verdicts_line_names_the_file_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("v.jsonl");
        let err = |text: &str| {
            std::fs::write(&p, text).unwrap();
            Verdicts::read(&p).unwrap_err().to_string()
        };
        let ok = "{\"id\": \"c1\", \"verdict\": \"correct\"}\n";
        let e = err(&format!(
            "{ok}\n{{\"id\": \"c2\", \"verdict\": \"maybe\"}}\n"
        ));
        assert!(
            e.contains("v.jsonl:3:") && e.contains("`verdict`") && e.contains("maybe"),
            "{e}"
        );
        let e = err(&format!("{ok}{{\"verdict\": \"correct\"}}\n"));
        assert!(
            e.contains("v.jsonl:2:") && e.contains("`id` is missing"),
            "{e}"
        );
        let e = err(&format!("{ok}{ok}"));
        assert!(
            e.contains("v.jsonl:2:") && e.contains("second verdict"),
            "{e}"
        );
        let e = err("{\"id\": 3, \"verdict\": \"correct\"}\n");
        assert!(
            e.contains("v.jsonl:1:") && e.contains("`id` must be a string"),
            "{e}"
        );
        std::fs::write(
            &p,
            format!("{ok}{{\"id\": \"c1\", \"model\": \"m\", \"verdict\": \"abstained\"}}\n{{\"id\": \"c1\", \"model\": \"m\", \"prompt\": \"p2\", \"verdict\": \"incorrect\"}}\n"),
        )
        .unwrap();
        let v = Verdicts::read(&p).unwrap();
        assert_eq!(v.len(), 3);
        let got = |m: &str, p: &str| v.get("c1", m, p).map(|x| x.0);
        assert_eq!(
            got("m", "p2"),
            Some(Verdict::Incorrect),
            "model and prompt first"
        );
        assert_eq!(got("m", "p"), Some(Verdict::Abstained), "then the model's");
        assert_eq!(
            got("other", "p2"),
            Some(Verdict::Correct),
            "then the case's"
        );
        assert_eq!(v.get("c2", "m", "p"), None);
        // The same as a CSV file; a bad cell names its line.
        let csv = d.path().join("v.csv");
        std::fs::write(&csv, "id,model,verdict\nc1,,correct\nc1,m,abstained\n").unwrap();
        let c = Verdicts::read(&csv).unwrap();
        assert_eq!(c.get("c1", "m", "p").map(|x| x.0), Some(Verdict::Abstained));
        assert_eq!(
            c.get("c1", "n", "p").map(|x| x.0),
            Some(Verdict::Correct),
            "an empty model cell is every model"
        );
        std::fs::write(&csv, "id,verdict\nc1,correct\nc2,maybe\n").unwrap();
        let e = Verdicts::read(&csv).unwrap_err().to_string();
        assert!(e.contains("v.csv:3:") && e.contains("maybe"), "{e}");
    }
}
