//! [`LlmBackend`]: what every model behind ragprobe does — say who it is,
//! answer one call, and answer many with as much parallelism as it allows.
//! The embedded model, the OpenAI-compatible client and the scripted test
//! model implement it; [`ModelSession`](super::session::ModelSession) is the
//! one path every stage calls models through.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::local::LocalLlm;
use super::openai::{OpenAiClient, OpenAiConfig};
use super::{ChatMessage, GenSettings, Generation};
use crate::{ModelError, Result};

/// Which model answers.
#[derive(Debug, Clone)]
pub enum BackendSpec {
    /// The embedded GGUF model (default: SmolLM2-135M-Instruct).
    Local {
        /// Path of the GGUF model file.
        gguf: PathBuf,
        /// Sequences decoded together (1 = one at a time). Outputs are the
        /// same for every value.
        batch: usize,
    },
    /// An OpenAI-compatible server.
    OpenAi(OpenAiConfig),
}

/// Which kind of backend a stage uses (the CLI's `--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BackendKind {
    /// The embedded GGUF model, in-process (SmolLM2-135M-Instruct unless a .gguf file is named).
    #[default]
    Local,
    /// An OpenAI-compatible server (vLLM, llama.cpp server, Ollama, TGI, OpenAI).
    Openai,
}

/// A model's identity in request hashes, recipes and responses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendId {
    /// `local`, `openai` or `scripted`.
    pub kind: &'static str,
    /// What enters request hashes: the GGUF file's hash or the served model id.
    pub key: String,
    /// Name recorded in responses.
    pub name: String,
}

/// The outcome of one call: the generation or the final error, with the
/// attempts it took.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// The generation, or the final error message.
    pub result: std::result::Result<Generation, String>,
    /// Attempts made, retries included.
    pub attempts: u32,
    /// Wall time of the call, over all attempts.
    pub latency: Duration,
}

/// The chats one [`LlmBackend::call_all`] answers, all with the same settings.
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    /// The chats, in index order.
    pub requests: &'a [&'a [ChatMessage]],
    /// The settings every chat is answered with.
    pub settings: &'a GenSettings,
}

/// Called as each call of [`LlmBackend::call_all`] finishes: (index, outcome).
pub type OnDone<'a> = dyn FnMut(usize, CallOutcome) -> Result<()> + 'a;

/// A model that answers chat requests.
///
/// The generate stage keys every request by the backend's [`BackendId::key`],
/// the messages and the settings, journals each answer, and asks a backend
/// only for requests whose answer it has not journalled: so a backend must
/// give the answer that key stands for (the same model and arithmetic
/// whenever `key` is the same), and a failure is an outcome, not a panic.
pub trait LlmBackend: Send {
    /// Who the model is. Must not change over the backend's life: `key`
    /// enters every request hash.
    fn id(&self) -> &BackendId;
    /// How many calls may be in flight at once (what
    /// [`call_all`](Self::call_all) is given at a time); at least 1.
    fn max_in_flight(&self) -> usize {
        1
    }
    /// Answers one chat with `settings`, retrying transient failures as
    /// the backend's configuration says. Never panics on a model or
    /// network failure: the final error is the outcome's `result`, its
    /// message recorded in the responses artifact (so it must hold no
    /// secret); `attempts` counts every try.
    fn call(&mut self, messages: &[ChatMessage], settings: &GenSettings) -> CallOutcome;
    /// Every call of the batch's `requests`, reporting each exactly once to `on_done`
    /// with its index as it finishes (in any order); an error `on_done`
    /// returns stops the rest and is returned. The default runs them one
    /// after another through [`call`](Self::call).
    fn call_all(&mut self, batch: Batch<'_>, on_done: &mut OnDone<'_>) -> Result<()> {
        let Batch { requests, settings } = batch;
        for (i, m) in requests.iter().enumerate() {
            let out = self.call(m, settings);
            on_done(i, out)?;
        }
        Ok(())
    }
}

