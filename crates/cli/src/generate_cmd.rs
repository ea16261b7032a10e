use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ragprobe_artifact::Store;
use ragprobe_generate::{generate, BackendSpec, GenerateOptions, Template};
use ragprobe_models::llm::backend::BackendKind;
use ragprobe_models::llm::openai::{Endpoint, OpenAiConfig};
use ragprobe_models::llm::GenSettings;
use std::path::PathBuf;
use std::time::Duration;

/// Render every case with a prompt template and get the model's responses.
///
/// Finished requests are journaled as they arrive (`<store>/requests/`), so
/// an interrupted run resumes without redoing them; a run whose requests
/// all succeeded is cached as a whole.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The cases artifact.
    #[arg(long)]
    pub cases: String,
    /// Prompt template: a built-in id (see `ragprobe prompts ls`) or a .toml file.
    #[arg(long, short)]
    pub prompt: String,
    /// Directory of extra templates (`<dir>/<id>.toml` overrides a built-in).
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendKind::Local)]
    pub backend: BackendKind,
    /// Model: a .gguf path, `embedded`, or `hf:<owner>/<name>/<file>[@rev]` fetched
    /// through the Hugging Face hub protocol (local); the served model name (openai).
    #[arg(long)]
    pub model: Option<String>,
    /// OpenAI-compatible base URL; repeat for several replicas (requests go to the least busy).
    #[arg(long = "base-url", default_value = "http://127.0.0.1:8000/v1")]
    pub base_urls: Vec<String>,
    /// Name of the environment variable holding the API key (the key itself is never logged).
    #[arg(long)]
    pub api_key_env: Option<String>,
    #[arg(long, value_enum, default_value_t = Endpoint::Chat)]
    pub endpoint: Endpoint,
    /// Requests in flight at once (openai).
    #[arg(long, default_value_t = 16, value_parser = crate::bounds::usize_in(1, 4096))]
    pub concurrency: usize,
    /// Sequences the embedded model decodes together (local); 1 turns
    /// batching off. Outputs are identical for every value.
    #[arg(long, default_value_t = ragprobe_models::llm::backend::DEFAULT_BATCH, value_parser = crate::bounds::usize_in(1, 256))]
    pub batch: usize,
    /// Per-request timeout in seconds (openai).
    #[arg(long, default_value_t = 120.0, value_parser = crate::bounds::f64_in(0.0, 86_400.0, true))]
    pub timeout: f64,
    /// Attempts per request before it is recorded as failed (openai).
    #[arg(long, default_value_t = 6)]
    pub max_attempts: u32,
    /// First retry backoff in milliseconds; doubles per attempt, with full jitter (openai).
    #[arg(long, default_value_t = 500)]
    pub retry_base_ms: u64,
    /// Requests-per-minute limit (openai).
    #[arg(long)]
    pub rpm: Option<u32>,
    /// Maximum new tokens per response.
    #[arg(long, default_value_t = ragprobe_models::llm::DEFAULT_MAX_TOKENS)]
    pub max_tokens: u32,
    /// Cut every passage to this many tokens of the model's tokenizer before
    /// rendering, the title counting (NoMIRACL's `max_passage_tokens`, 380 in
    /// its reproduction script); 0 = no cut.
    #[arg(long, default_value_t = 0, value_parser = crate::bounds::usize_in(0, 1_000_000))]
    pub max_passage_tokens: usize,
    /// The tokenizer for --max-passage-tokens: a tokenizer.json or a .gguf
    /// [default: the embedded model's GGUF with --backend local].
    #[arg(long)]
    pub passage_tokenizer: Option<PathBuf>,
    /// Nucleus sampling top_p sent to an OpenAI-compatible server (the NoMIRACL reference uses 0.95).
    #[arg(long, value_parser = crate::bounds::f32_in(0.0, 1.0, true))]
    pub top_p: Option<f32>,
    /// Sampling temperature (0 = greedy; the embedded backend is always greedy).
    #[arg(long, default_value_t = 0.0, value_parser = crate::bounds::f32_in(0.0, 10.0, false))]
    pub temperature: f32,
    /// Stop string; repeatable.
    #[arg(long)]
    pub stop: Vec<String>,
    /// Sampling seed sent to the server (openai).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only cases of these conditions (repeat or comma-separate; default: all).
    #[arg(long, value_delimiter = ',')]
    pub condition: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum PromptsCmd {
    /// List the prompt templates: id, version, study, role (which metric
    /// families score it), variant, verbatim, source.
    Ls {
        #[arg(long)]
        prompts_dir: Option<PathBuf>,
    },
    /// Show a template, or the messages it renders for one case.
    Show {
        /// Template id or .toml path.
        prompt: String,
        /// A cases artifact: render the template for one of its cases.
        #[arg(long)]
        cases: Option<String>,
        /// Which case (case_id prefix, or row index) [default: the first].
        #[arg(long)]
        case: Option<String>,
        #[arg(long)]
        prompts_dir: Option<PathBuf>,
    },
}

