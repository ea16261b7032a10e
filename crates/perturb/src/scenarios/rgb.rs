//! RGB: noise-rate, integration and counterfactual cases as its
//! `processdata` composes them.

use crate::*;

impl<'a> Builder<'a> {
    /// rgb-counterfactual: the counterfactual passages, topped up with
    /// negatives, shuffled.
    pub(crate) fn rgb_counterfactual(
        &mut self,
        q: &QuestionRow,
        s: Scenario,
    ) -> Result<Vec<CaseRow>> {
        let opts = self.opts;
        let all = self.contexts(&q.qid);
        let wrong: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("counterfactual"))
            .collect();
        if wrong.is_empty() {
            self.skip(s, "no counterfactual passages (positive_wrong)");
            return Ok(vec![]);
        }
        let n = opts.rgb_passages;
        let mut picked: Vec<CaseDoc> = wrong
            .iter()
            .take(n)
            .map(|c| doc(c, DocSource::Counterfactual))
            .collect();
        for c in all
            .iter()
            .filter(|c| c.relevance.as_deref() == Some("non_relevant"))
            .take(n.saturating_sub(picked.len()))
        {
            picked.push(doc(c, DocSource::Negative));
        }
        picked.shuffle(&mut rng_for(opts.seed, &q.qid, "rgb-counterfactual:order"));
        let params = json!({"seed": opts.seed, "passages": n, "order": picked.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        let mut case = self.base_case(q, s.name(), picked, Expected::Conflict, params);
        case.foil = q.fake_answers.as_ref().and_then(|f| f.first().cloned());
        Ok(vec![case])
    }

    /// RGB's noise mix (Chen et al. 2024, `evalue.py`): of `n` passages,
    /// `ceil(n * r)` negatives and the rest positives, capped by what the
    /// item has (the shortfall filled from the other list); noise 1.0 means
    /// negatives only and the expected behaviour is to reject. Shuffled.
    pub(crate) fn rgb_noise(&mut self, q: &QuestionRow, rate: f64) -> Option<CaseRow> {
        let all = self.contexts(&q.qid);
        if all.iter().any(|c| answer_part(c).is_some()) {
            return self.rgb_integration(q, rate);
        }
        let pos: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("relevant"))
            .collect();
        let neg: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("non_relevant"))
            .collect();
        let n = self.opts.rgb_passages;
        let mut neg_num = (n as f64 * rate).ceil() as usize;
        let mut pos_num = n - neg_num.min(n);
        if rate >= 1.0 {
            neg_num = n;
            pos_num = 0;
        } else if neg_num > neg.len() {
            neg_num = neg.len();
            pos_num = n - neg_num;
        } else if pos_num > pos.len() {
            pos_num = pos.len();
            neg_num = n - pos_num;
        }
        let condition = format!("rgb-noise-{}", fmt_rate(rate));
        if (rate < 1.0 && pos.is_empty()) || (rate >= 1.0 && neg.is_empty()) {
            self.skip(
                Scenario::RgbNoise,
                "not enough positive or negative passages",
            );
            return None;
        }
        let mut docs: Vec<CaseDoc> = pos
            .iter()
            .take(pos_num)
            .map(|c| doc(c, DocSource::Positive))
            .collect();
        docs.extend(
            neg.iter()
                .take(neg_num)
                .map(|c| doc(c, DocSource::Negative)),
        );
        docs.shuffle(&mut rng_for(
            self.opts.seed,
            &q.qid,
            &format!("{condition}:order"),
        ));
        let expected = if docs.iter().any(|d| d.source == DocSource::Positive) {
            Expected::Answer
        } else {
            Expected::Unanswerable
        };
        let params = json!({"seed": self.opts.seed, "noise_rate": rate, "passages": n, "positives": pos_num.min(pos.len()), "negatives": neg_num.min(neg.len()),
            "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Some(self.base_case(q, &condition, docs, expected, params))
    }

    /// RGB's information-integration selection (`evalue.py` `processdata`
    /// for `_int` files, the version with the `len(docs) < pos_num` guard):
    /// of `n` passages, `pos_num = n - ceil(n * rate)`; each answer part's
    /// positive passages are shuffled and the first of every part taken;
    /// while fewer than `pos_num`, the next passage of each part in turn is
    /// added (round robin); then `n - len(docs)` negatives (when positive),
    /// in file order; all shuffled. Every part is represented even at noise
    /// 1.0, as in RGB. The shuffles use ragprobe's seeded RNG, not Python's
    /// `random.seed(2333)` stream. Condition `rgb-integration-<rate>`.
    pub(crate) fn rgb_integration(&mut self, q: &QuestionRow, rate: f64) -> Option<CaseRow> {
        let all = self.contexts(&q.qid);
        let condition = format!("rgb-integration-{}", fmt_rate(rate));
        let mut parts: BTreeMap<usize, Vec<&ContextRow>> = BTreeMap::new();
        for c in all.iter().copied() {
            if let Some(i) = answer_part(c) {
                parts.entry(i).or_default().push(c);
            }
        }
        let neg: Vec<&ContextRow> = all
            .iter()
            .copied()
            .filter(|c| c.relevance.as_deref() == Some("non_relevant"))
            .collect();
        let n = self.opts.rgb_passages;
        let pos_num = n - ((n as f64 * rate).ceil() as usize).min(n);
        let mut rng = rng_for(self.opts.seed, &q.qid, &format!("{condition}:parts"));
        let mut lists: Vec<Vec<&ContextRow>> = parts.into_values().collect();
        for l in &mut lists {
            l.shuffle(&mut rng);
        }
        let mut picked: Vec<&ContextRow> = lists.iter().map(|l| l[0]).collect();
        let maxlen = lists.iter().map(Vec::len).max().unwrap_or(0);
        'fill: for i in 1..maxlen {
            if picked.len() >= pos_num {
                break;
            }
            for l in &lists {
                if let Some(c) = l.get(i) {
                    picked.push(c);
                    if picked.len() == pos_num {
                        break 'fill;
                    }
                }
            }
        }
        let positives = picked.len();
        let neg_num = n.saturating_sub(positives);
        let mut docs: Vec<CaseDoc> = picked
            .into_iter()
            .map(|c| doc(c, DocSource::Positive))
            .collect();
        docs.extend(
            neg.iter()
                .take(neg_num)
                .map(|c| doc(c, DocSource::Negative)),
        );
        docs.shuffle(&mut rng_for(
            self.opts.seed,
            &q.qid,
            &format!("{condition}:order"),
        ));
        let params = json!({"seed": self.opts.seed, "noise_rate": rate, "passages": n, "positives": positives, "negatives": neg_num.min(neg.len()), "parts": lists.len(),
            "order": docs.iter().map(|d| d.doc_id.as_str()).collect::<Vec<_>>()});
        Some(self.base_case(q, &condition, docs, Expected::Answer, params))
    }
}
