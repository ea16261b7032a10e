//! Model-written perturbations (seed 000 §5.3.1 GenADV, Table 5 and 10;
//! §5.4.1 conflicting passages), through a [`ModelSession`] so that every
//! call is cached, retried and journaled.
//!
//! GenADV, per question (first gold answer):
//! 1. answer sentence from (question, answer) — Table 10 answer-sentence prompt;
//! 2. named entities of the answer sentence ([`crate::ner`], or the model
//!    with `--ner model`); fewer than two -> dropped;
//! 3. adversarial sentence — Table 10 rewrite prompt, listing the entities;
//! 4. rejected if it contains a gold answer (DPR matcher) or its MiniLM
//!    cosine with the answer sentence is >= `max_cosine` (0.8);
//! 5. adversarial passage — Table 10 passage prompt (50–100 words,
//!    Wikipedia style); rejected if it contains a gold answer.
//!
//! Conflict passage (`add-conflict --writer model`): answer sentence ->
//! the answer replaced by the foil -> supporting passage (conflict-passage
//! prompt) -> kept only if it contains the foil and no gold answer.

use ragprobe_matching::has_answer;
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::llm::{ChatMessage, GenSettings};
use ragprobe_models::prompts::{Catalog, Template};
use ragprobe_models::{cosine, Embedder};
use serde_json::json;
use std::collections::BTreeMap;

use crate::ner::Ner;
use crate::text::replace_aliases;
use crate::{PerturbError, Result};

/// The trail `t`, ended with `status` and why.
fn failed(mut t: Trail, status: GenAdvStatus, reason: String) -> Trail {
    t.status = status;
    t.reason = Some(reason);
    t
}

/// Settings of the model-written perturbations (all enter the recipe).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WriterSettings {
    /// Reject adversarial sentences at or above this cosine with the answer sentence.
    pub max_cosine: f32,
    /// Ask the model for the entities (JSON list) instead of the rule-based NER.
    pub ner_model: bool,
    /// Most tokens per model call.
    pub max_tokens: u32,
}

impl Default for WriterSettings {
    fn default() -> Self {
        WriterSettings {
            max_cosine: 0.8,
            ner_model: false,
            max_tokens: 160,
        }
    }
}

/// One question's trail through GenADV (or the conflict writer): every
/// intermediate text, the entities, the cosine, the outcome and why — the
/// rows of the `genadv` artifact.
pub use ragprobe_artifact::GenAdvRow as Trail;
use ragprobe_artifact::GenAdvStatus;

/// Clean a one-sentence model answer: first non-empty line, quotes and a
/// leading label ("Sentence:") removed.
fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string();
    let line = line
        .trim_start_matches(['"', '“'])
        .trim_end_matches(['"', '”']);
    for label in ["Sentence:", "Revised sentence:", "Passage:", "Claim:"] {
        if let Some(x) = line.strip_prefix(label) {
            return x.trim().to_string();
        }
    }
    line.to_string()
}

fn passage_text(s: &str) -> String {
    let t = s.trim();
    t.strip_prefix("Passage:").unwrap_or(t).trim().to_string()
}

/// Drives the writer model.
pub struct Writer<'a> {
    /// The writer model, with its request journal.
    pub session: &'a mut ModelSession,
    /// Settings of the written perturbations.
    pub settings: WriterSettings,
    /// MiniLM embedder for the cosine filter and topicality; None skips both.
    pub embedder: Option<&'a Embedder>,
    /// The rule-based NER, used unless `settings.ner_model`.
    pub ner: Ner,
    t_answer: Template,
    t_rewrite: Template,
    t_passage: Template,
    t_conflict: Template,
}