/// The GGUF file a local-backend generate loads: `--model` when it is a
/// `.gguf` path, the embedded model for `embedded`/`default`/none; None
/// for another backend or another `--model`.
pub fn local_gguf(a: &GenerateArgs) -> Option<PathBuf> {
    if a.backend != BackendKind::Local {
        return None;
    }
    match a.model.as_deref() {
        // By name: only what the hub cache holds (planning never downloads).
        Some(m) if m.starts_with("hf:") => {
            let mut opts = ragprobe_data::DataOptions::from_env(std::path::Path::new("."));
            opts.offline = true;
            ragprobe_data::model_file(m, &opts).ok()
        }
        m => named_gguf(m),
    }
}

/// A `.gguf` path, or the embedded model for `embedded`, `default` or no
/// name; None for another name.
fn named_gguf(model: Option<&str>) -> Option<PathBuf> {
    match model {
        Some(m) if m.ends_with(".gguf") => Some(PathBuf::from(m)),
        Some("embedded" | "default") | None => Some(ragprobe_models::paths::smollm2_gguf()),
        Some(_) => None,
    }
}

/// The GGUF file a local model name gives (`generate --model`, `score
/// --judge`): `hf:<owner>/<name>/<file>[@rev]` fetched into the hub cache
/// (the file's hash, not its name, keys the cache as for any model), a
/// `.gguf` path, or the embedded model; None for another name.
pub fn local_model_file(store: &Store, model: Option<&str>) -> Result<Option<PathBuf>> {
    match model {
        Some(m) if m.starts_with("hf:") => {
            let mut opts = ragprobe_data::DataOptions::from_env(store.root());
            opts.progress = true;
            Ok(Some(ragprobe_data::model_file(m, &opts)?))
        }
        m => Ok(named_gguf(m)),
    }
}

/// The backend `--backend` and its flags name (a local model fetched by
/// name into the hub cache first).
fn backend(store: &Store, a: &GenerateArgs) -> Result<BackendSpec> {
    Ok(match a.backend {
        BackendKind::Local => BackendSpec::Local {
            gguf: local_model_file(store, a.model.as_deref())?.with_context(|| {
                format!(
                    "--model for the local backend must be a .gguf file, `embedded` or hf:<owner>/<name>/<file>[@rev], got `{}`",
                    a.model.as_deref().unwrap_or_default()
                )
            })?,
            batch: a.batch,
        },
        BackendKind::Openai => BackendSpec::OpenAi(OpenAiConfig {
            base_urls: a.base_urls.clone(),
            model: a
                .model
                .clone()
                .context("--backend openai needs --model (the served model name)")?,
            api_key_env: a.api_key_env.clone(),
            endpoint: a.endpoint,
            concurrency: a.concurrency,
            timeout: Duration::from_secs_f64(a.timeout),
            max_attempts: a.max_attempts,
            retry_base: Duration::from_millis(a.retry_base_ms),
            retry_max: Duration::from_secs(30),
            requests_per_minute: a.rpm,
        }),
    })
}

/// The generate options `a` asks for (the template loaded, the backend
/// resolved, passages' tokenizer opened).
fn options(store: &Store, a: &GenerateArgs) -> Result<GenerateOptions> {
    let template = template(&a.prompt, a.prompts_dir.as_deref())?;
    let backend = backend(store, a)?;
    let settings = GenSettings {
        max_tokens: a.max_tokens,
        temperature: a.temperature,
        stop: a.stop.clone(),
        seed: a.seed,
        top_p: a.top_p,
    };
    let truncate = match a.max_passage_tokens {
        0 => None,
        n => {
            let tok = match (a.passage_tokenizer.as_deref(), &backend) {
                (Some(p), _) if p.as_os_str() != "none" => p.to_path_buf(),
                (_, BackendSpec::Local { gguf, .. }) => gguf.clone(),
                _ => anyhow::bail!("--max-passage-tokens with an OpenAI-compatible backend needs --passage-tokenizer (the served model's tokenizer.json)"),
            };
            Some(ragprobe_models::truncate::PassageTruncator::from_file(
                &tok, n,
            )?)
        }
    };
    Ok(GenerateOptions {
        template,
        backend,
        settings,
        conditions: a.condition.clone(),
        progress: true,
        truncate,
    })
}

