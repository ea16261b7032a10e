//! Foil choice: the designated wrong answer of conflict and evidence-edit
//! cases.
//!
//! Rule (seeded, documented in the manifest):
//! 1. the question's own fake answers come first (a dataset's `fakeanswer`), when
//!    they pass the rejection tests below;
//! 2. otherwise the candidates are the other questions' first gold answers in
//!    the same dataset that have the gold answer's shape (year, date, number,
//!    text); at most `MAX_CANDIDATES` of them, sampled with the question's RNG;
//! 3. a candidate is rejected when the DPR matcher finds it equal to a gold
//!    alias (either contains the other), or — with the embedder — when its
//!    MiniLM cosine with the first gold answer exceeds `reject_above` (0.8);
//! 4. the most similar remaining candidate with cosine >= `prefer_above`
//!    (0.6) is chosen (a plausible foil); else a random remaining one; without
//!    the embedder, a random remaining one.

use ragprobe_artifact::QuestionRow;
use ragprobe_models::{cosine, Embedder, EMBEDDING_DIM};
use rand::seq::IndexedRandom;
use rand::Rng;
use std::collections::{BTreeMap, HashMap};

use crate::text::{same_answer, shape, Shape};
use crate::Result;

/// Candidates considered per question (bounds the work on large datasets).
pub const MAX_CANDIDATES: usize = 200;

/// How a foil was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Foil {
    /// The foil answer.
    pub text: String,
    /// The foil's answer shape (year, date, number or text).
    pub shape: Shape,
    /// `dataset-fake-answer`, `similar` (cosine in [0.6, 0.8]) or `random`.
    pub how: &'static str,
    /// MiniLM cosine between the foil and the first gold answer, when the embedder scored it.
    pub cosine: Option<f32>,
}

/// Foil chooser over one questions artifact.
pub struct FoilPicker<'a> {
    pool: BTreeMap<(String, Shape), Vec<(String, String)>>, // (dataset, shape) -> (qid, answer)
    embedder: Option<&'a Embedder>,
    cache: HashMap<String, [f32; EMBEDDING_DIM]>,
    /// Candidates whose cosine with the gold answer is above this are rejected as too close (0.8).
    pub reject_above: f32,
    /// The most similar candidate at or above this cosine is preferred (0.6); else a random one.
    pub prefer_above: f32,
}

impl<'a> FoilPicker<'a> {
    /// A picker drawing candidates from the first gold answers of `questions`; `embedder` enables the similarity tests.
    pub fn new(questions: &[QuestionRow], embedder: Option<&'a Embedder>) -> Self {
        let mut pool: BTreeMap<(String, Shape), Vec<(String, String)>> = BTreeMap::new();
        for q in questions {
            if let Some(a) = q.answers.first().filter(|a| !a.trim().is_empty()) {
                pool.entry((q.dataset.clone(), shape(a)))
                    .or_default()
                    .push((q.qid.clone(), a.clone()));
            }
        }
        FoilPicker {
            pool,
            embedder,
            cache: HashMap::new(),
            reject_above: 0.8,
            prefer_above: 0.6,
        }
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<[f32; EMBEDDING_DIM]>> {
        let e = self.embedder.expect("called with an embedder");
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !self.cache.contains_key(*t))
            .collect();
        if !missing.is_empty() {
            let mut uniq = missing.clone();
            uniq.sort();
            uniq.dedup();
            for (t, v) in uniq.iter().zip(e.embed(&uniq, 64)?) {
                self.cache.insert(t.to_string(), v);
            }
        }
        Ok(texts.iter().map(|t| self.cache[*t]).collect())
    }

    /// The other questions' answers of the gold's shape in `q`'s dataset,
    /// none of them a gold alias: sorted, deduplicated, and a seeded sample
    /// of [`MAX_CANDIDATES`] when there are more.
    fn candidates(&self, q: &QuestionRow, gshape: Shape, rng: &mut impl Rng) -> Vec<String> {
        let mut cands: Vec<String> = self
            .pool
            .get(&(q.dataset.clone(), gshape))
            .map(|v| {
                v.iter()
                    .filter(|(qid, _)| *qid != q.qid)
                    .map(|(_, a)| a.clone())
                    .collect()
            })
            .unwrap_or_default();
        cands.sort();
        cands.dedup();
        cands.retain(|c| !same_answer(c, &q.answers));
        if cands.len() > MAX_CANDIDATES {
            cands = cands
                .choose_multiple(rng, MAX_CANDIDATES)
                .cloned()
                .collect();
            cands.sort();
        }
        cands
    }

    /// The candidate most similar to `gold` under the embedder (cosine at
    /// most `reject_above`, preferred at least `prefer_above`), else a
    /// random one of those kept; None when the embedder rejects them all.
    fn most_similar(
        &mut self,
        gold: &str,
        cands: &[String],
        gshape: Shape,
        rng: &mut impl Rng,
    ) -> Result<Option<Foil>> {
        let mut texts: Vec<&str> = vec![gold];
        texts.extend(cands.iter().map(String::as_str));
        let embs = self.embed(&texts)?;
        let scored: Vec<(f32, &String)> = cands
            .iter()
            .zip(&embs[1..])
            .map(|(c, e)| (cosine(&embs[0], e), c))
            .filter(|(s, _)| *s <= self.reject_above)
            .collect();
        if scored.is_empty() {
            return Ok(None);
        }
        let best = scored
            .iter()
            .filter(|(s, _)| *s >= self.prefer_above)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(a.1)));
        Ok(Some(match best {
            Some((s, c)) => Foil {
                text: (*c).clone(),
                shape: gshape,
                how: "similar",
                cosine: Some(*s),
            },
            None => {
                let (s, c) = scored.choose(rng).expect("non-empty");
                Foil {
                    text: (*c).clone(),
                    shape: gshape,
                    how: "random",
                    cosine: Some(*s),
                }
            }
        }))
    }

    /// Choose a foil for `q`, or None when no candidate of the right shape
    /// survives.
    pub fn pick(&mut self, q: &QuestionRow, rng: &mut impl Rng) -> Result<Option<Foil>> {
        let Some(gold) = q.answers.first() else {
            return Ok(None);
        };
        // Multiple choice (seed 002's MedQA): the foil is a distractor
        // option, chosen with the question's RNG.
        if let Some(options) = &q.options {
            let distractors: Vec<&(String, String)> = options
                .iter()
                .filter(|(_, t)| !same_answer(t, &q.answers))
                .collect();
            return Ok(distractors.choose(rng).map(|(_, t)| Foil {
                text: t.clone(),
                shape: shape(t),
                how: "distractor-option",
                cosine: None,
            }));
        }
        let gshape = shape(gold);
        if let Some(fakes) = &q.fake_answers {
            for f in fakes {
                if !f.trim().is_empty() && !same_answer(f, &q.answers) {
                    return Ok(Some(Foil {
                        text: f.clone(),
                        shape: shape(f),
                        how: "dataset-fake-answer",
                        cosine: None,
                    }));
                }
            }
        }
        let cands = self.candidates(q, gshape, rng);
        if cands.is_empty() {
            return Ok(None);
        }
        if self.embedder.is_none() {
            let c = cands.choose(rng).expect("non-empty").clone();
            return Ok(Some(Foil {
                text: c,
                shape: gshape,
                how: "random",
                cosine: None,
            }));
        }
        self.most_similar(gold, &cands, gshape, rng)
    }
}
