//! Scoring predictions made elsewhere: a JSONL, CSV/TSV or Parquet file with
//! an id column, a prediction column and optionally a model column, joined
//! to a `questions` artifact (by qid) or a `cases` artifact (by case_id, or
//! qid when the ids are qids). Unmatched ids are reported, never dropped
//! silently.

use arrow::array::{Array, ListArray, RecordBatch, RecordBatchReader, StringArray};
use arrow::compute::concat_batches;
use bumpalo::Bump;
use hashbrown::hash_table::{self, HashTable};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ragprobe_artifact::{
    column, kinds, read, sha256_hex, ArtifactError, CaseRow, Cases, Expected, Recipe, ScoreRow,
    Scores, Sink, Store,
};
use rayon::prelude::*;
use rustc_hash::FxBuildHasher;
use serde::de;
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::hash::BuildHasher;
use std::path::Path;

use crate::{Lookup, Result, ScoreError, ScoreOptions, ScoreReport};

pub(crate) mod read;
mod targets;
use read::*;
use targets::*;

/// Column names of a predictions file.
#[derive(Debug, Clone)]
pub struct PredictionColumns {
    /// Column holding the question id or case id.
    pub id: String,
    /// Column holding the predicted answer text.
    pub prediction: String,
    /// Column naming the model; None: every prediction is from model `external`.
    pub model: Option<String>,
    /// What to do with several predictions for one (id, model).
    pub on_duplicate: OnDuplicate,
    /// The role the predictions played (e.g. `normal`, `soft`), so that
    /// the metric families of that role run; None: accuracy/EM/F1 and the
    /// families defined by a case's condition only.
    pub role: Option<String>,
}

impl Default for PredictionColumns {
    fn default() -> Self {
        PredictionColumns {
            id: "id".into(),
            prediction: "prediction".into(),
            model: None,
            role: None,
            on_duplicate: OnDuplicate::Error,
        }
    }
}

/// Several predictions for one (id, model): an error naming both lines
/// (the default), or keep the first or the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Stop with an error naming both lines (the default).
    Error,
    /// Keep the first prediction in file order.
    First,
    /// Keep the last prediction in file order.
    Last,
}

/// One prediction of a predictions file: its line (row number for
/// Parquet), id, text and model. JSONL fields are borrowed from the file's
/// bytes when they need no unescaping, and otherwise from an arena
/// ([`Arenas`]), so a million predictions cost the file and 56 bytes
/// each, not two million strings.
#[derive(Debug, Clone, PartialEq)]
struct Prediction<'a> {
    line: u64,
    id: &'a str,
    text: &'a str,
    model: &'a str,
}

/// Where the fields that are not the file's own bytes (unescaped, or
/// written from other JSON values) live: one arena per piece parsed.
type Arenas = Vec<Bump>;

/// Apply the duplicate policy: the indices of the predictions kept, in
/// file order (a `last` prediction takes the place of the first). The
/// table holds 4-byte positions, hashed and compared through the rows: at
/// a million predictions a map keyed by (id, model) cost 80 MB.
fn dedup(file: &Path, rows: &[Prediction], policy: OnDuplicate) -> Result<Vec<u32>> {
    let hash = |r: &Prediction| FxBuildHasher.hash_one((r.id, r.model));
    let mut seen: HashTable<u32> = HashTable::with_capacity(rows.len());
    let mut out: Vec<u32> = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let entry = seen.entry(
            hash(r),
            |&o| {
                let k = &rows[out[o as usize] as usize];
                k.id == r.id && k.model == r.model
            },
            |&o| hash(&rows[out[o as usize] as usize]),
        );
        match entry {
            hash_table::Entry::Vacant(v) => {
                v.insert(position(out.len())?);
                out.push(position(i)?);
            }
            hash_table::Entry::Occupied(o) => match policy {
                OnDuplicate::Error => {
                    return Err(ScoreError::Invalid(format!(
                        "{}:{}: id `{}` (model `{}`) already has a prediction on line {}; use --on-duplicate first|last to keep one",
                        file.display(), r.line, r.id, r.model, rows[out[*o.get() as usize] as usize].line
                    )))
                }
                OnDuplicate::First => {}
                OnDuplicate::Last => out[*o.get() as usize] = position(i)?,
            },
        }
    }
    Ok(out)
}

/// `i` as a 4-byte table entry.
fn position(i: usize) -> Result<u32> {
    u32::try_from(i).map_err(|_| ScoreError::Invalid(format!("more than {} rows", u32::MAX)))
}