impl<'a> Writer<'a> {
    /// A writer over `session`, loading the GenADV and conflict-passage
    /// templates from `prompts` (seed 000's, in the studies' catalog).
    pub fn new(
        session: &'a mut ModelSession,
        settings: WriterSettings,
        embedder: Option<&'a Embedder>,
        ner: Ner,
        prompts: &Catalog,
    ) -> Result<Writer<'a>> {
        let load = |id: &str| {
            Template::load(id, None, prompts).map_err(|e| PerturbError::Invalid(e.to_string()))
        };
        Ok(Writer {
            session,
            settings,
            embedder,
            ner,
            t_answer: load("genadv-answer-sentence")?,
            t_rewrite: load("genadv-adversarial-sentence")?,
            t_passage: load("genadv-adversarial-passage")?,
            t_conflict: load("conflict-passage")?,
        })
    }

    fn call(
        &mut self,
        t: &Template,
        vars: &[(&'static str, String)],
    ) -> std::result::Result<String, String> {
        let vars: BTreeMap<&str, String> = vars.iter().cloned().collect();
        let messages = t.render_vars(&vars);
        let settings = GenSettings {
            max_tokens: self.settings.max_tokens,
            ..Default::default()
        };
        self.session
            .chat((&t.id, t.version), &messages, &settings)
            .map(|g| g.text)
            .map_err(|e| e.to_string())
    }

    /// Step 1, the answer sentence, recorded in the trail; None, with the
    /// trail marked failed, when the model gives none.
    fn first_sentence(&mut self, t: &mut Trail, question: &str, answer: &str) -> Option<String> {
        let why = match self.answer_sentence(question, answer) {
            Ok(s) if !s.is_empty() => {
                t.answer_sentence = Some(s.clone());
                return Some(s);
            }
            Ok(_) => "empty answer sentence".to_string(),
            Err(e) => format!("answer sentence: {e}"),
        };
        t.status = GenAdvStatus::Failed;
        t.reason = Some(why);
        None
    }

    fn answer_sentence(
        &mut self,
        question: &str,
        answer: &str,
    ) -> std::result::Result<String, String> {
        let t = self.t_answer.clone();
        self.call(
            &t,
            &[
                ("question", question.to_string()),
                ("answer", answer.to_string()),
            ],
        )
        .map(|s| first_line(&s))
    }

    fn entities(&mut self, sentence: &str) -> Vec<String> {
        if !self.settings.ner_model {
            return self
                .ner
                .entities(sentence)
                .into_iter()
                .map(|e| e.text)
                .collect();
        }
        let messages = vec![ChatMessage::new(
            "user",
            format!("List the named entities (names, dates, numbers) in the sentence as a JSON array of strings, and nothing else.\nSentence: {sentence}\nEntities:"),
        )];
        let settings = GenSettings {
            max_tokens: 96,
            ..Default::default()
        };
        let text = self
            .session
            .chat(("ner-json", 1), &messages, &settings)
            .map(|g| g.text)
            .unwrap_or_default();
        let start = text.find('[');
        let end = text.rfind(']');
        match (start, end) {
            (Some(s), Some(e)) if e > s => serde_json::from_str::<Vec<String>>(&text[s..=e])
                .unwrap_or_default()
                .into_iter()
                .filter(|x| sentence.contains(x.as_str()))
                .collect(),
            _ => vec![],
        }
    }

    /// Steps 3 and 4: the answer sentence rewritten around its entities,
    /// recorded in the trail (with its cosine to the answer sentence);
    /// the outcome and why when it fails or is rejected.
    fn adversarial_sentence(
        &mut self,
        t: &mut Trail,
        sentence: &str,
        ents: &[String],
        answers: &[String],
    ) -> std::result::Result<String, (GenAdvStatus, String)> {
        let tpl = self.t_rewrite.clone();
        let vars = [
            ("sentence", sentence.to_string()),
            ("entities", ents.join(", ")),
        ];
        let rewritten = match self.call(&tpl, &vars) {
            Ok(s) => first_line(&s),
            Err(e) => return Err((GenAdvStatus::Failed, format!("adversarial sentence: {e}"))),
        };
        t.rewritten_sentence = Some(rewritten.clone());
        if rewritten.is_empty() {
            return Err((GenAdvStatus::Rejected, "empty adversarial sentence".into()));
        }
        if has_answer(answers, &rewritten) {
            return Err((
                GenAdvStatus::Rejected,
                "answer leaked into the adversarial sentence".into(),
            ));
        }
        if let Some(e) = self.embedder {
            let c = e
                .similarity(&rewritten, sentence)
                .map_err(|err| (GenAdvStatus::Failed, format!("similarity: {err}")))?;
            t.cosine = Some(c as f64);
            if c >= self.settings.max_cosine {
                return Err((
                    GenAdvStatus::Rejected,
                    format!(
                        "too similar to the answer sentence (cosine >= {})",
                        self.settings.max_cosine
                    ),
                ));
            }
        }
        Ok(rewritten)
    }

    /// Run GenADV for one question.
    pub fn genadv(&mut self, qid: &str, question: &str, answers: &[String]) -> Trail {
        let answer = answers.first().cloned().unwrap_or_default();
        let mut t = Trail {
            qid: qid.into(),
            purpose: "genadv".into(),
            answer: answer.clone(),
            ..Default::default()
        };
        let sentence = match self.first_sentence(&mut t, question, &answer) {
            Some(s) => s,
            None => return t,
        };
        let ents = self.entities(&sentence);
        t.entities = Some(json!(ents).to_string());
        if ents.len() < 2 {
            return failed(
                t,
                GenAdvStatus::Dropped,
                "fewer than two entities in the answer sentence".into(),
            );
        }
        let rewritten = match self.adversarial_sentence(&mut t, &sentence, &ents, answers) {
            Ok(s) => s,
            Err((status, why)) => return failed(t, status, why),
        };
        let tpl = self.t_passage.clone();
        let passage = match self.call(&tpl, &[("sentence", rewritten)]) {
            Ok(s) => passage_text(&s),
            Err(e) => return failed(t, GenAdvStatus::Failed, format!("adversarial passage: {e}")),
        };
        t.passage = Some(passage.clone());
        if passage.is_empty() {
            return failed(t, GenAdvStatus::Rejected, "empty passage".into());
        }
        if has_answer(answers, &passage) {
            return failed(
                t,
                GenAdvStatus::Rejected,
                "answer leaked into the passage".into(),
            );
        }
        t.status = GenAdvStatus::Accepted;
        t
    }

    /// A model-written passage supporting `foil`.
    pub fn conflict(&mut self, qid: &str, question: &str, answers: &[String], foil: &str) -> Trail {
        let answer = answers.first().cloned().unwrap_or_default();
        let mut t = Trail {
            qid: qid.into(),
            purpose: "conflict".into(),
            answer: answer.clone(),
            foil: Some(foil.into()),
            ..Default::default()
        };
        let sentence = match self.first_sentence(&mut t, question, &answer) {
            Some(s) => s,
            None => return t,
        };
        let (conflicting, n) = replace_aliases(&sentence, answers, foil);
        if n == 0 {
            return failed(
                t,
                GenAdvStatus::Rejected,
                "the answer sentence does not contain the answer".into(),
            );
        }
        t.rewritten_sentence = Some(conflicting.clone());
        let tpl = self.t_conflict.clone();
        let passage = match self.call(&tpl, &[("sentence", conflicting)]) {
            Ok(s) => passage_text(&s),
            Err(e) => return failed(t, GenAdvStatus::Failed, format!("conflict passage: {e}")),
        };
        t.passage = Some(passage.clone());
        if !has_answer(&[foil], &passage) {
            return failed(
                t,
                GenAdvStatus::Rejected,
                "the passage does not contain the foil".into(),
            );
        }
        if has_answer(answers, &passage) {
            return failed(
                t,
                GenAdvStatus::Rejected,
                "answer leaked into the passage".into(),
            );
        }
        t.status = GenAdvStatus::Accepted;
        t
    }

    /// Mean MiniLM similarity of kept passages to their own question versus
    /// to another question (the next one, cyclically): adversarial passages
    /// should sit far closer to their own question's topic.
    pub fn topicality(&self, kept: &[(String, String)]) -> Option<(f64, f64)> {
        let e = self.embedder?;
        if kept.len() < 2 {
            return None;
        }
        let qs: Vec<&str> = kept.iter().map(|k| k.0.as_str()).collect();
        let ps: Vec<&str> = kept.iter().map(|k| k.1.as_str()).collect();
        let (qe, pe) = (e.embed(&qs, 32).ok()?, e.embed(&ps, 32).ok()?);
        let n = kept.len();
        let own = (0..n).map(|i| cosine(&qe[i], &pe[i]) as f64).sum::<f64>() / n as f64;
        let other = (0..n)
            .map(|i| cosine(&qe[(i + 1) % n], &pe[i]) as f64)
            .sum::<f64>()
            / n as f64;
        Some((own, other))
    }
}

/// Acceptance figures of a set of trails.
pub fn quality(
    trails: &[Trail],
    topicality: Option<(f64, f64)>,
    kept_leaks: usize,
) -> serde_json::Value {
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for t in trails {
        *by_status.entry(t.status.as_str()).or_default() += 1;
        if let Some(r) = &t.reason {
            *reasons.entry(r.as_str()).or_default() += 1;
        }
    }
    let n = trails.len().max(1) as f64;
    let step = |f: &dyn Fn(&Trail) -> bool| trails.iter().filter(|t| f(t)).count();
    json!({
        "questions": trails.len(),
        "status": by_status,
        "rejections": reasons,
        "steps": {
            "answer_sentence": step(&|t| t.answer_sentence.is_some()),
            "two_or_more_entities_or_rewritten": step(&|t| t.rewritten_sentence.is_some()),
            "passage_written": step(&|t| t.passage.is_some()),
            "accepted": step(&|t| t.status == GenAdvStatus::Accepted),
        },
        "acceptance_rate": by_status.get("accepted").copied().unwrap_or(0) as f64 / n,
        "answer_leakage_in_kept_passages": kept_leaks,
        "similarity_to_own_question": topicality.map(|t| t.0),
        "similarity_to_other_question": topicality.map(|t| t.1),
    })
}
