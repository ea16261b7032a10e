//! Generation stage: render each case with a prompt template and get the
//! model's response, through the `models` crate's backends.
//!
//! Never redo a finished call, never lose one: every request has an id
//! (SHA-256 of the canonical request) and every finished request is appended
//! to the request journal at once (`<store>/requests/<model>.jsonl`), so a
//! run killed at any moment loses only the calls in flight, and a rerun
//! skips every finished request. Failed requests (after retries) become
//! rows with their error and attempts; they are retried by the next run.
//! The `responses` artifact is written sorted and goes through the store:
//! when every request succeeded the run is a cached action like any other.

pub use ragprobe_models::prompts::{Template, TemplateError};

use indicatif::{ProgressBar, ProgressStyle};
use ragprobe_artifact::cases::{read_cases, CaseRow};
use ragprobe_artifact::responses::{write_responses, ResponseRow};
use ragprobe_artifact::{canonical_json, kinds, sha256_hex, ArtifactError, Recipe, Store, Written};
use ragprobe_models::llm::journal::{Journal, JournalEntry};
use ragprobe_models::llm::local::LocalLlm;
use ragprobe_models::llm::openai::{OpenAiClient, OpenAiConfig};
use ragprobe_models::llm::{ChatMessage, GenSettings, Generation};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Version of the generate stage's logic; part of every recipe.
pub const STAGE_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error(transparent)]
    Model(#[from] ragprobe_models::ModelError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("{0}")]
    Backend(String),
    #[error("request journal {path}: {error}")]
    Journal {
        path: PathBuf,
        error: std::io::Error,
    },
}

pub type Result<T, E = GenerateError> = std::result::Result<T, E>;

/// Which model answers.
#[derive(Debug, Clone)]
pub enum BackendSpec {
    /// The embedded GGUF model (default: SmolLM2-135M-Instruct).
    Local { gguf: PathBuf },
    /// An OpenAI-compatible server.
    OpenAi(OpenAiConfig),
}

/// Options of one generate run.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub template: Template,
    pub backend: BackendSpec,
    pub settings: GenSettings,
    /// Only cases of these conditions (empty = all).
    pub conditions: Vec<String>,
    /// Cut every passage to this many tokens of the model's tokenizer before
    /// rendering (NoMIRACL's `max_passage_tokens`); None = as they are.
    pub truncate: Option<ragprobe_models::truncate::PassageTruncator>,
    pub progress: bool,
}

/// Counts for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenerateSummary {
    pub requests: u64,
    pub cached: u64,
    pub new: u64,
    pub failed: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone)]
pub struct GenerateReport {
    pub responses: Written,
    pub summary: GenerateSummary,
    /// The whole stage was a cache hit.
    pub cached: bool,
}

/// One request to make.
struct Request {
    id: String,
    case: usize,
    messages: Vec<ChatMessage>,
}

/// The model's identity in request hashes and manifests.
struct ModelId {
    backend: &'static str,
    /// Name recorded in responses.
    name: String,
    /// What enters the hash: file hash or served model id.
    key: String,
}

fn request_id(
    model: &ModelId,
    template: &Template,
    messages: &[ChatMessage],
    settings: &GenSettings,
) -> String {
    ragprobe_models::llm::session::request_id(
        model.backend,
        &model.key,
        (&template.id, template.version),
        messages,
        settings,
    )
}

fn progress_bar(n: u64, show: bool) -> ProgressBar {
    let bar = if show {
        ProgressBar::new(n)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "generate [{bar:30}] {pos}/{len} requests ({per_sec}, eta {eta}) {msg}",
        )
        .expect("static")
        .progress_chars("=> "),
    );
    bar
}