/// The targets by case id (and by question id where that differs), as
/// 4-byte indices; later rows win, as in a map collected from the rows.
struct TargetIndex<'t> {
    targets: &'t Targets,
    by_case: HashTable<u32>,
    by_qid: HashTable<u32>,
}

impl<'t> TargetIndex<'t> {
    fn new(targets: &'t Targets) -> Result<Self> {
        let mut by_case: HashTable<u32> = HashTable::with_capacity(targets.len());
        let mut by_qid: HashTable<u32> = HashTable::new();
        for i in 0..targets.len() {
            let (case_id, qid) = (targets.case_id(i), targets.qid(i));
            let p = position(i)?;
            put(&mut by_case, case_id, p, |j| targets.case_id(j));
            if qid != case_id {
                put(&mut by_qid, qid, p, |j| targets.qid(j));
            }
        }
        Ok(TargetIndex {
            targets,
            by_case,
            by_qid,
        })
    }

    /// The target whose case id is `id`, or else whose question id is.
    fn get(&self, id: &str) -> Option<usize> {
        let t = self.targets;
        find(&self.by_case, id, |j| t.case_id(j)).or_else(|| find(&self.by_qid, id, |j| t.qid(j)))
    }
}

/// Target `p` under `key` in a table whose entries' keys are `key_of`
/// (a later target replaces an earlier one).
fn put<'t>(table: &mut HashTable<u32>, key: &str, p: u32, key_of: impl Fn(usize) -> &'t str) {
    let hash = |s: &str| FxBuildHasher.hash_one(s);
    table
        .entry(
            hash(key),
            |&j| key_of(j as usize) == key,
            |&j| hash(key_of(j as usize)),
        )
        .insert(p);
}

/// The target under `key` in a table filled by [`put`].
fn find<'t>(table: &HashTable<u32>, key: &str, key_of: impl Fn(usize) -> &'t str) -> Option<usize> {
    table
        .find(FxBuildHasher.hash_one(key), |&j| key_of(j as usize) == key)
        .map(|&j| j as usize)
}

/// Score a predictions file against a questions or cases artifact.
/// Returns the report and the ids that matched nothing.
pub fn score_predictions(
    store: &Store,
    file: &Path,
    against: &str,
    cols: &PredictionColumns,
    opts: &ScoreOptions,
) -> Result<(ScoreReport, Vec<String>)> {
    opts.check()?;
    let id = store.resolve(against)?;
    let kind = store.manifest(&id)?.kind;
    let mut look = Lookup::default();
    if opts.breakdown.is_some() {
        if kind == kinds::QUESTIONS {
            look.add_questions(store, &id)?;
        } else if kind == kinds::CASES {
            look.add_for(store, &id)?;
        }
    }
    if kind != kinds::CASES && kind != kinds::QUESTIONS {
        return Err(ScoreError::Invalid(format!(
            "{id} is a `{kind}` artifact; predictions join to questions or cases"
        )));
    }
    let bytes = map_file(file)?;
    let mut arenas = Arenas::new();
    let (targets, source, preds) = read_inputs(store, &id, &kind, file, &bytes, cols, &mut arenas)?;
    let kept = dedup(file, &preds, cols.on_duplicate)?;
    let (mut matched, unmatched) = match_ids(file, &kind, &preds, &kept, &targets)?;
    let mut recipe = Recipe::new(
        "score-predictions",
        crate::STAGE_VERSION,
        json!({"options": opts.params(), "columns": {"id": cols.id, "prediction": cols.prediction, "model": cols.model, "role": cols.role}, "on_duplicate": format!("{:?}", cols.on_duplicate).to_lowercase(), "unmatched": unmatched.len()}),
    );
    recipe.inputs = vec![id];
    recipe.sources.insert("predictions".into(), source);
    let prompt = crate::PromptInfo {
        role: cols.role.clone(),
        ..crate::PromptInfo::bare("external")
    };
    // The scores kind's canonical order (model, prompt, case_id,
    // request_id; one prompt here), as `write_all` would sort the rows.
    matched.par_sort_unstable_by(|&(pa, ca), &(pb, cb)| {
        let (a, b) = (&preds[pa as usize], &preds[pb as usize]);
        (a.model, targets.case_id(ca as usize))
            .cmp(&(b.model, targets.case_id(cb as usize)))
            .then_with(|| request_id(a).cmp(&request_id(b)))
    });
    let (sink, rows, failed) =
        score_blocks(store, &recipe, &matched, &preds, &targets, &prompt, opts)?;
    drop(matched);
    drop(preds);
    drop(arenas);
    drop(bytes);
    if let (Some(_), Targets::Cases(cases)) = (&opts.breakdown, targets) {
        look.cases = cases.into_iter().map(|c| (c.case_id.clone(), c)).collect();
    }
    Ok((
        crate::finish_streamed(store, &recipe, sink, (rows, failed), opts, &look)?,
        unmatched,
    ))
}

