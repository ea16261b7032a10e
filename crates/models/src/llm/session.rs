//! A model with its request journal: every call is identified by its request
//! id, answered from the journal when an earlier run finished it, and
//! journaled as soon as it finishes. The perturb stage writes GenADV and
//! conflict passages through this, so its calls are cached, retried and
//! recorded like the generate stage's.

use serde_json::json;
use std::path::Path;
use std::sync::Arc;

use super::journal::{Journal, JournalEntry};
use super::local::LocalLlm;
use super::openai::{OpenAiClient, OpenAiConfig};
use super::{ChatMessage, GenSettings, Generation};
use crate::paths::sha256_str;
use crate::{ModelError, Result};

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

/// A deterministic stand-in model for tests: a function of the messages.
pub type Script = Box<dyn FnMut(&[ChatMessage]) -> String + Send>;

enum Backend {
    Local(Box<LocalLlm>),
    OpenAi(Arc<OpenAiClient>, tokio::runtime::Runtime),
    Scripted(Script),
}

/// A model plus its journal.
pub struct ModelSession {
    backend: Backend,
    journal: Option<Journal>,
    kind: &'static str,
    key: String,
    name: String,
    /// Calls answered from the journal / made now.
    pub cached: u64,
    pub made: u64,
}

fn journal_at(dir: &Path, kind: &str, key: &str) -> Result<Journal> {
    let path = dir.join(format!("{kind}-{}.jsonl", &sha256_str(key)[..16]));
    Journal::open(&path).map_err(|e| ModelError::Load {
        path,
        message: e.to_string(),
    })
}

impl ModelSession {
    /// The embedded GGUF model, journaled under `journal_dir`.
    pub fn local(gguf: &Path, journal_dir: &Path) -> Result<ModelSession> {
        let llm = LocalLlm::load(gguf)?;
        let key = format!("sha256:{}", llm.sha256());
        let name = format!("{}@sha256:{}", llm.name(), &llm.sha256()[..16]);
        Ok(ModelSession {
            journal: Some(journal_at(journal_dir, "local", &key)?),
            backend: Backend::Local(Box::new(llm)),
            kind: "local",
            key,
            name,
            cached: 0,
            made: 0,
        })
    }

    /// An OpenAI-compatible server, journaled under `journal_dir`.
    pub fn openai(cfg: OpenAiConfig, journal_dir: &Path) -> Result<ModelSession> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        let client = OpenAiClient::new(cfg).map_err(ModelError::Tokenizer)?;
        let served = rt
            .block_on(client.served_model())
            .map_err(ModelError::Tokenizer)?;
        Ok(ModelSession {
            journal: Some(journal_at(journal_dir, "openai", &served)?),
            backend: Backend::OpenAi(Arc::new(client), rt),
            kind: "openai",
            key: served.clone(),
            name: served,
            cached: 0,
            made: 0,
        })
    }

    /// A scripted model (tests): no journal.
    pub fn scripted(name: &str, script: Script) -> ModelSession {
        ModelSession {
            backend: Backend::Scripted(script),
            journal: None,
            kind: "scripted",
            key: name.into(),
            name: name.into(),
            cached: 0,
            made: 0,
        }
    }

    /// The model's id for recipes: `<kind>:<model key>`.
    pub fn resource_id(&self) -> String {
        format!("{}:{}", self.kind, self.key)
    }

    /// The model's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One cached, journaled call.
    pub fn chat(
        &mut self,
        template: (&str, u32),
        messages: &[ChatMessage],
        settings: &GenSettings,
    ) -> Result<Generation> {
        let id = request_id(self.kind, &self.key, template, messages, settings);
        if let Some(e) = self.journal.as_ref().and_then(|j| j.done(&id)) {
            self.cached += 1;
            return Ok(e
                .generation
                .clone()
                .expect("done entries have a generation"));
        }
        let started = std::time::Instant::now();
        let (result, attempts) = match &mut self.backend {
            Backend::Local(llm) => (llm.chat(messages, settings).map_err(|e| e.to_string()), 1),
            Backend::OpenAi(client, rt) => {
                let out = rt.block_on(client.call(messages, settings));
                (out.result, out.attempts)
            }
            Backend::Scripted(f) => (
                Ok(Generation {
                    text: f(messages),
                    finish_reason: "stop".into(),
                    prompt_tokens: None,
                    completion_tokens: None,
                    token_ids: None,
                    model: self.name.clone(),
                }),
                1,
            ),
        };
        self.made += 1;
        if let Some(j) = &self.journal {
            let entry = JournalEntry {
                request_id: id.clone(),
                generation: result.as_ref().ok().cloned(),
                error: result.as_ref().err().cloned(),
                attempts,
                latency_ms: Some(started.elapsed().as_millis() as u64),
            };
            j.append(&entry).map_err(|e| ModelError::Load {
                path: j.path().to_path_buf(),
                message: e.to_string(),
            })?;
        }
        result.map_err(ModelError::Tokenizer)
    }
}