/// What `a` would send (`run --dry-run`): prompt tokens counted with
/// `tokenizer` when given, else the embedded model's when it is the
/// backend, else approximately.
pub fn estimate(
    store: &Store,
    a: &GenerateArgs,
    tokenizer: Option<&std::path::Path>,
) -> Result<ragprobe_generate::Estimate> {
    use ragprobe_models::tokens::TokenCounter;
    let opts = options(store, a)?;
    let counter = match (tokenizer, &opts.backend) {
        (Some(t), _) => TokenCounter::from_file(t)?,
        (None, BackendSpec::Local { gguf, .. }) => TokenCounter::embedded(gguf)?,
        (None, _) => TokenCounter::Approx,
    };
    Ok(ragprobe_generate::estimate(
        store, &a.cases, &opts, &counter,
    )?)
}

pub fn run(store: &Store, a: GenerateArgs) -> Result<crate::StageOut> {
    let r = generate(store, &a.cases, &options(store, &a)?)?;
    let s = &r.summary;
    eprintln!(
        "requests: {} ({} cached, {} new, {} failed); tokens: {} prompt, {} completion",
        s.requests, s.cached, s.new, s.failed, s.prompt_tokens, s.completion_tokens
    );
    let mut out = crate::StageOut::new(
        [(r.responses.kind.as_str(), r.responses.id.as_str())],
        r.cached,
    );
    out.requests = Some((s.new, s.cached, s.failed));
    out.tokens = Some((s.new_prompt_tokens, s.new_completion_tokens));
    if s.failed > 0 {
        out.error = Some(format!(
            "{} request(s) failed after retries (rows kept with their error; rerun to retry them)",
            s.failed
        ));
    }
    Ok(out)
}

pub fn prompts(store: &Store, cmd: PromptsCmd) -> Result<()> {
    match cmd {
        PromptsCmd::Ls { prompts_dir } => prompts_ls(prompts_dir.as_deref()),
        PromptsCmd::Show {
            prompt,
            cases,
            case,
            prompts_dir,
        } => prompts_show(store, &prompt, cases, case, prompts_dir.as_deref()),
    }
}

/// A template by id or path, the studies' own among the built-in ones.
fn template(spec: &str, dir: Option<&std::path::Path>) -> Result<Template> {
    Ok(Template::load(
        spec,
        dir,
        &ragprobe_studies::prompt_catalog(),
    )?)
}

/// `prompts ls`: every built-in template (the studies' included), and those
/// of `prompts_dir` in their place.
fn prompts_ls(prompts_dir: Option<&std::path::Path>) -> Result<()> {
    let mut all = Template::all(&ragprobe_studies::prompt_catalog());
    if let Some(d) = prompts_dir {
        for e in std::fs::read_dir(d).with_context(|| d.display().to_string())? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "toml") {
                let t = template(&p.display().to_string(), None)?;
                all.retain(|x| x.id != t.id);
                all.push(t);
            }
        }
    }
    all.sort_by(|a, b| a.id.cmp(&b.id));
    println!(
        "{:<28} {:>3}  {:<9} {:<12} {:<14} {:<9} source",
        "id", "v", "study", "role", "variant", "verbatim"
    );
    for t in all {
        println!(
            "{:<28} {:>3}  {:<9} {:<12} {:<14} {:<9} {}",
            t.id,
            t.version,
            t.study,
            t.role,
            t.variant,
            if t.verbatim { "yes" } else { "no" },
            t.source
        );
    }
    Ok(())
}

/// `prompts show`: a template's messages, rendered for a case of `cases`
/// when given (`case`: an index or a case-id prefix; default the first).
fn prompts_show(
    store: &Store,
    prompt: &str,
    cases: Option<String>,
    case: Option<String>,
    prompts_dir: Option<&std::path::Path>,
) -> Result<()> {
    let t = template(prompt, prompts_dir)?;
    println!(
        "# {} v{} — {}\n# source: {}\n",
        t.id, t.version, t.description, t.source
    );
    let messages = match cases {
        Some(c) => {
            let id = store.resolve_kind(&c, ragprobe_artifact::kinds::CASES)?;
            let all = ragprobe_artifact::read::<ragprobe_artifact::Cases>(store, &id)?;
            let pick = match case.as_deref() {
                None => all.first(),
                Some(s) => match s.parse::<usize>() {
                    Ok(i) => all.get(i),
                    Err(_) => all.iter().find(|x| x.case_id.starts_with(s)),
                },
            };
            let row = pick.context("no such case")?;
            println!(
                "# case {} ({}, qid {})\n",
                row.case_id, row.condition, row.qid
            );
            t.render_case(row)
        }
        None => t
            .messages
            .iter()
            .map(|m| ragprobe_models::llm::ChatMessage::new(&m.role, m.content.clone()))
            .collect(),
    };
    for m in messages {
        println!("----- {} -----\n{}\n", m.role, m.content);
    }
    Ok(())
}