/// Opens the backend a spec names. The embedded model is identified by its
/// file hash and loaded only on its first call, so a fully cached stage
/// never loads it.
pub fn open_backend(spec: &BackendSpec) -> Result<Box<dyn LlmBackend>> {
    Ok(match spec {
        BackendSpec::Local { gguf, batch } => Box::new(LocalBackend::new(gguf, *batch)?),
        BackendSpec::OpenAi(cfg) => Box::new(OpenAiBackend::new(cfg.clone())?),
    })
}

/// The embedded GGUF model, loaded lazily.
pub struct LocalBackend {
    id: BackendId,
    path: PathBuf,
    batch: usize,
    llm: Option<Arc<LocalLlm>>,
}

/// The embedded model loaded last in this process, by its content key, so
/// that the next pipeline step (or perturb's writer) that uses the same
/// model does not load it again: loading dequantises and checks every
/// weight. One model is kept, no more.
static LOADED: Mutex<Option<(String, Arc<LocalLlm>)>> = Mutex::new(None);

/// The default number of sequences the embedded model decodes together
/// (the engine's).
pub use ragprobe_engine::DEFAULT_BATCH;

impl LocalBackend {
    /// Hashes `gguf` (the model's id, with the engine's version); does not
    /// load it.
    pub fn new(gguf: &Path, batch: usize) -> Result<Self> {
        let sha = crate::paths::file_sha256(gguf).map_err(|_| ModelError::Missing {
            path: gguf.to_path_buf(),
        })?;
        let file = gguf
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(LocalBackend {
            id: BackendId {
                kind: "local",
                name: format!("{file}@sha256:{}", &sha[..16]),
                key: format!("sha256:{sha}+{}", ragprobe_engine::ENGINE_ID),
            },
            path: gguf.to_path_buf(),
            batch: batch.max(1),
            llm: None,
        })
    }

    fn llm(&mut self) -> Result<&LocalLlm> {
        if self.llm.is_none() {
            let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
            let llm = match &*loaded {
                Some((key, m)) if *key == self.id.key => m.clone(),
                _ => {
                    // Free the other model before loading this one.
                    *loaded = None;
                    let m = Arc::new(LocalLlm::load(&self.path)?);
                    *loaded = Some((self.id.key.clone(), m.clone()));
                    m
                }
            };
            self.llm = Some(llm);
        }
        Ok(self.llm.as_deref().expect("just loaded"))
    }
}

impl LlmBackend for LocalBackend {
    fn id(&self) -> &BackendId {
        &self.id
    }

    fn max_in_flight(&self) -> usize {
        self.batch
    }

    fn call(&mut self, messages: &[ChatMessage], settings: &GenSettings) -> CallOutcome {
        let mut out = None;
        let batch = Batch {
            requests: &[messages],
            settings,
        };
        let r = self.call_all(batch, &mut |_, o| {
            out = Some(o);
            Ok(())
        });
        out.unwrap_or_else(|| CallOutcome {
            result: Err(r.err().map(|e| e.to_string()).unwrap_or_default()),
            attempts: 1,
            latency: Duration::ZERO,
        })
    }

    /// Decodes `batch` requests together (continuous batching); the
    /// latency of a call is the time from the start of the run to its end.
    fn call_all(&mut self, batch: Batch<'_>, on_done: &mut OnDone<'_>) -> Result<()> {
        let Batch { requests, settings } = batch;
        let t0 = Instant::now();
        let (name, batch) = (self.id.name.clone(), self.batch);
        let llm = self.llm()?;
        llm.chat_all(requests, settings, batch, &mut |i, g| {
            let result = g
                .map(|mut g| {
                    g.model = name.clone();
                    g
                })
                .map_err(|e| e.to_string());
            on_done(
                i,
                CallOutcome {
                    result,
                    attempts: 1,
                    latency: t0.elapsed(),
                },
            )
        })
    }
}

