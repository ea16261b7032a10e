//! FaithEval's three tasks: what each context does to the question, what
//! a faithful model answers, and how the README's evaluation snippet
//! decides it.

use ragprobe_artifact::{DocSource, Expected};

/// One FaithEval task (one HF dataset, `Salesforce/FaithEval-<task>-v1.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// The context does not hold the answer: say `unknown`.
    Unanswerable,
    /// The context's documents support different answers: say `conflict`.
    Inconsistent,
    /// The context states a counterfactual: choose the option it supports.
    Counterfactual,
}

impl Task {
    /// Every task, in the paper's order.
    pub const ALL: [Task; 3] = [Task::Unanswerable, Task::Inconsistent, Task::Counterfactual];

    /// The task's name: the questions' `subset`, the suffix of the case
    /// condition (`faitheval-<name>`) and of the format, template and dataset names.
    pub fn name(self) -> &'static str {
        match self {
            Task::Unanswerable => "unanswerable",
            Task::Inconsistent => "inconsistent",
            Task::Counterfactual => "counterfactual",
        }
    }

    /// The task named `s`.
    pub fn parse(s: &str) -> Option<Task> {
        Task::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The task of a case condition (`faitheval-<task>`).
    pub fn of_condition(condition: &str) -> Option<Task> {
        condition.strip_prefix("faitheval-").and_then(Task::parse)
    }

    /// The case condition of the task.
    pub fn condition(self) -> &'static str {
        match self {
            Task::Unanswerable => "faitheval-unanswerable",
            Task::Inconsistent => "faitheval-inconsistent",
            Task::Counterfactual => "faitheval-counterfactual",
        }
    }

    /// What a faithful model does.
    pub fn expected(self) -> Expected {
        match self {
            Task::Unanswerable => Expected::Unanswerable,
            Task::Inconsistent => Expected::Conflict,
            Task::Counterfactual => Expected::Answer,
        }
    }

    /// Where the context comes from, for the case browser.
    pub fn doc_source(self) -> DocSource {
        match self {
            Task::Unanswerable => DocSource::Edited,
            Task::Inconsistent => DocSource::Conflict,
            Task::Counterfactual => DocSource::Counterfactual,
        }
    }

    /// The README's `valid_phrases`: a response is correct when its
    /// normalised text contains one (`strict_match = False`, the README's
    /// setting, or `strict`). None for the counterfactual task, which is
    /// scored by the option chosen.
    pub fn valid_phrases(self, strict: bool) -> Option<&'static [&'static str]> {
        match (self, strict) {
            (Task::Unanswerable, false) => {
                Some(&["unknown", "no answer", "no information", "not", "unclear"])
            }
            (Task::Unanswerable, true) => Some(&["unknown"]),
            (Task::Inconsistent, false) => Some(&[
                "conflict",
                "multiple answers",
                "disagreement",
                "inconsistent",
                "contradictory",
                "contradiction",
                "inconsistency",
                "two answers",
                "2 answers",
                "conflicting",
            ]),
            (Task::Inconsistent, true) => Some(&["conflict"]),
            (Task::Counterfactual, _) => None,
        }
    }
}
