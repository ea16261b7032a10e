//! What the metrics read of a scored row, in about a hundred bytes.
//!
//! A [`ScoreRow`] holds a dozen owned strings (about 700 bytes a row with
//! their heap blocks); a million of them, read back for the metrics, was
//! the score stage's peak memory. A [`Scored`] row keeps the per-row
//! flags, its question and case ids copied into an arena, and one pointer
//! to its [`Context`]: the fields a row shares with every other row of its
//! dataset, model, prompt and condition, stored once. Field access reads
//! through to the context (`r.condition`), so the metrics read a `Scored`
//! row as they read a `ScoreRow`.

use bumpalo::Bump;
use ragprobe_artifact::{Expected, MatchFlags, ScoreRow, StudyCells};
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};
use std::hash::BuildHasher;

/// The fields of a scored row that few distinct values cover: those of
/// its case's dataset and condition, and of the prompt and model that
/// answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Context<'a> {
    /// Dataset name.
    pub dataset: &'a str,
    /// Language code.
    pub lang: &'a str,
    /// The case's condition.
    pub condition: &'a str,
    /// Prompt template id.
    pub prompt: &'a str,
    /// The template's declared study.
    pub prompt_study: Option<&'a str>,
    /// The template's declared role.
    pub prompt_role: Option<&'a str>,
    /// The template's wording variant.
    pub prompt_variant: Option<&'a str>,
    /// The model that answered.
    pub model: &'a str,
    /// The case's expected label.
    pub expected: Expected,
    /// beginning / middle / end (evidence edit).
    pub answer_position: Option<&'a str>,
}

/// One scored row as the metrics read it (see schemas/scores.md for each
/// flag); the shared fields are read through [`Context`].
#[derive(Debug, Clone, Copy)]
pub struct Scored<'a> {
    /// The question; conditions of one question pair on it.
    pub qid: &'a str,
    /// The case (for `--by`).
    pub case_id: &'a str,
    /// The fields shared with the rows of the same context.
    context: &'a Context<'a>,
    /// The request failed: excluded from every denominator, counted.
    pub failed: bool,
    /// Some retrieved document holds a gold answer.
    pub answerable: Option<bool>,
    /// The string matchers' decisions.
    pub flags: MatchFlags,
    /// The studies' own readings, labels stored once.
    pub study: StudyCells<&'a str>,
    /// Multiple choice: the option chosen, `several` or `none`.
    pub mcq_choice: Option<&'a str>,
}

impl<'a> std::ops::Deref for Scored<'a> {
    type Target = Context<'a>;
    fn deref(&self) -> &Context<'a> {
        self.context
    }
}

/// Builds [`Scored`] rows whose strings live in an arena: the ids are
/// copied, the few distinct labels and contexts are stored once.
pub struct ScoredArena<'b> {
    bump: &'b Bump,
    labels: FxHashSet<&'b str>,
    /// Contexts by hash (a row's own context, borrowed from the row, is
    /// looked up before it is copied).
    contexts: FxHashMap<u64, Vec<&'b Context<'b>>>,
    /// The context of the previous row: rows come in runs of one context.
    last: Option<&'b Context<'b>>,
}

impl<'b> ScoredArena<'b> {
    /// An arena over `bump`.
    pub fn new(bump: &'b Bump) -> Self {
        ScoredArena {
            bump,
            labels: FxHashSet::default(),
            contexts: FxHashMap::default(),
            last: None,
        }
    }