/// The targets (`id`, a `kind` artifact) and the predictions file's digest
/// and predictions. The targets are read on a thread of their own while
/// the pool hashes the file (its digest goes into the recipe) and parses
/// it; the decoder's scratch memory goes with the thread.
fn read_inputs<'a>(
    store: &Store,
    id: &str,
    kind: &str,
    file: &Path,
    bytes: &'a [u8],
    cols: &PredictionColumns,
    arenas: &'a mut Arenas,
) -> Result<(Targets, String, Vec<Prediction<'a>>)> {
    let (targets, (source, preds)) = std::thread::scope(|s| {
        let targets = s.spawn(|| {
            if kind == kinds::CASES {
                Ok(Targets::Cases(read::<Cases>(store, id)?))
            } else {
                Targets::questions(store, id)
            }
        });
        let parsed = rayon::join(
            || sha256_hex(bytes),
            || read_file(file, bytes, cols, arenas),
        );
        let targets = targets
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (targets, parsed)
    });
    Ok((targets?, source, preds?))
}

/// A prediction's request id: the hash of its id and model.
fn request_id(p: &Prediction) -> String {
    sha256_hex(format!("{}\u{1f}{}", p.id, p.model).as_bytes())
}

/// (prediction, target) of each kept prediction whose id names a case (or,
/// failing that, a question), as 4-byte indices, and the ids that match
/// nothing (warned about; none matching at all is an error).
fn match_ids(
    file: &Path,
    kind: &str,
    preds: &[Prediction],
    kept: &[u32],
    targets: &Targets,
) -> Result<(Vec<(u32, u32)>, Vec<String>)> {
    let index = TargetIndex::new(targets)?;
    // (prediction, target) of each kept prediction whose id names a case
    // (or, failing that, a question), as 4-byte indices.
    let mut matched: Vec<(u32, u32)> = Vec::with_capacity(kept.len());
    let mut unmatched = Vec::new();
    for &p in kept {
        let pid: &str = preds[p as usize].id;
        match index.get(pid) {
            Some(c) => matched.push((p, position(c)?)),
            None => unmatched.push(pid.to_string()),
        }
    }
    drop(index);
    if !unmatched.is_empty() {
        tracing::warn!(
            "{} prediction id(s) match no {kind} row, e.g. {}",
            unmatched.len(),
            unmatched
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if matched.is_empty() {
        return Err(ScoreError::Invalid(format!(
            "{}: none of the {} prediction ids matches the {kind} artifact",
            file.display(),
            kept.len()
        )));
    }
    Ok((matched, unmatched))
}

/// Scores the matched predictions on all cores a block at a time and
/// streams each block into a scores artifact of `recipe` (a writer thread
/// encodes and compresses block n while the cores score block n + 1);
/// returns the sink with the rows and failed rows written.
fn score_blocks(
    store: &Store,
    recipe: &Recipe,
    matched: &[(u32, u32)],
    preds: &[Prediction],
    targets: &Targets,
    prompt: &crate::PromptInfo,
    opts: &ScoreOptions,
) -> Result<(Sink<Scores>, usize, usize)> {
    let mut sink = Sink::<Scores>::new(store, recipe)?;
    let (mut rows, mut failed) = (0usize, 0usize);
    // A writer thread encodes and compresses block n while the cores
    // score block n + 1.
    let sink = std::thread::scope(|s| -> Result<Sink<Scores>> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<ScoreRow>>(1);
        let writer = s.spawn(move || -> Result<Sink<Scores>> {
            for rows in rx {
                for row in rows {
                    sink.push(row)?;
                }
            }
            Ok(sink)
        });
        for block in matched.chunks(SCORE_BLOCK) {
            let scored: Vec<ScoreRow> = block
                .par_iter()
                .map_init(CaseRow::default, |scratch, &(p, c)| {
                    let p = &preds[p as usize];
                    crate::row::score(
                        targets.case(c as usize, scratch),
                        prompt,
                        p.model,
                        &request_id(p),
                        Some(p.text),
                        opts.parse,
                        opts.studies,
                    )
                })
                .collect();
            rows += scored.len();
            failed += scored.iter().filter(|r| r.failed).count();
            if tx.send(scored).is_err() {
                break; // the writer stopped: its error is returned below
            }
        }
        drop(tx);
        writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    Ok((sink, rows, failed))
}

/// The bytes of `file`, mapped rather than copied: they are read in place
/// and leave memory the moment scoring is done with them, where a copy's
/// pages linger in the allocator while the metrics are computed. What is
/// not a regular file (a pipe, `<(…)`) is read.
fn map_file(file: &Path) -> Result<Bytes> {
    let bad = |e: std::io::Error| ScoreError::Invalid(format!("{}: {e}", file.display()));
    let f = std::fs::File::open(file).map_err(bad)?;
    let meta = f.metadata().map_err(bad)?;
    if !meta.is_file() {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut &f, &mut bytes).map_err(bad)?;
        return Ok(Bytes::Read(bytes));
    }
    if meta.len() == 0 {
        return Ok(Bytes::Read(Vec::new()));
    }
    // SAFETY: the map is read only. A file rewritten while it is scored
    // gives the bytes of the moment (the recorded digest is of what was
    // scored); one truncated meanwhile ends the process with SIGBUS, as
    // any reader of a mapped file.
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(bad)?;
    Ok(Bytes::Mapped(map))
}

/// A predictions file's bytes.
enum Bytes {
    Read(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Read(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Prediction<'static>> {
        let r = |line: u64, id: &'static str, p: &'static str| Prediction {
            line,
            id,
            text: p,
            model: "m",
        };
        vec![r(1, "q1", "a"), r(2, "q2", "b"), r(3, "q1", "c")]
    }

    /// A question made a case in place reads as the questions reader
    /// reads it, across batches, with a scratch case reused from a longer
    /// row (answers and parts shrink, parts come and go).
    #[test]
    fn questions_become_cases_as_the_reader_reads_them() {
        use ragprobe_artifact::{write_all, QuestionRow, Questions};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let rows: Vec<QuestionRow> = (0..QUESTION_BATCH + 7)
            .map(|i| QuestionRow {
                qid: format!("q{i}"),
                dataset: if i % 2 == 0 { "nq" } else { "tqa" }.into(),
                lang: "en".into(),
                question: format!("question {i}"),
                answers: (0..i % 4).map(|j| format!("a{i}-{j}")).collect(),
                answer_parts: (i % 3 == 0)
                    .then(|| (0..i % 5).map(|j| vec![format!("p{j}"); j % 3]).collect()),
                ..Default::default()
            })
            .collect();
        let recipe = Recipe::new("test", 1, json!({}));
        let id = write_all::<Questions>(&store, &recipe, rows, json!({}))
            .unwrap()
            .id;
        let read = read::<Questions>(&store, &id).unwrap();
        let targets = Targets::questions(&store, &id).unwrap();
        assert_eq!(targets.len(), read.len());
        let mut scratch = CaseRow::default();
        // Longest first, so the scratch case always has more to forget.
        for i in (0..read.len()).rev() {
            let q = &read[i];
            let case = targets.case(i, &mut scratch);
            assert_eq!((targets.case_id(i), targets.qid(i)), (&*q.qid, &*q.qid));
            assert_eq!(
                (&case.case_id, &case.qid, &case.dataset, &case.lang),
                (&q.qid, &q.qid, &q.dataset, &q.lang)
            );
            assert_eq!(
                (&case.answers, &case.answer_parts),
                (&q.answers, &q.answer_parts),
                "{i}"
            );
            assert_eq!(
                (&*case.condition, case.expected),
                ("external", Expected::Answer)
            );
        }
    }

    /// Regression: a predictions "file" that is a pipe (`<(…)`, a FIFO)
    /// reported size 0 and read as no predictions once files were mapped.
    #[cfg(unix)]
    #[test]
    fn a_pipe_is_read_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let text = "{\"id\": \"q1\", \"prediction\": \"a\"}\n";
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
        };
        let bytes = map_file(&fifo).unwrap();
        writer.join().unwrap();
        assert_eq!(&*bytes, text.as_bytes());
        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        assert!(map_file(&empty).unwrap().is_empty());
    }

    /// Regression: 20 rows for one id were all counted (n = 21 for 2 questions).
    #[test]
    fn duplicate_ids_are_an_error_or_one_is_kept() {
        let rows = rows();
        let e = dedup(Path::new("p.jsonl"), &rows, OnDuplicate::Error)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("p.jsonl:3") && e.contains("`q1`") && e.contains("line 1"),
            "{e}"
        );
        let texts = |kept: Vec<u32>| {
            kept.iter()
                .map(|&i| rows[i as usize].text.to_string())
                .collect::<Vec<_>>()
        };
        let first = dedup(Path::new("p.jsonl"), &rows, OnDuplicate::First).unwrap();
        assert_eq!(texts(first), ["a", "b"]);
        let last = dedup(Path::new("p.jsonl"), &rows, OnDuplicate::Last).unwrap();
        assert_eq!(texts(last), ["c", "b"]);
    }

    /// Arenas that live as long as the test.
    fn arenas() -> &'static mut Arenas {
        Box::leak(Box::default())
    }

    fn parse(text: &str) -> Result<Vec<Prediction<'_>>> {
        let cols = PredictionColumns {
            model: Some("model".into()),
            ..Default::default()
        };
        let bad = |line: u64, m: String| ScoreError::Invalid(format!("p.jsonl:{line}: {m}"));
        jsonl_predictions(text.as_bytes(), &cols, &bad, arenas())
    }

    /// The JSONL reader keeps what a JSON map would: strings as they are
    /// (unescaped), numbers and other values as JSON text, the last of a
    /// repeated key; blank lines are skipped but counted.
    #[test]
    fn jsonl_fields_read_as_a_json_map_would() {
        let text = "{\"id\": \"q1\", \"prediction\": \"a \\\"b\\\"\", \"model\": \"m\", \"x\": [1, {\"y\": 2}]}\r\n\n  \n{\"id\": 7, \"prediction\": [\"x\", 1.5], \"model\": true, \"id\": 2.0}\n";
        let rows = parse(text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].line, rows[0].id, rows[0].text, rows[0].model),
            (1, "q1", "a \"b\"", "m")
        );
        let in_file = |s: &str| text.as_bytes().as_ptr_range().contains(&s.as_ptr());
        assert!(in_file(rows[0].id), "an unescaped string is the file's");
        assert!(!in_file(rows[0].text), "an unescaped copy is the arena's");
        assert_eq!(
            (rows[1].line, rows[1].id, rows[1].text, rows[1].model),
            (4, "2.0", "[\"x\",1.5]", "true")
        );
        // The same text through serde_json's map, as before.
        let m: serde_json::Map<String, Value> =
            serde_json::from_str(text.lines().nth(3).unwrap()).unwrap();
        assert_eq!(field_text(&m["id"]).as_deref(), Some(rows[1].id));
        assert_eq!(field_text(&m["prediction"]).as_deref(), Some(rows[1].text));
    }

    /// Regression: one field named for two roles fed only the first, and a
    /// line of non-ASCII whitespace was an error instead of blank.
    #[test]
    fn one_field_serves_every_role_that_names_it() {
        let cols = PredictionColumns {
            model: Some("id".into()),
            ..Default::default()
        };
        let bad = |line: u64, m: String| ScoreError::Invalid(format!("p.jsonl:{line}: {m}"));
        let text = "{\"id\": \"q1\", \"prediction\": \"a\"}\n\u{a0}\u{2028}\n";
        let rows = jsonl_predictions(text.as_bytes(), &cols, &bad, arenas()).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].id, rows[0].model), ("q1", "q1"));
    }

    /// Bad lines are named, in whichever piece they fall.
    #[test]
    fn bad_jsonl_lines_are_named() {
        let good = "{\"id\": \"q\", \"prediction\": \"p\", \"model\": \"m\"}\n";
        let many = good.repeat(40_000);
        for (tail, want) in [
            ("[1, 2]", "not a JSON object"),
            ("{\"id\": \"q\", \"prediction\": ", "malformed JSON"),
            (
                "{\"id\": \"q\", \"model\": \"m\"}",
                "field `prediction` (the prediction column) is missing",
            ),
            (
                "{\"id\": null, \"prediction\": \"p\", \"model\": \"m\"}",
                "field `id` (the id column) is missing",
            ),
            (
                "{\"id\": \"q\", \"prediction\": \"p\"}",
                "field `model` (the model column) is missing",
            ),
            (
                "{\"id\": \"q\", \"prediction\": \"p\", \"model\": \"m\"} x",
                "malformed JSON",
            ),
        ] {
            let e = parse(&format!("{many}{tail}\n{good}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("p.jsonl:40001: ") && e.contains(want),
                "{tail}: {e}"
            );
        }
        let mut bytes = many.into_bytes();
        bytes.extend_from_slice(b"{\"id\": \"\xff\"}\n");
        let cols = PredictionColumns::default();
        let bad = |line: u64, m: String| ScoreError::Invalid(format!("p.jsonl:{line}: {m}"));
        let e = jsonl_predictions(&bytes, &cols, &bad, arenas())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.jsonl:40001: not UTF-8"), "{e}");
    }
}
