//! Pipelines: a pipeline file is a DAG of named steps, each a stage
//! invocation with parameters; inputs refer to earlier steps' outputs as
//! `@step.kind` (or `@step` for its first output).
//!
//! ```toml
//! [vars]
//! fixtures = "fixtures"            # {{fixtures}} in any string; --set fixtures=... overrides
//! langs = ["en", "de"]             # a list variable; --set langs=en,fr overrides
//!
//! [defaults.generate]              # every generate step takes these unless it sets them
//! max-tokens = 16
//!
//! [steps.nq]
//! stage = "ingest"
//! format = "dpr"
//! paths = ["{{fixtures}}/nq-mini.jsonl"]
//!
//! [steps.cases]
//! stage = "perturb"
//! questions = "@nq.questions"
//! contexts = "@nq.contexts"
//! scenario = ["base", "add-random"]
//! ```
//!
//! An ingest step may read a dataset by name: with `fetch = "nomiracl"`
//! (and `part = ["{{langs}}"]`) its `paths` are read when they all exist
//! (local files win) and otherwise the dataset is downloaded, verified and
//! read from the store's data directory; such paths are not required
//! inputs, and the step keys on the dataset's pinned sources.
//!
//! A list variable expands a list item that uses it into one item per
//! value (`paths = ["{{data}}/{{langs}}.jsonl"]` reads one file per
//! language); in a single value it becomes the comma-separated list. An
//! input path that does not exist names the variables to set.
//!
//! A step's parameters are the stage command's flags (`max-tokens = 16` is
//! `--max-tokens 16`; `true` is a bare flag; a list repeats the flag;
//! `paths` are the positional arguments), so everything the CLI can do a
//! pipeline can do. The whole pipeline is validated before anything runs:
//! unknown stage, unknown variable, reference to a missing step, a cycle, or
//! a parameter the stage does not accept are errors with the line.
//!
//! Every step is cached: its key is the SHA-256 of its command line
//! (input artifact ids resolved), the content of the files it reads and the
//! fingerprints of the models it may load; a step whose key has a record
//! with all outputs present is skipped. The stages cache too, and the
//! generation journal makes an interrupted step resume without redoing
//! finished calls.
//!
//! The crate knows no stage: a [`StepExecutor`] (the CLI) checks and runs
//! steps and declares what each reads.

mod cache;
mod exec;
mod parse;
mod plan;
mod vars;

pub use exec::{PlanState, PlannedStep, RunOptions, RunSummary};
pub use parse::{Step, GLOBAL_FLAGS, POSITIONAL};
pub use plan::Pipeline;
pub use vars::{VarValue, Vars};

use std::path::{Path, PathBuf};

/// Errors of pipeline files and runs. Each names the file and line, or the
/// step.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A problem with the file, its variables or its plan; the message
    /// starts with `file:line`.
    #[error("{0}")]
    Invalid(String),
    /// A step's stage failed.
    #[error("step `{step}` ({stage}) failed: {message}")]
    Step {
        /// The step's name.
        step: String,
        /// The stage it runs.
        stage: String,
        /// The stage's error message.
        message: String,
    },
    /// Reading a file failed.
    #[error("{path}: {error}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying I/O error.
        error: std::io::Error,
    },
}

impl PipelineError {
    pub(crate) fn msg(m: String) -> Self {
        PipelineError::Invalid(m)
    }

    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        PipelineError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// Result of pipeline parsing and runs, failing with [`PipelineError`] by default.
pub type Result<T, E = PipelineError> = std::result::Result<T, E>;

/// What a step reads, as its stage declares it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepInputs {
    /// Arguments naming files or directories it reads: hashed into its key.
    pub files: Vec<String>,
    /// Model files it may load: fingerprinted into its key.
    pub models: Vec<PathBuf>,
    /// It loads a model in-process, so it runs alone.
    pub exclusive: bool,
    /// Versions of the in-process engines it runs models with: their
    /// arithmetic decides its outputs, so a new engine is a new key.
    pub engines: Vec<String>,
    /// Inputs named rather than read from disk (a dataset fetched by name:
    /// its pinned sources, revisions and hashes), keyed as given.
    pub sources: Vec<String>,
}

