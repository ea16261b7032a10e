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

mod estimate;
pub mod judge;
pub use estimate::{estimate, Estimate};
pub use ragprobe_models::prompts::{Template, TemplateError};

use indicatif::{ProgressBar, ProgressStyle};
use ragprobe_artifact::{
    canonical_json, kinds, read, write_all, ArtifactError, CaseRow, Cases, Recipe, ResponseRow,
    Responses, Store, Written,
};
use ragprobe_models::llm::backend::BackendId;
pub use ragprobe_models::llm::backend::BackendSpec;
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::llm::{ChatMessage, GenSettings, Generation};
use serde_json::json;
use std::time::Instant;

/// Version of the generate stage's logic; part of every recipe.
pub const STAGE_VERSION: u32 = 1;

/// Errors of the generate stage.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// Reading or writing an artifact failed.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The model failed: it could not be loaded, reached, or used to tokenise passages.
    #[error(transparent)]
    Model(#[from] ragprobe_models::ModelError),
    /// A prompt template is invalid or could not be loaded.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// Invalid input: responses that record no cases.
    #[error("{0}")]
    Invalid(String),
}

/// Result of the generate stage, failing with [`GenerateError`] by default.
pub type Result<T, E = GenerateError> = std::result::Result<T, E>;

/// Options of one generate run.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// The prompt template each case is rendered with.
    pub template: Template,
    /// Which model answers: the embedded GGUF model or an OpenAI-compatible server.
    pub backend: BackendSpec,
    /// Generation settings (max tokens, temperature, stop, seed).
    pub settings: GenSettings,
    /// Only cases of these conditions (empty = all).
    pub conditions: Vec<String>,
    /// Cut every passage to this many tokens of the model's tokenizer before
    /// rendering (a reference's `max_passage_tokens`); None = as they are.
    pub truncate: Option<ragprobe_models::truncate::PassageTruncator>,
    /// Show a progress bar on the terminal.
    pub progress: bool,
}

/// Counts for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenerateSummary {
    /// Requests in the run: one per case.
    pub requests: u64,
    /// Requests already answered before this run (journal or cache).
    pub cached: u64,
    /// Requests answered by this run.
    pub new: u64,
    /// Requests that still failed after retries.
    pub failed: u64,
    /// Prompt tokens over the answered requests, where the backend reports them.
    pub prompt_tokens: u64,
    /// Completion tokens over the answered requests, where the backend reports them.
    pub completion_tokens: u64,
    /// Prompt tokens of the requests answered by this run (what it was
    /// billed for), where the backend reports them.
    pub new_prompt_tokens: u64,
    /// Completion tokens of the requests answered by this run.
    pub new_completion_tokens: u64,
}

/// What a generate run produced.
#[derive(Debug, Clone)]
pub struct GenerateReport {
    /// The `responses` artifact written (or found in the cache).
    pub responses: Written,
    /// The request counts.
    pub summary: GenerateSummary,
    /// The whole stage was a cache hit.
    pub cached: bool,
}

