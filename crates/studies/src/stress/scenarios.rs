//! Seed 002's scenario (RAG-Stress): the evidence edit — the answer
//! sentence moved to the beginning, middle or end of its passage, a clean
//! arm and an arm with the answer replaced by a foil.

use ragprobe_artifact::{
    condition, CaseDoc, CaseRow, ContextRow, DocSource, Expected, QuestionRow,
};
use ragprobe_matching::has_answer;
use ragprobe_perturb::foil::Foil;
use ragprobe_perturb::text::{
    join_sentences, position_of, replace_aliases, span_centre, split_sentences,
};
use ragprobe_perturb::{doc, foil_json, rng_for, Builder, Result, Scenario};
use serde_json::{json, Value};

/// `evidence-edit`: the answer-bearing passage with its answer sentence moved to the
/// first, middle or last slot; a clean arm and one with the answer replaced by a foil.
pub struct EvidenceEdit;

impl Scenario for EvidenceEdit {
    fn name(&self) -> &'static str {
        "evidence-edit"
    }
    fn needs_foil(&self) -> bool {
        true
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        let top = b.topk(&q.qid);
        evidence_edit(b, q, &top)
    }
}

/// Seed 002's evidence edit: the answer-bearing passage, its answer
/// sentence moved to the first, middle or last sentence slot; a clean arm
/// (supports the reference) and an edited arm (the same text with the
/// answer in that one sentence replaced by the foil). The realised
/// position of the span (centre offset / length) is verified: beginning
/// < 1/3 <= middle <= 2/3 < end.
fn evidence_edit<'a>(
    b: &mut Builder<'a>,
    q: &QuestionRow,
    top: &[&ContextRow],
) -> Result<Vec<CaseRow>> {
    let s = EvidenceEdit.name();
    let Some(src) = top.iter().find(|c| c.has_answer == Some(true)).copied() else {
        b.skip(s, "no answer-bearing passage in the top k");
        return Ok(vec![]);
    };
    let (sentences, supporting) = passage_sentences(src);
    let ai = match answer_sentence(&q.answers, &sentences, &supporting) {
        Ok(ai) => ai,
        Err(reason) => {
            b.skip(s, reason);
            return Ok(vec![]);
        }
    };
    let mut rng = rng_for(b.opts.seed, &q.qid, "foil");
    let Some(foil) = b.foils.pick(q, &mut rng)? else {
        b.skip(s, "no foil of the right shape");
        return Ok(vec![]);
    };
    let (edited, n) = replace_aliases(&sentences[ai], &q.answers, &foil.text);
    if n == 0 || has_answer(&q.answers, &edited) {
        b.skip(s, "answer still present after replacement");
        return Ok(vec![]);
    }
    let plan = EditPlan {
        src,
        others: sentences
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != ai)
            .map(|(_, t)| t.clone())
            .collect(),
        clean: &sentences[ai],
        edited,
        foil,
        distractors: top
            .iter()
            .filter(|c| c.has_answer != Some(true))
            .take(b.opts.distractors)
            .map(|c| doc(c, DocSource::Retrieved))
            .collect(),
    };
    let mut out = Vec::new();
    for position in ["beginning", "middle", "end"] {
        out.extend(evidence_at(b, q, &plan, position));
    }
    Ok(out)
}

/// evidence-edit's clean and edited cases with the answer sentence at
/// `position`; none (a skip) when the realised position differs.
fn evidence_at<'a>(
    b: &mut Builder<'a>,
    q: &QuestionRow,
    plan: &EditPlan,
    position: &str,
) -> Vec<CaseRow> {
    let slot = match position {
        "beginning" => 0,
        "middle" => plan.others.len() / 2,
        _ => plan.others.len(),
    };
    let clean = plan.arrange(slot, plan.clean);
    let edited = plan.arrange(slot, &plan.edited);
    let c_at = span_centre(&clean, &q.answers);
    let e_at = span_centre(&edited, std::slice::from_ref(&plan.foil.text));
    let ok = |x: Option<f64>| x.is_some_and(|f| position_of(f) == position);
    if !(ok(c_at) && ok(e_at)) {
        b.skip(
            EvidenceEdit.name(),
            &format!("position not realisable: {position}"),
        );
        return vec![];
    }
    [
        (DocSource::Clean, clean, c_at),
        (DocSource::Edited, edited, e_at),
    ]
    .into_iter()
    .map(|(arm, text, at)| evidence_case(b, q, plan, position, arm, text, at))
    .collect()
}