/// What a finished step wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepOutcome {
    /// (kind, id) of each artifact written.
    pub outputs: Vec<(String, String)>,
    /// Model requests: (new, cached, failed).
    pub requests: Option<(u64, u64, u64)>,
    /// Tokens of the new requests, as the model reported them: (prompt,
    /// completion).
    pub tokens: Option<(u64, u64)>,
    /// The stage found its own action record and computed nothing (a
    /// store pulled from a remote has those, but not this machine's step
    /// records): counted as cached.
    pub cached: bool,
}

/// Why a step could not be checked or run.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The step's arguments are not ones its stage accepts: the reason, on
    /// one line (the pipeline adds the file, line and step).
    #[error("{0}")]
    Invalid(String),
    /// The stage ran and failed; the error with its causes.
    #[error("{}", ragprobe_artifact::error_chain(.0.as_ref()))]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// The stages behind a pipeline. `argv` is `[stage, args...]`, the step's
/// parameters as the stage's command-line flags.
///
/// The pipeline calls [`check`](Self::check) on every step before anything
/// runs, [`inputs`](Self::inputs) to key a step (and to decide whether it
/// runs alone), and [`run`](Self::run) only for a step whose key has no
/// cached outputs, after every step it refers to has run. Steps the
/// pipeline finds independent run on several threads at once, hence
/// `Sync`; steps whose inputs say `exclusive` never overlap each other.
pub trait StepExecutor: Sync {
    /// The stage names a step may use. Must not change between calls.
    fn stages(&self) -> &[&str];
    /// Checks a step's arguments without running it or touching the store
    /// or the network: `Ok` means the stage accepts them, so a later
    /// [`run`](Self::run) can fail only for what running finds (missing
    /// files, a server, the data). `@step` references are given as a
    /// placeholder id.
    fn check(&self, argv: &[String]) -> Result<(), StepError>;
    /// Everything outside the store a step reads — files (hashed into its
    /// key), model files (fingerprinted), engine versions, named sources —
    /// and whether it must run alone. Must be deterministic for the same
    /// `argv` and files, and cheap: it is called for every step on every
    /// plan. A step whose inputs cannot be listed declares none (its run
    /// will fail with the stage's own error).
    fn inputs(&self, argv: &[String]) -> StepInputs;
    /// Runs a step. On success every output it lists is in the store
    /// (the pipeline records them as the step's cached result); the same
    /// `argv` and inputs must give the same outputs. On failure nothing it
    /// half-wrote may be visible in the store.
    fn run(&self, argv: &[String]) -> Result<StepOutcome, StepError>;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A stage `a` that accepts any flag but `--reject`, fails on `--fail`,
    /// and writes one `out` artifact whose id is a hash of its arguments.
    #[derive(Default)]
    pub struct Fake {
        pub calls: Mutex<Vec<Vec<String>>>,
    }

    impl Fake {
        pub fn id_for(&self, argv: &[String]) -> String {
            ragprobe_artifact::sha256_hex(argv.join(" ").as_bytes())
        }
    }

    impl StepExecutor for Fake {
        fn stages(&self) -> &[&str] {
            &["a", "b"]
        }
        fn check(&self, argv: &[String]) -> std::result::Result<(), StepError> {
            match argv.iter().find(|a| *a == "--reject") {
                Some(_) => Err(StepError::Invalid("unexpected argument '--reject'".into())),
                None => Ok(()),
            }
        }
        fn inputs(&self, _argv: &[String]) -> StepInputs {
            StepInputs::default()
        }
        fn run(&self, argv: &[String]) -> std::result::Result<StepOutcome, StepError> {
            if argv.iter().any(|a| a == "--fail") {
                return Err(StepError::Failed("asked to fail".into()));
            }
            self.calls.lock().unwrap().push(argv.to_vec());
            Ok(StepOutcome {
                outputs: vec![("out".into(), self.id_for(argv))],
                requests: None,
                tokens: None,
                cached: false,
            })
        }
    }
}