    /// `s`, stored once however often it is asked for.
    fn label(&mut self, s: &str) -> &'b str {
        match self.labels.get(s) {
            Some(l) => l,
            None => {
                let l: &'b str = self.bump.alloc_str(s);
                self.labels.insert(l);
                l
            }
        }
    }

    fn context(&mut self, key: Context<'_>) -> &'b Context<'b> {
        if let Some(c) = self.last.filter(|c| **c == key) {
            return c;
        }
        let hash = FxBuildHasher.hash_one(&key);
        if let Some(c) = self
            .contexts
            .get(&hash)
            .and_then(|v| v.iter().find(|c| ***c == key))
        {
            self.last = Some(c);
            return c;
        }
        let copied = Context {
            dataset: self.label(key.dataset),
            lang: self.label(key.lang),
            condition: self.label(key.condition),
            prompt: self.label(key.prompt),
            prompt_study: key.prompt_study.map(|s| self.label(s)),
            prompt_role: key.prompt_role.map(|s| self.label(s)),
            prompt_variant: key.prompt_variant.map(|s| self.label(s)),
            model: self.label(key.model),
            expected: key.expected,
            answer_position: key.answer_position.map(|s| self.label(s)),
        };
        let c: &'b Context<'b> = self.bump.alloc(copied);
        self.contexts.entry(hash).or_default().push(c);
        self.last = Some(c);
        c
    }

    /// The compact copy of `r`.
    pub fn add(&mut self, r: &ScoreRow) -> Scored<'b> {
        let context = self.context(Context {
            dataset: &r.dataset,
            lang: &r.lang,
            condition: &r.condition,
            prompt: &r.prompt,
            prompt_study: r.prompt_study.as_deref(),
            prompt_role: r.prompt_role.as_deref(),
            prompt_variant: r.prompt_variant.as_deref(),
            model: &r.model,
            expected: r.expected,
            answer_position: r.answer_position.as_deref(),
        });
        let qid: &'b str = self.bump.alloc_str(&r.qid);
        // Scored predictions of questions: the case is the question.
        let case_id = if r.case_id == r.qid {
            qid
        } else {
            self.bump.alloc_str(&r.case_id)
        };
        Scored {
            qid,
            case_id,
            context,
            failed: r.failed,
            answerable: r.answerable,
            flags: r.flags,
            study: r.study.map_label(|s| self.label(s)),
            mcq_choice: r.mcq_choice.as_deref().map(|s| self.label(s)),
        }
    }

    /// Compact copies of `rows`.
    pub fn add_all(&mut self, rows: &[ScoreRow]) -> Vec<Scored<'b>> {
        rows.iter().map(|r| self.add(r)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact row reads as the row it came from, and rows of one
    /// context share one copy of it.
    #[test]
    fn compact_rows_read_as_their_rows() {
        let row = |qid: &str, cond: &str| ScoreRow {
            case_id: format!("{qid}-{cond}"),
            qid: qid.into(),
            dataset: "nq".into(),
            lang: "en".into(),
            condition: cond.into(),
            prompt: "p".into(),
            prompt_role: Some("normal".into()),
            model: "m".into(),
            flags: ragprobe_artifact::MatchFlags {
                accuracy: Some(true),
                f1: Some(0.5),
                ..Default::default()
            },
            mcq_choice: Some("B".into()),
            ..Default::default()
        };
        let rows = vec![
            row("q1", "base"),
            row("q2", "base"),
            row("q1", "add-random"),
        ];
        let bump = Bump::new();
        let mut arena = ScoredArena::new(&bump);
        let s = arena.add_all(&rows);
        assert_eq!(s.len(), 3);
        for (c, r) in s.iter().zip(&rows) {
            assert_eq!((c.qid, c.case_id), (&*r.qid, &*r.case_id));
            assert_eq!(
                (c.dataset, c.condition, c.model),
                ("nq", &*r.condition, "m")
            );
            assert_eq!(c.prompt_role, Some("normal"));
            assert_eq!(
                (c.flags.accuracy, c.flags.f1, c.mcq_choice),
                (Some(true), Some(0.5), Some("B"))
            );
        }
        assert!(std::ptr::eq(s[0].context, s[1].context));
        assert!(!std::ptr::eq(s[0].context, s[2].context));
        assert!(std::ptr::eq(
            s[0].mcq_choice.unwrap(),
            s[2].mcq_choice.unwrap()
        ));
        assert!(std::mem::size_of::<Scored>() <= 112);
    }
}
