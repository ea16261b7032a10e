//! A model with its request journal: the one path through which every stage
//! calls models. Every call is identified by its request id, answered from
//! the journal when an earlier run finished it, and journaled as soon as it
//! finishes, so a run killed at any moment loses only the calls in flight.
//! The generate stage answers cases through [`ModelSession::run_all`]; the
//! perturb stage writes GenADV and conflict passages through
//! [`ModelSession::chat`]; both share one journal file per model.

use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::backend::{open_backend, BackendId, BackendSpec, LlmBackend, ScriptedBackend};
use super::journal::{Journal, JournalEntry};
use super::{ChatMessage, GenSettings, Generation};
use crate::paths::sha256_str;
use crate::{ModelError, Result};

pub use super::backend::Script;

/// SHA-256 of the canonical request: backend kind, model id, template id and
/// version, full messages, all settings. The same in every stage.
pub fn request_id(
    backend: &str,
    model_key: &str,
    template: (&str, u32),
    messages: &[ChatMessage],
    settings: &GenSettings,
) -> String {
    let v = json!({
        "backend": backend, "model": model_key,
        "template": {"id": template.0, "version": template.1},
        "messages": messages, "settings": settings,
    });
    sha256_str(&serde_json::to_string(&v).expect("request serialises"))
}

/// The journal of a model in `dir`: `<kind>-<sha256(key)[..16]>.jsonl`.
/// Named here only, so every stage shares a model's finished calls.
fn journal_at(dir: &Path, id: &BackendId) -> Result<Journal> {
    let path = dir.join(format!("{}-{}.jsonl", id.kind, &sha256_str(&id.key)[..16]));
    Journal::open(&path).map_err(|e| ModelError::Load {
        path,
        message: e.to_string(),
    })
}

/// One request's answer: its journal entry (a generation or the error after
/// retries) and whether this run made the call.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The journal entry: the request id, and the generation or the final error.
    pub entry: JournalEntry,
    /// True when this run made the call; false when it came from the journal.
    pub fresh: bool,
}

/// A model plus its journal.
pub struct ModelSession {
    backend: Box<dyn LlmBackend>,
    journal: Option<Journal>,
    /// Calls answered from the journal / made now.
    pub cached: u64,
    /// Calls this session made to the model.
    pub made: u64,
}

impl ModelSession {
    /// The model `spec` names, journaled under `journal_dir`.
    pub fn open(spec: &BackendSpec, journal_dir: &Path) -> Result<ModelSession> {
        Self::with_backend(open_backend(spec)?, journal_dir)
    }

    /// Any backend, journaled under `journal_dir`.
    pub fn with_backend(backend: Box<dyn LlmBackend>, journal_dir: &Path) -> Result<ModelSession> {
        Ok(ModelSession {
            journal: Some(journal_at(journal_dir, backend.id())?),
            backend,
            cached: 0,
            made: 0,
        })
    }

    /// A scripted model (tests): no journal.
    pub fn scripted(name: &str, script: Script) -> ModelSession {
        ModelSession {
            backend: Box::new(ScriptedBackend::new(name, script)),
            journal: None,
            cached: 0,
            made: 0,
        }
    }

    /// Who the model is.
    pub fn id(&self) -> &BackendId {
        self.backend.id()
    }

    /// The model's id for recipes: `<kind>:<model key>`.
    pub fn resource_id(&self) -> String {
        format!("{}:{}", self.id().kind, self.id().key)
    }

    /// The model's display name.
    pub fn name(&self) -> &str {
        &self.id().name
    }

    /// The request id of each request under `template` and `settings`.
    pub fn request_ids(
        &self,
        template: (&str, u32),
        requests: &[Vec<ChatMessage>],
        settings: &GenSettings,
    ) -> Vec<String> {
        let id = self.id();
        requests
            .iter()
            .map(|m| request_id(id.kind, &id.key, template, m, settings))
            .collect()
    }

    /// Whether an earlier run finished request `id`.
    pub fn is_done(&self, id: &str) -> bool {
        self.journal.as_ref().is_some_and(|j| j.done(id).is_some())
    }

    /// Indices of the requests still to call: not finished, first
    /// occurrence of each id.
    pub fn pending(&self, ids: &[String]) -> Vec<usize> {
        let mut seen = HashSet::new();
        (0..ids.len())
            .filter(|&i| !self.is_done(&ids[i]) && seen.insert(ids[i].as_str()))
            .collect()
    }

    /// Answers every request (`ids` from [`request_ids`](Self::request_ids)),
    /// in request order: finished ones from the journal, the others by the
    /// backend with as many in flight as it allows, each journaled as it
    /// finishes. `tick` is called once per call made.
    pub fn run_all(
        &mut self,
        ids: &[String],
        requests: &[Vec<ChatMessage>],
        settings: &GenSettings,
        tick: &mut dyn FnMut(),
    ) -> Result<Vec<Answer>> {
        let pending = self.pending(ids);
        let calls: Vec<&[ChatMessage]> = pending.iter().map(|&i| requests[i].as_slice()).collect();
        let mut fresh: HashMap<String, JournalEntry> = HashMap::new();
        let journal = self.journal.as_ref();
        let batch = super::backend::Batch {
            requests: &calls,
            settings,
        };
        self.backend.call_all(batch, &mut |k, out| {
            let entry = JournalEntry {
                request_id: ids[pending[k]].clone(),
                generation: out.result.as_ref().ok().cloned(),
                error: out.result.err(),
                attempts: out.attempts,
                latency_ms: Some(out.latency.as_millis() as u64),
            };
            if let Some(j) = journal {
                j.append(&entry).map_err(|e| ModelError::Load {
                    path: j.path().to_path_buf(),
                    message: e.to_string(),
                })?;
            }
            fresh.insert(entry.request_id.clone(), entry);
            tick();
            Ok(())
        })?;
        if let Some(j) = journal {
            j.sync().map_err(|e| ModelError::Load {
                path: j.path().to_path_buf(),
                message: e.to_string(),
            })?;
        }
        self.made += fresh.len() as u64;
        let answers = ids
            .iter()
            .map(|id| {
                let (entry, is_fresh) = match fresh.get(id) {
                    Some(e) => (e.clone(), true),
                    None => {
                        let e = journal.and_then(|j| j.done(id)).cloned().ok_or_else(|| {
                            ModelError::Backend(format!(
                                "request {id} was neither answered nor journaled"
                            ))
                        })?;
                        (e, false)
                    }
                };
                Ok(Answer {
                    entry,
                    fresh: is_fresh,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.cached += answers.iter().filter(|a| !a.fresh).count() as u64;
        Ok(answers)
    }

    /// One cached, journaled call.
    pub fn chat(
        &mut self,
        template: (&str, u32),
        messages: &[ChatMessage],
        settings: &GenSettings,
    ) -> Result<Generation> {
        let requests = [messages.to_vec()];
        let ids = self.request_ids(template, &requests, settings);
        let answer = self
            .run_all(&ids, &requests, settings, &mut || {})?
            .remove(0);
        match (answer.entry.generation, answer.entry.error) {
            (Some(g), _) => Ok(g),
            (None, e) => Err(ModelError::Backend(e.unwrap_or_else(|| "no answer".into()))),
        }
    }
}