/// An OpenAI-compatible server: calls run concurrently up to twice the
/// client's per-replica concurrency.
pub struct OpenAiBackend {
    id: BackendId,
    client: Arc<OpenAiClient>,
    runtime: tokio::runtime::Runtime,
    in_flight: usize,
}

impl OpenAiBackend {
    /// Connects and asks the server which model it serves.
    pub fn new(cfg: OpenAiConfig) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| ModelError::Backend(e.to_string()))?;
        let in_flight = cfg.concurrency.max(1) * 2;
        let client = OpenAiClient::new(cfg).map_err(ModelError::Backend)?;
        let served = runtime
            .block_on(client.served_model())
            .map_err(ModelError::Backend)?;
        Ok(OpenAiBackend {
            id: BackendId {
                kind: "openai",
                key: served.clone(),
                name: served,
            },
            client: Arc::new(client),
            runtime,
            in_flight,
        })
    }
}

fn outcome(out: super::openai::CallOutcome) -> CallOutcome {
    CallOutcome {
        result: out.result,
        attempts: out.attempts,
        latency: out.latency,
    }
}

impl LlmBackend for OpenAiBackend {
    fn id(&self) -> &BackendId {
        &self.id
    }

    fn max_in_flight(&self) -> usize {
        self.in_flight
    }

    fn call(&mut self, messages: &[ChatMessage], settings: &GenSettings) -> CallOutcome {
        outcome(self.runtime.block_on(self.client.call(messages, settings)))
    }

    fn call_all(&mut self, batch: Batch<'_>, on_done: &mut OnDone<'_>) -> Result<()> {
        let Batch { requests, settings } = batch;
        let (client, cap) = (self.client.clone(), self.in_flight);
        self.runtime.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            let mut next = 0usize;
            loop {
                while set.len() < cap && next < requests.len() {
                    let (c, msgs, settings) =
                        (client.clone(), requests[next].to_vec(), settings.clone());
                    let i = next;
                    set.spawn(async move { (i, c.call(&msgs, &settings).await) });
                    next += 1;
                }
                let Some(joined) = set.join_next().await else {
                    break;
                };
                let (i, out) =
                    joined.map_err(|e| ModelError::Backend(format!("request task failed: {e}")))?;
                on_done(i, outcome(out))?;
            }
            Ok(())
        })
    }
}

/// A deterministic stand-in model for tests: a function of the messages.
pub type Script = Box<dyn FnMut(&[ChatMessage]) -> String + Send>;

/// A scripted model (tests).
pub struct ScriptedBackend {
    id: BackendId,
    script: Script,
}

impl ScriptedBackend {
    /// A scripted backend named `name` (its id's key and name) that answers with `script`.
    pub fn new(name: &str, script: Script) -> Self {
        ScriptedBackend {
            id: BackendId {
                kind: "scripted",
                key: name.into(),
                name: name.into(),
            },
            script,
        }
    }
}

impl LlmBackend for ScriptedBackend {
    fn id(&self) -> &BackendId {
        &self.id
    }

    fn call(&mut self, messages: &[ChatMessage], _settings: &GenSettings) -> CallOutcome {
        CallOutcome {
            result: Ok(Generation {
                text: (self.script)(messages),
                finish_reason: "stop".into(),
                prompt_tokens: None,
                completion_tokens: None,
                token_ids: None,
                model: self.id.name.clone(),
            }),
            attempts: 1,
            latency: Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_backend_of_the_same_model_reuses_the_loaded_one() {
        let gguf = crate::paths::smollm2_gguf();
        if !gguf.is_file() {
            eprintln!(
                "SKIPPED: {} missing (scripts/fetch-models.sh)",
                gguf.display()
            );
            return;
        }
        let mut a = LocalBackend::new(&gguf, 1).unwrap();
        let mut b = LocalBackend::new(&gguf, 4).unwrap();
        let pa: *const LocalLlm = a.llm().unwrap();
        let pb: *const LocalLlm = b.llm().unwrap();
        assert_eq!(pa, pb, "one load serves both");
    }
}