/// One evidence-edit arm's case: the arranged passage `text` (answer
/// span centred at `at`), then the distractors.
fn evidence_case(
    b: &Builder<'_>,
    q: &QuestionRow,
    plan: &EditPlan,
    position: &str,
    arm: DocSource,
    text: String,
    at: Option<f64>,
) -> CaseRow {
    let condition = format!("{}{arm}", condition::EVIDENCE_PREFIX);
    let target = CaseDoc {
        doc_id: format!("{}#{arm}-{position}", plan.src.doc_id),
        title: plan.src.title.clone(),
        text,
        source: arm,
        has_answer: Some(arm == DocSource::Clean),
    };
    let mut docs = vec![target];
    docs.extend(plan.distractors.iter().cloned());
    let params = json!({"position": position, "arm": arm, "source_doc": plan.src.doc_id, "span_offset": at, "foil": foil_json(&plan.foil),
        "distractors": plan.distractors.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>(), "seed": b.opts.seed});
    let mut case = b.base_case(q, &condition, docs, Expected::Answer, params);
    case.foil = Some(plan.foil.text.clone());
    case.answer_position = Some(position.into());
    case
}

/// One evidence-edit question's material: the source passage, its other
/// sentences, the answer sentence clean and edited, the foil and the
/// distractors that follow the target passage.
struct EditPlan<'p> {
    src: &'p ContextRow,
    others: Vec<String>,
    clean: &'p str,
    edited: String,
    foil: Foil,
    distractors: Vec<CaseDoc>,
}

impl EditPlan<'_> {
    /// The passage with `answer_sentence` at sentence slot `slot` among the others.
    fn arrange(&self, slot: usize, answer_sentence: &str) -> String {
        let mut v = self.others.clone();
        v.insert(slot, answer_sentence.to_string());
        join_sentences(&v)
    }
}

/// An evidence-edit source passage's sentences and supporting-fact sentence
/// ids: HotpotQA passages carry both (ingest `meta`); others are split.
fn passage_sentences(src: &ContextRow) -> (Vec<String>, Vec<usize>) {
    // HotpotQA passages carry their sentences and the supporting-fact
    // sentence ids (ingest `meta`): edit and move those sentences, and
    // prefer a supporting sentence as the answer-bearing assertion.
    let meta: Option<Value> = src
        .meta
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok());
    let given: Option<Vec<String>> =
        meta.as_ref()
            .and_then(|m| m["sentences"].as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            });
    let supporting: Vec<usize> = meta
        .as_ref()
        .and_then(|m| m["supporting_sentences"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_u64().map(|n| n as usize))
                .collect()
        })
        .unwrap_or_default();
    let sentences = given
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| split_sentences(&src.text));
    (sentences, supporting)
}

/// The index of the one sentence holding the answer (the supporting one when
/// several hold it and exactly one of those supports), or the skip reason.
fn answer_sentence(
    answers: &[String],
    sentences: &[String],
    supporting: &[usize],
) -> Result<usize, &'static str> {
    let mut with_answer: Vec<usize> = (0..sentences.len())
        .filter(|&i| has_answer(answers, &sentences[i]))
        .collect();
    if with_answer.len() > 1
        && with_answer
            .iter()
            .filter(|i| supporting.contains(i))
            .count()
            == 1
    {
        with_answer.retain(|i| supporting.contains(i));
    }
    match with_answer.as_slice() {
        [ai] => Ok(*ai),
        [] => Err("answer spans a sentence boundary"),
        _ => Err("answer in more than one sentence"),
    }
}
