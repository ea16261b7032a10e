//! Seed 000's scenarios (imperfect retrieval, §5.2–5.4): one passage
//! added to the top-k — another question's passage without the answer
//! (add-random), the (k+1)-th retrieved one (add-top-k), a passage
//! supporting a foil (add-conflict, by rule or by the writer model), or a
//! model-written GenADV passage (add-genadv).

use ragprobe_artifact::{
    CaseDoc, CaseRow, DocSource, Expected, GenAdvStatus, QuestionRow,
};
use ragprobe_matching::has_answer;
use ragprobe_perturb::text::replace_aliases;
use ragprobe_perturb::{
    conflict_passage_problem, doc, foil_json, rng_for, Builder, Result, Scenario,
};
use rand::seq::IndexedRandom;
use serde_json::json;

/// `add-random`: the top-k plus a passage retrieved for another question, without the answer, at a random slot.
pub struct AddRandom;
/// `add-topk`: the top-k plus the (k+1)-th retrieved passage, at a random slot.
pub struct AddTopk;
/// `add-conflict`: the top-k plus a passage supporting a foil answer, at a random slot.
pub struct AddConflict;
/// `add-genadv`: the top-k plus an accepted model-written GenADV passage, at a random slot.
pub struct AddGenadv;

impl Scenario for AddRandom {
    fn name(&self) -> &'static str {
        "add-random"
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        add_random(b, q, self.name())
    }
}

impl Scenario for AddTopk {
    fn name(&self) -> &'static str {
        "add-topk"
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        add_topk(b, q, self.name())
    }
}

impl Scenario for AddConflict {
    fn name(&self) -> &'static str {
        "add-conflict"
    }
    fn needs_foil(&self) -> bool {
        true
    }
    fn needs_writer(&self, conflict_writer_model: bool) -> bool {
        conflict_writer_model
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        add_conflict(b, q, self.name())
    }
}

impl Scenario for AddGenadv {
    fn name(&self) -> &'static str {
        "add-genadv"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["genadv"]
    }
    fn needs_writer(&self, _: bool) -> bool {
        true
    }
    fn build(&self, b: &mut Builder<'_>, q: &QuestionRow) -> Result<Vec<CaseRow>> {
        add_genadv(b, q, self.name())
    }
}

/// add-random: the top-k plus a passage retrieved for another question
/// that does not hold the answer, at a random slot.
fn add_random(b: &mut Builder, q: &QuestionRow, s: &'static str) -> Result<Vec<CaseRow>> {
    let top = &b.topk(&q.qid)[..];
    let opts = b.opts;
    let mut rng = rng_for(opts.seed, &q.qid, "add-random:source");
    let others: Vec<&QuestionRow> = b
        .questions
        .iter()
        .filter(|o| o.qid != q.qid && b.has_contexts(&o.qid))
        .collect();
    for _ in 0..20 {
        let Some(other) = others.choose(&mut rng) else {
            break;
        };
        let pool = b.topk(&other.qid);
        let Some(c) = pool.choose(&mut rng) else {
            continue;
        };
        if !q.answers.is_empty() && has_answer(&q.answers, &c.text) {
            continue;
        }
        let mut d = doc(c, DocSource::Random);
        d.has_answer = (!q.answers.is_empty()).then_some(false);
        return Ok(vec![b.add_one(
            q,
            s,
            top,
            d,
            json!({"from_qid": other.qid}),
        )]);
    }
    b.skip(s, "no passage of another question without the answer");
    Ok(vec![])
}

/// add-topk: the top-k plus the (k+1)-th retrieved passage.
fn add_topk(b: &mut Builder, q: &QuestionRow, s: &'static str) -> Result<Vec<CaseRow>> {
    let top = &b.topk(&q.qid)[..];
    let opts = b.opts;
    let Some(next) = b
        .contexts(&q.qid)
        .iter()
        .find(|c| c.rank as usize == opts.k + 1)
    else {
        b.skip(s, "no (k+1)-th passage (retrieve with --extra 1)");
        return Ok(vec![]);
    };
    Ok(vec![b.add_one(
        q,
        s,
        top,
        doc(next, DocSource::Topk),
        json!({}),
    )])
}

/// add-conflict: the top-k plus a passage supporting a foil, written by
/// rule (aliases replaced) or by the writer model.
fn add_conflict(b: &mut Builder, q: &QuestionRow, s: &'static str) -> Result<Vec<CaseRow>> {
    let top = &b.topk(&q.qid)[..];
    let opts = b.opts;
    let Some(src) = top.iter().find(|c| c.has_answer == Some(true)) else {
        b.skip(s, "no answer-bearing passage in the top k");
        return Ok(vec![]);
    };
    let mut rng = rng_for(opts.seed, &q.qid, "foil");
    let Some(foil) = b.foils.pick(q, &mut rng)? else {
        b.skip(s, "no foil of the right shape");
        return Ok(vec![]);
    };
    let (d, extra) = if let Some(w) = b.writer.as_mut().filter(|_| b.opts.conflict_writer_model) {
        let trail = w.conflict(&q.qid, &q.question, &q.answers, &foil.text);
        let ok = trail.status == GenAdvStatus::Accepted;
        let reason = trail.reason.clone().unwrap_or_default();
        let text = trail.passage.clone().unwrap_or_default();
        b.trails.push(trail);
        if !ok {
            b.skip(s, &format!("model-written conflict passage {reason}"));
            return Ok(vec![]);
        }
        (
            CaseDoc {
                doc_id: format!("{}#conflict-model", q.qid),
                title: None,
                text,
                source: DocSource::Conflict,
                has_answer: Some(false),
            },
            json!({"writer": "model", "foil": foil_json(&foil)}),
        )
    } else {
        let (text, n) = replace_aliases(&src.text, &q.answers, &foil.text);
        if let Some(reason) = conflict_passage_problem(&text, n, &q.answers, &foil.text) {
            b.skip(s, reason);
            return Ok(vec![]);
        }
        (
            CaseDoc {
                doc_id: format!("{}#conflict", src.doc_id),
                title: src.title.clone(),
                text,
                source: DocSource::Conflict,
                has_answer: Some(false),
            },
            json!({"writer": "rule", "conflict_source": src.doc_id, "foil": foil_json(&foil), "replacements": n}),
        )
    };
    let mut case = b.add_one(q, s, top, d, extra);
    case.expected = Expected::Conflict;
    case.foil = Some(foil.text);
    Ok(vec![case])
}

/// add-genadv: the top-k plus an accepted GenADV passage.
fn add_genadv(b: &mut Builder, q: &QuestionRow, s: &'static str) -> Result<Vec<CaseRow>> {
    let top = &b.topk(&q.qid)[..];
    if q.answers.is_empty() {
        b.skip(s, "no gold answer");
        return Ok(vec![]);
    }
    let w = b.writer.as_mut().expect("checked before the run");
    let trail = w.genadv(&q.qid, &q.question, &q.answers);
    let ok = trail.status == GenAdvStatus::Accepted;
    let reason = format!(
        "{}: {}",
        trail.status,
        trail.reason.clone().unwrap_or_default()
    );
    let text = trail.passage.clone().unwrap_or_default();
    b.trails.push(trail);
    if !ok {
        b.skip(s, &reason);
        return Ok(vec![]);
    }
    let d = CaseDoc {
        doc_id: format!("{}#genadv", q.qid),
        title: None,
        text,
        source: DocSource::Adversarial,
        has_answer: Some(false),
    };
    Ok(vec![b.add_one(q, s, top, d, json!({"writer": "model"}))])
}
