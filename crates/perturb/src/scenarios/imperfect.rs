//! Seed 000 (imperfect retrieval): add-random, add-top-k, conflict and
//! GenADV cases.

use crate::*;

impl<'a> Builder<'a> {
    /// add-random: the top-k plus a passage retrieved for another question
    /// that does not hold the answer, at a random slot.
    pub(crate) fn add_random(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let mut rng = rng_for(opts.seed, &q.qid, "add-random:source");
        let others: Vec<&QuestionRow> = self
            .questions
            .iter()
            .filter(|o| o.qid != q.qid && self.by_qid.contains_key(o.qid.as_str()))
            .collect();
        for _ in 0..20 {
            let Some(other) = others.choose(&mut rng) else {
                break;
            };
            let pool = self.topk(&other.qid);
            let Some(c) = pool.choose(&mut rng) else {
                continue;
            };
            if !q.answers.is_empty() && has_answer(&q.answers, &c.text) {
                continue;
            }
            let mut d = doc(c, DocSource::Random);
            d.has_answer = (!q.answers.is_empty()).then_some(false);
            return Ok(vec![self.add_one(
                q,
                s,
                top,
                d,
                json!({"from_qid": other.qid}),
            )]);
        }
        self.skip(s, "no passage of another question without the answer");
        Ok(vec![])
    }

    /// add-topk: the top-k plus the (k+1)-th retrieved passage.
    pub(crate) fn add_topk(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let Some(next) = self
            .contexts(&q.qid)
            .iter()
            .find(|c| c.rank as usize == opts.k + 1)
        else {
            self.skip(s, "no (k+1)-th passage (retrieve with --extra 1)");
            return Ok(vec![]);
        };
        Ok(vec![self.add_one(
            q,
            s,
            top,
            doc(next, DocSource::Topk),
            json!({}),
        )])
    }

    /// add-conflict: the top-k plus a passage supporting a foil, written by
    /// rule (aliases replaced) or by the writer model.
    pub(crate) fn add_conflict(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let Some(src) = top.iter().find(|c| c.has_answer == Some(true)) else {
            self.skip(s, "no answer-bearing passage in the top k");
            return Ok(vec![]);
        };
        let mut rng = rng_for(opts.seed, &q.qid, "foil");
        let Some(foil) = self.foils.pick(q, &mut rng)? else {
            self.skip(s, "no foil of the right shape");
            return Ok(vec![]);
        };
        let (d, extra) = if let Some(w) = self
            .writer
            .as_mut()
            .filter(|_| self.opts.conflict_writer_model)
        {
            let trail = w.conflict(&q.qid, &q.question, &q.answers, &foil.text);
            let ok = trail.status == GenAdvStatus::Accepted;
            let reason = trail.reason.clone().unwrap_or_default();
            let text = trail.passage.clone().unwrap_or_default();
            self.trails.push(trail);
            if !ok {
                self.skip(s, &format!("model-written conflict passage {reason}"));
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
                self.skip(s, reason);
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
        let mut case = self.add_one(q, s, top, d, extra);
        case.expected = Expected::Conflict;
        case.foil = Some(foil.text);
        Ok(vec![case])
    }

    /// add-genadv: the top-k plus an accepted GenADV passage.
    pub(crate) fn add_genadv(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
        top: &[&'a ContextRow],
    ) -> Result<Vec<CaseRow>> {
        if q.answers.is_empty() {
            self.skip(s, "no gold answer");
            return Ok(vec![]);
        }
        let w = self.writer.as_mut().expect("checked before the run");
        let trail = w.genadv(&q.qid, &q.question, &q.answers);
        let ok = trail.status == GenAdvStatus::Accepted;
        let reason = format!(
            "{}: {}",
            trail.status,
            trail.reason.clone().unwrap_or_default()
        );
        let text = trail.passage.clone().unwrap_or_default();
        self.trails.push(trail);
        if !ok {
            self.skip(s, &reason);
            return Ok(vec![]);
        }
        let d = CaseDoc {
            doc_id: format!("{}#genadv", q.qid),
            title: None,
            text,
            source: DocSource::Adversarial,
            has_answer: Some(false),
        };
        Ok(vec![self.add_one(q, s, top, d, json!({"writer": "model"}))])
    }
}
