//! Continuous batching with prefix reuse: requests start as slots free up,
//! each step feeds every active sequence (prompt chunks for new ones, one
//! token for the others), and a sequence leaves the batch when it stops.

use std::collections::VecDeque;

use crate::model::{Feed, KvCache, Model};

/// One generation request: greedy decoding from `prompt`.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Prompt token ids.
    pub prompt: &'a [u32],
    /// The most tokens to generate.
    pub max_tokens: usize,
}

/// What the caller wants after seeing a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Generate another token (unless `max_tokens` is reached).
    Continue,
    /// The sequence is finished.
    Stop,
}

/// Sequences decoded together by default: the one default of the embedded
/// generator's batch size (`models` and the CLI take it from here).
pub const DEFAULT_BATCH: usize = 8;

/// How to batch.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Sequences decoded together (1 = one request at a time; 0 is taken
    /// as 1: the engine is the one place that clamps it).
    pub batch: usize,
    /// Tokens fed per step at most (prompt chunks are cut to fit). A
    /// step's activations grow with it (SmolLM2-135M: about 31 KB a token),
    /// while prompt throughput stops growing well before 128, the default.
    /// Outputs are the same whatever it is.
    pub step_tokens: usize,
    /// Recent prompts whose KV cache is kept for prefix reuse (0 = none).
    pub prefix_entries: usize,
    /// Shortest shared prefix worth reusing, in tokens.
    pub min_prefix: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            batch: DEFAULT_BATCH,
            step_tokens: 128,
            prefix_entries: 4,
            min_prefix: 16,
        }
    }
}

/// Prompts recently processed, with their KV caches.
struct PrefixCache {
    entries: VecDeque<(Vec<u32>, KvCache)>,
    cap: usize,
}

impl PrefixCache {
    /// The entry sharing the longest prefix with `prompt`, and its length.
    fn lookup(&self, prompt: &[u32]) -> Option<(&KvCache, usize)> {
        self.entries
            .iter()
            .map(|(tokens, cache)| {
                let n = tokens
                    .iter()
                    .zip(prompt)
                    .take_while(|(a, b)| a == b)
                    .count();
                (cache, n)
            })
            .max_by_key(|(_, n)| *n)
    }

    fn insert(&mut self, prompt: &[u32], cache: &KvCache, kv_dim: usize) {
        if self.cap == 0 {
            return;
        }
        if self.entries.len() == self.cap {
            self.entries.pop_front();
        }
        let copy = cache.prefix(prompt.len(), kv_dim);
        self.entries.push_back((prompt.to_vec(), copy));
    }
}

/// A sequence in the batch.
struct Active {
    /// Index of its request.
    request: usize,
    cache: KvCache,
    /// Prompt tokens already in the cache.
    fed: usize,
    generated: usize,
    /// The token to feed next once the prompt is in.
    last: Option<u32>,
}

/// Receives what [`Model::generate`] produces.
pub trait Sink {
    /// What `done` may fail with (it ends the run).
    type Error;
    /// A generated token of `request`: go on or stop?
    fn token(&mut self, request: usize, token: u32) -> Next;
    /// `request` is finished (stopped or `max_tokens` reached); called
    /// once per request, in finishing order.
    fn done(&mut self, request: usize) -> Result<(), Self::Error>;
}

