//! What a generate run would send, without sending it: `run --dry-run`'s
//! estimate of requests, tokens and cost.

use ragprobe_artifact::{kinds, Store};
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::tokens::TokenCounter;

use crate::{load_cases, recipe, GenerateOptions, Result};

/// A generate run's requests and tokens, before it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Estimate {
    /// Requests in the run: one per case.
    pub requests: u64,
    /// Requests already answered (in the request journal, or the whole
    /// stage cached): they are not sent again.
    pub answered: u64,
    /// Requests the run would send.
    pub to_send: u64,
    /// Prompt tokens of the requests to send, counted as
    /// [`Estimate::exact`] says.
    pub prompt_tokens: u64,
    /// The most completion tokens they can take (`max_tokens` each).
    pub max_completion_tokens: u64,
    /// The prompt tokens are the model's own count (the embedded model),
    /// not a tokenizer's or the 4-characters rule's.
    pub exact: bool,
    /// How the prompt tokens were counted ([`TokenCounter::describe`];
    /// for a total over steps counted in different ways, says so).
    pub counted_with: &'static str,
    /// The model could not be opened (a server not reachable: its served
    /// model names the requests), so the journal was not consulted and
    /// every request is counted as to send; the reason.
    pub unchecked: Option<String>,
}

impl Estimate {
    /// The cost in money at `price_in` and `price_out` per million prompt
    /// and completion tokens: (prompt cost, the most the completions can cost).
    pub fn cost(&self, price_in: f64, price_out: f64) -> (f64, f64) {
        (
            self.prompt_tokens as f64 * price_in / 1e6,
            self.max_completion_tokens as f64 * price_out / 1e6,
        )
    }

    /// Adds `other`'s counts (a pipeline's total); exact while both are.
    pub fn add(&mut self, other: &Estimate) {
        self.requests += other.requests;
        self.answered += other.answered;
        self.to_send += other.to_send;
        self.prompt_tokens += other.prompt_tokens;
        self.max_completion_tokens += other.max_completion_tokens;
        self.exact &= other.exact;
        self.counted_with = match (self.counted_with, other.counted_with) {
            ("", o) => o,
            (s, o) if s == o => s,
            _ => "different ways, step by step (see each step's count)",
        };
        if self.unchecked.is_none() {
            self.unchecked.clone_from(&other.unchecked);
        }
    }
}

/// The estimate of `generate(store, cases, opts)`: the cases rendered as
/// the run renders them (conditions, passage truncation), the request ids
/// it would make checked against the journal and the stage cache, and the
/// prompt tokens of those it would send counted by `counter`. Sends
/// nothing and writes nothing.
pub fn estimate(
    store: &Store,
    cases: &str,
    opts: &GenerateOptions,
    counter: &TokenCounter,
) -> Result<Estimate> {
    let (cases_id, cases) = load_cases(store, cases, opts)?;
    let t = &opts.template;
    let messages: Vec<_> = cases.iter().map(|c| t.render_case(c)).collect();
    let mut e = Estimate {
        requests: messages.len() as u64,
        exact: counter.is_exact(),
        counted_with: counter.describe(),
        ..Estimate::default()
    };
    // Which requests are answered: their ids name the model (a server's
    // served model), so only with the model reached.
    let answered: Vec<bool> =
        match ModelSession::open(&opts.backend, &store.root().join("requests")) {
            Ok(session) => {
                let stage_cached = store
                    .cached(&recipe(&cases_id, session.id(), opts), &[kinds::RESPONSES])?
                    .is_some();
                let ids = session.request_ids((&t.id, t.version), &messages, &opts.settings);
                ids.iter()
                    .map(|id| stage_cached || session.is_done(id))
                    .collect()
            }
            Err(err) => {
                e.unchecked = Some(err.to_string());
                vec![false; messages.len()]
            }
        };
    for (done, msgs) in answered.into_iter().zip(&messages) {
        if done {
            e.answered += 1;
            continue;
        }
        e.to_send += 1;
        e.prompt_tokens += counter.count(msgs)?;
        e.max_completion_tokens += u64::from(opts.settings.max_tokens);
    }
    Ok(e)
}