/// Run the stage.
pub fn generate(store: &Store, cases: &str, opts: &GenerateOptions) -> Result<GenerateReport> {
    let cases_id = store.resolve_kind(cases, kinds::CASES)?;
    let mut cases = read_cases(store, &cases_id)?;
    if !opts.conditions.is_empty() {
        cases.retain(|c| opts.conditions.contains(&c.condition));
        if cases.is_empty() {
            tracing::warn!(
                "no case of condition(s) {} in {cases_id}: the responses artifact will be empty",
                opts.conditions.join(", ")
            );
        }
    }
    if let Some(t) = &opts.truncate {
        for c in cases.iter_mut() {
            for d in c.docs.iter_mut() {
                d.text = t.truncate_passage(d.title.as_deref(), &d.text)?;
            }
        }
    }
    // Identify the model first: its id is part of every request.
    let mut local: Option<LocalLlm> = None;
    let mut client: Option<Arc<OpenAiClient>> = None;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| GenerateError::Backend(e.to_string()))?;
    let model = match &opts.backend {
        BackendSpec::Local { gguf } => {
            // Hash the file before loading the model: a cache hit needs no load.
            let sha = ragprobe_models::paths::file_sha256(gguf)
                .map_err(|_| ragprobe_models::ModelError::Missing { path: gguf.clone() })?;
            let name = gguf
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            ModelId {
                backend: "local",
                name: format!("{name}@sha256:{}", &sha[..16]),
                key: format!("sha256:{sha}"),
            }
        }
        BackendSpec::OpenAi(cfg) => {
            let c = OpenAiClient::new(cfg.clone()).map_err(GenerateError::Backend)?;
            let served = runtime
                .block_on(c.served_model())
                .map_err(GenerateError::Backend)?;
            client = Some(Arc::new(c));
            ModelId {
                backend: "openai",
                name: served.clone(),
                key: served,
            }
        }
    };
    let t = &opts.template;
    let mut recipe = Recipe::new(
        "generate",
        STAGE_VERSION,
        json!({"template": {"id": t.id, "version": t.version, "study": t.study, "role": t.role, "variant": t.variant}, "settings": opts.settings, "backend": model.backend, "conditions": opts.conditions}),
    );
    recipe.inputs = vec![cases_id.clone()];
    recipe
        .resources
        .insert("model".into(), format!("{}:{}", model.backend, model.key));
    if let Some(t) = &opts.truncate {
        if let Some(p) = recipe.params.as_object_mut() {
            p.insert("max_passage_tokens".into(), json!(t.max_tokens()));
        }
        recipe.resources.insert(
            "passage_tokenizer".into(),
            format!("sha256:{}", t.tokenizer_sha256()),
        );
    }
    if let Some(rec) = store.cached(&recipe)? {
        tracing::info!(
            "generate: cached, not run (action {}); every request already answered",
            &rec.key[..12]
        );
        let o = &rec.outputs[0];
        let m = store.manifest(&o.id)?;
        let summary = GenerateSummary {
            requests: m.rows,
            cached: m.rows,
            ..Default::default()
        };
        return Ok(GenerateReport {
            responses: Written {
                kind: o.kind.clone(),
                id: o.id.clone(),
                rows: o.rows,
            },
            summary,
            cached: true,
        });
    }

    let requests: Vec<Request> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let messages = t.render_case(c);
            Request {
                id: request_id(&model, t, &messages, &opts.settings),
                case: i,
                messages,
            }
        })
        .collect();
    let jpath = store.root().join("requests").join(format!(
        "{}-{}.jsonl",
        model.backend,
        &sha256_hex(model.key.as_bytes())[..16]
    ));
    let journal = Arc::new(
        Journal::open(&jpath).map_err(|error| GenerateError::Journal {
            path: jpath.clone(),
            error,
        })?,
    );
    let mut summary = GenerateSummary {
        requests: requests.len() as u64,
        ..Default::default()
    };
    let mut seen = std::collections::HashSet::new();
    let pending: Vec<&Request> = requests
        .iter()
        .filter(|r| journal.done(&r.id).is_none() && seen.insert(r.id.clone()))
        .collect();
    summary.cached = requests
        .iter()
        .filter(|r| journal.done(&r.id).is_some())
        .count() as u64;
    tracing::info!(
        "generate: {} requests, {} already answered, {} to run ({} {})",
        requests.len(),
        summary.cached,
        pending.len(),
        model.backend,
        model.name
    );
    let started = Instant::now();
    let bar = progress_bar(pending.len() as u64, opts.progress);
    let mut fresh: std::collections::HashMap<String, JournalEntry> =
        std::collections::HashMap::new();
    let record = |entry: JournalEntry,
                  fresh: &mut std::collections::HashMap<String, JournalEntry>|
     -> Result<()> {
        journal
            .append(&entry)
            .map_err(|error| GenerateError::Journal {
                path: jpath.clone(),
                error,
            })?;
        fresh.insert(entry.request_id.clone(), entry);
        Ok(())
    };
    match &opts.backend {
        BackendSpec::Local { gguf } => {
            if !pending.is_empty() {
                local = Some(LocalLlm::load(gguf)?);
            }
            let llm = local.as_mut();
            if let Some(llm) = llm {
                for r in &pending {
                    let t0 = Instant::now();
                    let entry = match llm.chat(&r.messages, &opts.settings) {
                        Ok(mut g) => {
                            g.model = model.name.clone();
                            JournalEntry {
                                request_id: r.id.clone(),
                                generation: Some(g),
                                error: None,
                                attempts: 1,
                                latency_ms: Some(t0.elapsed().as_millis() as u64),
                            }
                        }
                        Err(e) => JournalEntry {
                            request_id: r.id.clone(),
                            generation: None,
                            error: Some(e.to_string()),
                            attempts: 1,
                            latency_ms: Some(t0.elapsed().as_millis() as u64),
                        },
                    };
                    tracing::debug!("request {} took {:?}", &r.id[..12], t0.elapsed());
                    record(entry, &mut fresh)?;
                    bar.inc(1);
                }
            }
        }
        BackendSpec::OpenAi(cfg) => {
            let client = client.clone().expect("set above");
            let in_flight_cap = cfg.concurrency.max(1) * 2;
            runtime.block_on(async {
                let mut set = tokio::task::JoinSet::new();
                let mut next = 0usize;
                loop {
                    while set.len() < in_flight_cap && next < pending.len() {
                        let (c, id, msgs, settings) = (
                            client.clone(),
                            pending[next].id.clone(),
                            pending[next].messages.clone(),
                            opts.settings.clone(),
                        );
                        set.spawn(async move {
                            let out = c.call(&msgs, &settings).await;
                            (id, out)
                        });
                        next += 1;
                    }
                    let Some(joined) = set.join_next().await else {
                        break;
                    };
                    let (id, out) = joined
                        .map_err(|e| GenerateError::Backend(format!("request task failed: {e}")))?;
                    let latency_ms = Some(out.latency.as_millis() as u64);
                    let entry = match out.result {
                        Ok(g) => JournalEntry {
                            request_id: id,
                            generation: Some(g),
                            error: None,
                            attempts: out.attempts,
                            latency_ms,
                        },
                        Err(e) => JournalEntry {
                            request_id: id,
                            generation: None,
                            error: Some(e),
                            attempts: out.attempts,
                            latency_ms,
                        },
                    };
                    record(entry, &mut fresh)?;
                    bar.inc(1);
                }
                Ok::<(), GenerateError>(())
            })?;
        }
    }
    bar.finish_and_clear();
    journal.sync().map_err(|error| GenerateError::Journal {
        path: jpath.clone(),
        error,
    })?;
    let elapsed = started.elapsed().as_secs_f64();

    let mut rows = Vec::with_capacity(requests.len());
    for r in &requests {
        let c: &CaseRow = &cases[r.case];
        let entry = journal
            .done(&r.id)
            .or_else(|| fresh.get(&r.id))
            .cloned()
            .expect("every request was answered or recorded as failed");
        let g: Option<&Generation> = entry.generation.as_ref();
        if g.is_none() {
            summary.failed += 1;
        } else if fresh.contains_key(&r.id) {
            summary.new += 1;
        }
        if let Some(g) = g {
            summary.prompt_tokens += g.prompt_tokens.unwrap_or(0) as u64;
            summary.completion_tokens += g.completion_tokens.unwrap_or(0) as u64;
        }
        rows.push(ResponseRow {
            request_id: r.id.clone(),
            case_id: c.case_id.clone(),
            qid: c.qid.clone(),
            condition: c.condition.clone(),
            template: t.id.clone(),
            template_version: t.version,
            backend: model.backend.into(),
            model: model.name.clone(),
            messages: serde_json::to_string(&r.messages).expect("messages serialise"),
            settings: canonical_json(
                &serde_json::to_value(&opts.settings).expect("settings serialise"),
            ),
            text: g.map(|g| g.text.clone()),
            finish_reason: g.map(|g| g.finish_reason.clone()),
            prompt_tokens: g.and_then(|g| g.prompt_tokens),
            completion_tokens: g.and_then(|g| g.completion_tokens),
            token_ids: g.and_then(|g| g.token_ids.clone()),
            attempts: entry.attempts,
            error: entry.error.clone(),
        });
    }
    let details = json!({
        "template": {"id": t.id, "version": t.version, "source": t.source, "study": t.study, "role": t.role, "variant": t.variant},
        "backend": model.backend, "model": model.name, "model_key": model.key,
        "settings": opts.settings, "requests": summary.requests, "failed": summary.failed,
    });
    let written = write_responses(store, &recipe, rows, details)?;
    if summary.failed == 0 {
        store.record_action(&recipe, std::slice::from_ref(&written))?;
    } else {
        tracing::warn!("generate: {} request(s) failed after retries; they are rows with their error, and the next run retries them", summary.failed);
    }
    store.log_run(json!({"stage": "generate", "responses": written.id, "backend": model.backend, "model": model.name,
        "base_urls": match &opts.backend { BackendSpec::OpenAi(c) => json!(c.base_urls), _ => serde_json::Value::Null },
        "new": summary.new, "cached": summary.cached, "failed": summary.failed, "seconds": elapsed,
        "requests_per_second": if elapsed > 0.0 { summary.new as f64 / elapsed } else { 0.0 }}));
    tracing::info!(
        "generate: {} new in {elapsed:.1}s ({:.1} requests/s)",
        summary.new,
        if elapsed > 0.0 {
            summary.new as f64 / elapsed
        } else {
            0.0
        }
    );
    Ok(GenerateReport {
        responses: written,
        summary,
        cached: false,
    })
}