pub(crate) fn progress_bar(n: u64, show: bool) -> ProgressBar {
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

/// Run the stage: render every case, answer the requests through the
/// model's session (journaled, cached, concurrent where the backend allows),
/// and write the responses.
pub fn generate(store: &Store, cases: &str, opts: &GenerateOptions) -> Result<GenerateReport> {
    let (cases_id, cases) = load_cases(store, cases, opts)?;
    // The model's identity is part of every request and of the recipe; the
    // embedded model is hashed here and loaded only if a call is needed.
    let mut session = ModelSession::open(&opts.backend, &store.root().join("requests"))?;
    let model = session.id().clone();
    let recipe = recipe(&cases_id, &model, opts);
    let _running = store.lock_action(&recipe)?;
    if let Some(rec) = store.cached(&recipe, &[kinds::RESPONSES])? {
        return cached_report(store, &rec);
    }
    let t = &opts.template;
    let messages: Vec<Vec<ChatMessage>> = cases.iter().map(|c| t.render_case(c)).collect();
    let ids = session.request_ids((&t.id, t.version), &messages, &opts.settings);
    let pending = session.pending(&ids).len();
    let already = ids.iter().filter(|id| session.is_done(id)).count();
    tracing::info!(
        "generate: {} requests, {already} already answered, {pending} to run ({} {})",
        ids.len(),
        model.kind,
        model.name
    );
    let started = Instant::now();
    let bar = progress_bar(pending as u64, opts.progress);
    let answers = session.run_all(&ids, &messages, &opts.settings, &mut || bar.inc(1))?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();

    let mut summary = GenerateSummary {
        requests: ids.len() as u64,
        cached: already as u64,
        ..Default::default()
    };
    let rows = response_rows(
        &cases,
        &ids,
        &messages,
        &answers,
        opts,
        &model,
        &mut summary,
    );
    let details = json!({
        "template": {"id": t.id, "version": t.version, "source": t.source, "study": t.study, "role": t.role, "variant": t.variant},
        "backend": model.kind, "model": model.name, "model_key": model.key,
        "settings": opts.settings, "requests": summary.requests, "failed": summary.failed,
    });
    let written = write_all::<Responses>(store, &recipe, rows, details)?;
    if summary.failed == 0 {
        store.record_action(&recipe, std::slice::from_ref(&written))?;
    } else {
        tracing::warn!("generate: {} request(s) failed after retries; they are rows with their error, and the next run retries them", summary.failed);
    }
    let rate = if elapsed > 0.0 {
        summary.new as f64 / elapsed
    } else {
        0.0
    };
    store.log_run(json!({"stage": "generate", "responses": written.id, "backend": model.kind, "model": model.name,
        "base_urls": match &opts.backend { BackendSpec::OpenAi(c) => json!(c.base_urls), _ => serde_json::Value::Null },
        "new": summary.new, "cached": summary.cached, "failed": summary.failed, "seconds": elapsed,
        "requests_per_second": rate}));
    tracing::info!(
        "generate: {} new in {elapsed:.1}s ({rate:.1} requests/s)",
        summary.new
    );
    Ok(GenerateReport {
        responses: written,
        summary,
        cached: false,
    })
}

/// One `responses` row per case, in case order, with its request, the
/// rendered messages and the answer (or the error); counts new, failed and
/// token totals into `summary`.
fn response_rows(
    cases: &[CaseRow],
    ids: &[String],
    messages: &[Vec<ChatMessage>],
    answers: &[ragprobe_models::llm::session::Answer],
    opts: &GenerateOptions,
    model: &BackendId,
    summary: &mut GenerateSummary,
) -> Vec<ResponseRow> {
    let t = &opts.template;
    let settings_json =
        canonical_json(&serde_json::to_value(&opts.settings).expect("settings serialise"));
    let mut rows = Vec::with_capacity(ids.len());
    for (((c, id), msgs), answer) in cases.iter().zip(ids).zip(messages).zip(answers) {
        let g: Option<&Generation> = answer.entry.generation.as_ref();
        match g {
            None => summary.failed += 1,
            Some(g) => {
                summary.new += answer.fresh as u64;
                let (p, c) = (
                    g.prompt_tokens.unwrap_or(0) as u64,
                    g.completion_tokens.unwrap_or(0) as u64,
                );
                summary.prompt_tokens += p;
                summary.completion_tokens += c;
                if answer.fresh {
                    summary.new_prompt_tokens += p;
                    summary.new_completion_tokens += c;
                }
            }
        }
        rows.push(response_row(
            (&c.case_id, &c.qid, &c.condition),
            id,
            t,
            model,
            msgs,
            &settings_json,
            answer,
        ));
    }
    rows
}

/// One `responses` row: the request `id` of template `t` to `model` for
/// the case `(case_id, qid, condition)`, its messages and settings, and
/// its answer (or the error).
pub(crate) fn response_row(
    (case_id, qid, condition): (&str, &str, &str),
    id: &str,
    t: &Template,
    model: &BackendId,
    msgs: &[ChatMessage],
    settings_json: &str,
    answer: &ragprobe_models::llm::session::Answer,
) -> ResponseRow {
    let g = answer.entry.generation.as_ref();
    ResponseRow {
        request_id: id.to_string(),
        case_id: case_id.to_string(),
        qid: qid.to_string(),
        condition: condition.to_string(),
        template: t.id.clone(),
        template_version: t.version,
        backend: model.kind.into(),
        model: model.name.clone(),
        messages: serde_json::to_string(msgs).expect("messages serialise"),
        settings: settings_json.to_string(),
        text: g.map(|g| g.text.clone()),
        finish_reason: g.map(|g| g.finish_reason.clone()),
        prompt_tokens: g.and_then(|g| g.prompt_tokens),
        completion_tokens: g.and_then(|g| g.completion_tokens),
        token_ids: g.and_then(|g| g.token_ids.clone()),
        attempts: answer.entry.attempts,
        error: answer.entry.error.clone(),
    }
}

/// The cases to answer: resolved, filtered by condition, passages cut to
/// the token budget.
fn load_cases(
    store: &Store,
    cases: &str,
    opts: &GenerateOptions,
) -> Result<(String, Vec<CaseRow>)> {
    let cases_id = store.resolve_kind(cases, kinds::CASES)?;
    let mut cases = read::<Cases>(store, &cases_id)?;
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
    Ok((cases_id, cases))
}

/// The stage's recipe: template, settings, backend, conditions, truncation.
fn recipe(cases_id: &str, model: &BackendId, opts: &GenerateOptions) -> Recipe {
    let t = &opts.template;
    let mut recipe = Recipe::new(
        "generate",
        STAGE_VERSION,
        json!({"template": {"id": t.id, "version": t.version, "study": t.study, "role": t.role, "variant": t.variant}, "settings": opts.settings, "backend": model.kind, "conditions": opts.conditions}),
    );
    recipe.inputs = vec![cases_id.to_string()];
    recipe
        .resources
        .insert("model".into(), format!("{}:{}", model.kind, model.key));
    if let Some(t) = &opts.truncate {
        if let Some(p) = recipe.params.as_object_mut() {
            p.insert("max_passage_tokens".into(), json!(t.max_tokens()));
        }
        recipe.resources.insert(
            "passage_tokenizer".into(),
            format!("sha256:{}", t.tokenizer_sha256()),
        );
    }
    recipe
}

/// The report of a stage that was a cache hit.
fn cached_report(store: &Store, rec: &ragprobe_artifact::ActionRecord) -> Result<GenerateReport> {
    tracing::info!(
        "generate: cached, not run (action {}); every request already answered",
        &rec.key[..12]
    );
    let responses = rec.output(kinds::RESPONSES)?;
    let m = store.manifest(&responses.id)?;
    Ok(GenerateReport {
        responses,
        summary: GenerateSummary {
            requests: m.rows,
            cached: m.rows,
            ..Default::default()
        },
        cached: true,
    })
}