impl Model {
    /// Generates greedily for every request, `opts.batch` at a time,
    /// reporting tokens and finished requests to `sink`.
    ///
    /// Each request's tokens are the same whatever the batch size, thread
    /// count or prefix reuse (see [`kernels`](crate::kernels)).
    pub fn generate<S: Sink + ?Sized>(
        &self,
        requests: &[Request],
        opts: &BatchOptions,
        sink: &mut S,
    ) -> Result<(), S::Error> {
        let c = self.config().clone();
        let mut prefixes = PrefixCache {
            entries: VecDeque::new(),
            cap: opts.prefix_entries,
        };
        let mut active: Vec<Active> = Vec::new();
        let mut next = 0;
        loop {
            while active.len() < opts.batch.max(1) && next < requests.len() {
                let r = &requests[next];
                // Positions past the context are never fed.
                let room = c.context_length.saturating_sub(r.prompt.len());
                if r.prompt.is_empty() || r.max_tokens.min(room) == 0 {
                    sink.done(next)?;
                    next += 1;
                    continue;
                }
                let mut cache = self.new_cache(r.prompt.len() + r.max_tokens.min(room));
                let mut fed = 0;
                if let Some((hit, n)) = prefixes.lookup(r.prompt) {
                    // Keep one prompt token to feed: its logits give the first token.
                    let n = n.min(r.prompt.len() - 1);
                    if n >= opts.min_prefix {
                        cache.copy_prefix(hit, n, c.kv_dim());
                        fed = n;
                    }
                }
                active.push(Active {
                    request: next,
                    cache,
                    fed,
                    generated: 0,
                    last: None,
                });
                next += 1;
            }
            if active.is_empty() {
                return Ok(());
            }
            let plan = plan_step(&active, requests, opts.step_tokens);
            let mut caches: Vec<KvCache> = active
                .iter_mut()
                .map(|a| std::mem::take(&mut a.cache))
                .collect();
            let feeds: Vec<Feed> = plan
                .iter()
                .map(|&(slot, from, to)| Feed {
                    cache: slot,
                    tokens: match active[slot].last {
                        Some(ref t) => std::slice::from_ref(t),
                        None => &requests[active[slot].request].prompt[from..to],
                    },
                    logits: active[slot].last.is_some()
                        || to == requests[active[slot].request].prompt.len(),
                    generated: active[slot].last.is_some(),
                })
                .collect();
            let wants: Vec<(usize, bool)> = feeds.iter().map(|f| (f.cache, f.logits)).collect();
            let tokens = self.install(|| self.step(&mut caches, &feeds));
            drop(feeds);
            for (a, cache) in active.iter_mut().zip(caches) {
                a.cache = cache;
            }
            let mut produced = tokens.into_iter();
            let mut finished = Vec::new();
            for (&(slot, from, to), &(_, logits)) in plan.iter().zip(&wants) {
                let a = &mut active[slot];
                let prompt = requests[a.request].prompt;
                if a.last.is_none() {
                    a.fed = to;
                    debug_assert!(from < to);
                    if to == prompt.len() {
                        prefixes.insert(prompt, &a.cache, c.kv_dim());
                    }
                }
                if !logits {
                    continue;
                }
                let Some(tok) = produced.next() else { break };
                a.generated += 1;
                let budget = requests[a.request]
                    .max_tokens
                    .min(c.context_length - prompt.len());
                if sink.token(a.request, tok) == Next::Stop || a.generated >= budget {
                    finished.push(slot);
                } else {
                    a.last = Some(tok);
                }
            }
            finished.sort_unstable();
            for slot in finished.into_iter().rev() {
                let a = active.remove(slot);
                sink.done(a.request)?;
            }
        }
    }
}

/// Which tokens each active sequence feeds this step: `(slot, from, to)`,
/// a prompt range for sequences still reading their prompt (ignored for
/// decoding ones, which feed their last token). Decoding sequences come
/// first; prompts share what is left of `step_tokens`.
fn plan_step(
    active: &[Active],
    requests: &[Request],
    step_tokens: usize,
) -> Vec<(usize, usize, usize)> {
    let mut plan = Vec::new();
    let mut budget = step_tokens.max(1);
    for (slot, a) in active.iter().enumerate() {
        if a.last.is_some() {
            plan.push((slot, 0, 0));
            budget = budget.saturating_sub(1);
        }
    }
    for (slot, a) in active.iter().enumerate() {
        if a.last.is_none() && (budget > 0 || plan.is_empty()) {
            let len = requests[a.request].prompt.len();
            let take = (len - a.fed).min(budget.max(1));
            plan.push((slot, a.fed, a.fed + take));
            budget = budget.saturating_sub(take);
        }
    }
    plan
}
