//! `ragprobe run PIPELINE.toml`: a pipeline is a DAG of named steps, each a
//! stage invocation with parameters; inputs refer to earlier steps'
//! outputs as `@step.kind` (or `@step` for its first output).
//!
//! ```toml
//! [vars]
//! fixtures = "fixtures"            # {{fixtures}} in any string; --set fixtures=... overrides
//! langs = ["en", "de"]             # a list variable; --set langs=en,fr overrides
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
//! A list variable expands a list item that uses it into one item per
//! value (`paths = ["{{data}}/{{langs}}.jsonl"]` reads one file per
//! language); in a single value it becomes the comma-separated list. An
//! ingest input that does not exist names the variables to set.
//!
//! A step's parameters are the stage command's flags (`max-tokens = 16` is
//! `--max-tokens 16`; `true` is a bare flag; a list repeats the flag;
//! `paths` are the positional arguments), so everything the CLI can do a
//! pipeline can do. The whole pipeline is validated before anything runs:
//! unknown stage, unknown variable, reference to a missing step, a cycle, or
//! a parameter the stage does not accept are errors with the line.
//!
//! Every step is cached: its key is the SHA-256 of the stage, its resolved
//! arguments (input artifact ids), the content of the files it reads and the
//! fingerprint of the model files; a step whose key has a record with all
//! outputs present is skipped. The stages cache too, and the generation
//! journal makes an interrupted step resume without redoing finished calls.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser};
use indicatif::{ProgressBar, ProgressStyle};
use ragprobe_artifact::{sha256_hex, Store};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{dispatch, Cli, StageOut};

/// Stages a step may run.
const STAGES: &[&str] = &[
    "ingest", "retrieve", "recall", "perturb", "generate", "score", "report",
];
/// Parameters that are positional arguments rather than flags.
const POSITIONAL: &[&str] = &["paths"];
/// The CLI's global flags: valid on the command line, never in a step.
const GLOBAL_FLAGS: &[&str] = &["store", "verbose", "quiet"];
/// A stand-in artifact id used to validate arguments before anything runs.
const PLACEHOLDER_ID: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Run a pipeline file.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pipeline file (TOML).
    pub pipeline: PathBuf,
    /// Set a variable: --set model=Qwen/Qwen2.5-7B-Instruct --set base_url=http://gpu1:8000/v1
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Print the plan, each step marked cached or to-run, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run only this step (its inputs must already be cached).
    #[arg(long, conflicts_with = "from")]
    pub only: Option<String>,
    /// Run this step and everything after it again, ignoring their step cache.
    #[arg(long)]
    pub from: Option<String>,
    /// Steps to run at once when they are independent (model-heavy local steps still run one at a time).
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
}

/// One parsed step.
#[derive(Debug, Clone)]
struct Step {
    name: String,
    stage: String,
    line: usize,
    /// (flag, values) in file order; values may contain `@refs`.
    params: Vec<(String, Vec<String>)>,
    deps: BTreeSet<String>,
}

/// A parsed, validated pipeline.
#[derive(Debug)]
pub struct Pipeline {
    path: PathBuf,
    steps: BTreeMap<String, Step>,
    order: Vec<String>,
    /// Every ingest input path, with the template and variables it came from.
    inputs: Vec<InputPath>,
}

/// An ingest input of the pipeline and where its value came from.
#[derive(Debug, Clone)]
struct InputPath {
    at: String,
    path: PathBuf,
    template: String,
    vars: Vec<String>,
}

impl Pipeline {
    /// Every ingest input must exist; a missing one names the variables
    /// that made its path, so a user with one language knows what to set.
    pub fn check_inputs(&self) -> Result<()> {
        for i in &self.inputs {
            if !i.path.exists() {
                let hint = if i.vars.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (from {:?}: set {})",
                        i.template,
                        i.vars
                            .iter()
                            .map(|v| format!("--set {v}=..."))
                            .collect::<Vec<_>>()
                            .join(" or ")
                    )
                };
                bail!("{}: input {} does not exist{hint}", i.at, i.path.display());
            }
        }
        Ok(())
    }
}

fn line_of(text: &str, needle: impl Fn(&str) -> bool) -> usize {
    text.lines()
        .position(|l| needle(l.trim()))
        .map(|i| i + 1)
        .unwrap_or(0)
}

fn step_line(text: &str, name: &str) -> usize {
    line_of(text, |l| {
        l == format!("[steps.{name}]") || l == format!("[steps.\"{name}\"]")
    })
}

/// The line of `key` in the `[vars]` table.
fn var_line(text: &str, key: &str) -> usize {
    line_in_table(text, line_of(text, |l| l == "[vars]"), key)
}

fn key_line(text: &str, step: &str, key: &str) -> usize {
    line_in_table(text, step_line(text, step), key)
}

/// The line of `key` in the table whose header is on line `start` (or
/// `start` when the key is not found there).
fn line_in_table(text: &str, start: usize, key: &str) -> usize {
    for (i, l) in text.lines().enumerate().skip(start) {
        let t = l.trim();
        if t.starts_with('[') {
            break;
        }
        if t.split('=').next().is_some_and(|k| k.trim() == key) {
            return i + 1;
        }
    }
    start
}

/// Pipeline variables: scalars, and lists (declared as TOML arrays).
type Vars = BTreeMap<String, VarValue>;

#[derive(Debug, Clone)]
enum VarValue {
    One(String),
    List(Vec<String>),
}

/// The `{{name}}`s a string uses.
fn var_names(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else { break };
        out.push(after[..j].trim());
        rest = &after[j + 2..];
    }
    out
}

/// Fill the variables of `s`; a list variable becomes its comma-separated values.
fn fill_vars(s: &str, vars: &Vars, at: &str) -> Result<String> {
    fill_with(s, vars, at, None)
}

fn fill_with(s: &str, vars: &Vars, at: &str, item: Option<(&str, &str)>) -> Result<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let j = after
            .find("}}")
            .ok_or_else(|| anyhow!("{at}: unclosed `{{{{` in {s:?}"))?;
        let name = after[..j].trim();
        match (item, vars.get(name)) {
            (Some((n, v)), _) if n == name => out.push_str(v),
            (_, Some(VarValue::One(v))) => out.push_str(v),
            (_, Some(VarValue::List(l))) => out.push_str(&l.join(",")),
            (_, None) => bail!(
                "{at}: unknown variable `{name}` (define it under [vars] or pass --set {name}=...)"
            ),
        }
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Fill one list item: an item that uses a list variable becomes one item
/// per value (at most one list variable per item).
fn fill_item(s: &str, vars: &Vars, at: &str) -> Result<Vec<String>> {
    let lists: BTreeSet<&str> = var_names(s)
        .into_iter()
        .filter(|n| matches!(vars.get(*n), Some(VarValue::List(_))))
        .collect();
    match lists.len() {
        0 => Ok(vec![fill_vars(s, vars, at)?]),
        1 => {
            let name = *lists.iter().next().expect("one");
            let Some(VarValue::List(values)) = vars.get(name) else {
                unreachable!("checked")
            };
            values
                .iter()
                .map(|v| fill_with(s, vars, at, Some((name, v))))
                .collect()
        }
        _ => bail!(
            "{at}: {s:?} uses more than one list variable ({}); use one per item",
            lists.into_iter().collect::<Vec<_>>().join(", ")
        ),
    }
}

fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Pipeline {
    /// Parse and validate a pipeline file with variable overrides.
    pub fn load(path: &Path, sets: &[String]) -> Result<Pipeline> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| format!("{file}: cannot read"))?;
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|s| text[..s.start].lines().count().max(1))
                .unwrap_or(0);
            anyhow!("{file}:{line}: not valid TOML: {}", e.message())
        })?;
        let mut vars: Vars = BTreeMap::new();
        if let Some(t) = doc.get("vars").and_then(|v| v.as_table()) {
            for (k, v) in t {
                let bad = || {
                    anyhow!("{file}:{}: variable `{k}` must be a string, number, boolean or a list of them", var_line(&text, k))
                };
                let value = match v {
                    toml::Value::Array(a) => VarValue::List(
                        a.iter()
                            .map(|x| scalar(x).ok_or_else(bad))
                            .collect::<Result<_>>()?,
                    ),
                    other => VarValue::One(scalar(other).ok_or_else(bad)?),
                };
                vars.insert(k.clone(), value);
            }
        }
        let sets_given = sets;
        for s in sets_given {
            let (k, v) = s
                .split_once('=')
                .ok_or_else(|| anyhow!("--set {s}: expected NAME=VALUE"))?;
            let k = k.trim().to_string();
            let value = match vars.get(&k) {
                Some(VarValue::List(_)) => VarValue::List(
                    v.split(',')
                        .map(|x| x.trim().to_string())
                        .filter(|x| !x.is_empty())
                        .collect(),
                ),
                _ => VarValue::One(v.to_string()),
            };
            vars.insert(k, value);
        }
        // A variable's value may use other variables (`writer_model = "{{model}}"`).
        for _ in 0..8 {
            let snapshot = vars.clone();
            let mut changed = false;
            for (k, v) in vars.iter_mut() {
                if let VarValue::One(s) = v {
                    if s.contains("{{") {
                        let filled = fill_vars(
                            s,
                            &snapshot,
                            &format!("{file}:{}: variable `{k}`", var_line(&text, k)),
                        )?;
                        changed |= filled != *s;
                        *s = filled;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let steps_t = doc
            .get("steps")
            .and_then(|v| v.as_table())
            .ok_or_else(|| anyhow!("{file}: no [steps.*] tables"))?;
        let mut steps = BTreeMap::new();
        let mut inputs = Vec::new();
        for (name, v) in steps_t {
            let line = step_line(&text, name);
            let at = format!("{file}:{line}: step `{name}`");
            let t = v
                .as_table()
                .ok_or_else(|| anyhow!("{at}: must be a table"))?;
            let stage = t
                .get("stage")
                .and_then(|s| s.as_str())
                .ok_or_else(|| anyhow!("{at}: missing `stage`"))?;
            if !STAGES.contains(&stage) {
                bail!(
                    "{at}: unknown stage `{stage}` (known: {})",
                    STAGES.join(", ")
                );
            }
            let mut params = Vec::new();
            let mut deps = BTreeSet::new();
            for (k, val) in t {
                if k == "stage" {
                    continue;
                }
                if GLOBAL_FLAGS.contains(&k.as_str()) {
                    bail!("{file}:{}: step `{name}`: `{k}` is not a step parameter (it belongs to the whole run: `ragprobe --{k} ... run`)", key_line(&text, name, k));
                }
                let kat = format!("{file}:{}: step `{name}`, `{k}`", key_line(&text, name, k));
                if k == "after" {
                    for d in val
                        .as_array()
                        .ok_or_else(|| anyhow!("{kat}: must be a list of step names"))?
                    {
                        deps.insert(
                            d.as_str()
                                .ok_or_else(|| anyhow!("{kat}: must be a list of step names"))?
                                .to_string(),
                        );
                    }
                    continue;
                }
                let raw: Vec<String> = match val {
                    toml::Value::Array(a) => a
                        .iter()
                        .map(|x| {
                            scalar(x).ok_or_else(|| {
                                anyhow!("{kat}: list items must be strings or numbers")
                            })
                        })
                        .collect::<Result<_>>()?,
                    other => vec![scalar(other).ok_or_else(|| {
                        anyhow!("{kat}: must be a string, number, boolean or a list of them")
                    })?],
                };
                let mut values = Vec::new();
                let is_list = matches!(val, toml::Value::Array(_));
                for r in raw {
                    let items = if is_list {
                        fill_item(&r, &vars, &kat)?
                    } else {
                        vec![fill_vars(&r, &vars, &kat)?]
                    };
                    for filled in items {
                        if let Some(reference) = filled.strip_prefix('@') {
                            let dep = reference.split('.').next().unwrap_or("").to_string();
                            if !steps_t.contains_key(&dep) {
                                bail!(
                                    "{kat}: refers to `@{reference}`, but there is no step `{dep}`"
                                );
                            }
                            deps.insert(dep);
                        }
                        if stage == "ingest" && k == "paths" {
                            inputs.push(InputPath {
                                at: kat.clone(),
                                path: PathBuf::from(&filled),
                                template: r.clone(),
                                vars: var_names(&r).into_iter().map(String::from).collect(),
                            });
                        }
                        values.push(filled);
                    }
                }
                params.push((k.clone(), values));
            }
            for d in &deps {
                if !steps_t.contains_key(d) {
                    bail!("{at}: `after` names `{d}`, which is not a step");
                }
            }
            steps.insert(
                name.clone(),
                Step {
                    name: name.clone(),
                    stage: stage.to_string(),
                    line,
                    params,
                    deps,
                },
            );
        }
        // Topological order (Kahn), ties by name: deterministic.
        let mut order = Vec::new();
        let mut done: BTreeSet<String> = BTreeSet::new();
        while order.len() < steps.len() {
            let ready: Vec<String> = steps
                .values()
                .filter(|s| !done.contains(&s.name) && s.deps.iter().all(|d| done.contains(d)))
                .map(|s| s.name.clone())
                .collect();
            if ready.is_empty() {
                let stuck: Vec<&Step> =
                    steps.values().filter(|s| !done.contains(&s.name)).collect();
                let first = stuck[0];
                bail!(
                    "{file}:{}: the steps {} form a cycle",
                    first.line,
                    stuck
                        .iter()
                        .map(|s| format!("`{}`", s.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            for r in ready {
                done.insert(r.clone());
                order.push(r);
            }
        }
        let p = Pipeline {
            path: path.to_path_buf(),
            steps,
            order,
            inputs,
        };
        // Every step's arguments must parse, with stand-in ids for inputs.
        for s in p.steps.values() {
            let argv = p.argv(s, &|_| Ok(PLACEHOLDER_ID.to_string()))?;
            if let Err(e) = Cli::try_parse_from(&argv) {
                let msg = e.to_string();
                let first = msg
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                bail!(
                    "{file}:{}: step `{}`: bad parameter for stage `{}`: {first}",
                    s.line,
                    s.name,
                    s.stage
                );
            }
        }
        Ok(p)
    }

    /// The command line of a step, with `@refs` resolved by `resolve`.
    fn argv(&self, s: &Step, resolve: &dyn Fn(&str) -> Result<String>) -> Result<Vec<String>> {
        let mut argv = vec!["ragprobe".to_string(), s.stage.clone()];
        let mut positional = Vec::new();
        for (k, values) in &s.params {
            let resolved: Vec<String> = values
                .iter()
                .map(|v| {
                    if let Some(r) = v.strip_prefix('@') {
                        resolve(r)
                    } else {
                        Ok(v.clone())
                    }
                })
                .collect::<Result<_>>()?;
            if POSITIONAL.contains(&k.as_str()) {
                positional.extend(resolved);
                continue;
            }
            for v in resolved {
                match v.as_str() {
                    "true" => argv.push(format!("--{k}")),
                    "false" => {}
                    _ => {
                        argv.push(format!("--{k}"));
                        argv.push(v);
                    }
                }
            }
        }
        argv.extend(positional);
        Ok(argv)
    }
}

/// Outputs of finished steps: step -> [(kind, id)].
type Done = BTreeMap<String, Vec<(String, String)>>;

fn resolver<'a>(done: &'a Done) -> impl Fn(&str) -> Result<String> + 'a {
    move |r: &str| {
        let (step, kind) = r
            .split_once('.')
            .map(|(a, b)| (a, Some(b)))
            .unwrap_or((r, None));
        let outs = done
            .get(step)
            .ok_or_else(|| anyhow!("step `{step}` has not run"))?;
        match kind {
            Some(k) => outs
                .iter()
                .find(|(kk, _)| kk == k)
                .map(|(_, id)| id.clone())
                .ok_or_else(|| {
                    anyhow!(
                        "step `{step}` wrote no `{k}` artifact (it wrote {})",
                        outs.iter()
                            .map(|o| o.0.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }),
            None => outs
                .first()
                .map(|(_, id)| id.clone())
                .ok_or_else(|| anyhow!("step `{step}` wrote no artifact")),
        }
    }
}

/// The arguments of a step that name files it reads: ingest's positional
/// paths and `--evidence-dir`, generate's `--prompt` (when a file) and
/// `--prompts-dir`, `--passage-tokenizer` and a local `--model` file,
/// perturb's local `--writer-model`, score's `--predictions`. Only these
/// (when they are files or directories) are hashed into the
/// step key — never an argument that merely happens to name a path.
fn file_inputs<'a>(stage: &str, argv: &'a [String]) -> Vec<&'a String> {
    let flags: &[&str] = match stage {
        "ingest" => &["--evidence-dir"],
        "generate" => &[
            "--prompt",
            "--prompts-dir",
            "--passage-tokenizer",
            "--model",
        ],
        "perturb" => &["--writer-model"],
        "score" => &["--predictions"],
        _ => &[],
    };
    let mut out: Vec<&String> = argv
        .windows(2)
        .filter(|w| flags.contains(&w[0].as_str()))
        .map(|w| &w[1])
        .collect();
    if stage == "ingest" {
        // Positional paths: the arguments that are neither a flag nor a flag's value.
        let mut i = 2;
        while i < argv.len() {
            if argv[i].starts_with("--") {
                i += if i + 1 < argv.len() && !argv[i + 1].starts_with("--") {
                    2
                } else {
                    1
                };
            } else {
                out.push(&argv[i]);
                i += 1;
            }
        }
    }
    out
}

/// Content fingerprint of a step: its arguments, the files it reads
/// ([`file_inputs`]) and the default models it may use.
fn step_key(p: &Pipeline, argv: &[String]) -> Result<String> {
    let base = p.path.parent().unwrap_or(Path::new("."));
    let mut files = BTreeMap::new();
    for a in file_inputs(&argv[1], argv) {
        let path = Path::new(a);
        let path = if path.exists() {
            path.to_path_buf()
        } else {
            base.join(a)
        };
        if path.is_file() {
            files.insert(
                a.clone(),
                ragprobe_artifact::sha256_reader(std::fs::File::open(&path)?)?,
            );
        } else if path.is_dir() {
            let mut entries: Vec<PathBuf> = walk(&path);
            entries.sort();
            let mut h = String::new();
            for e in entries {
                h.push_str(&format!(
                    "{}={}\n",
                    e.strip_prefix(&path).unwrap_or(&e).display(),
                    ragprobe_artifact::sha256_reader(std::fs::File::open(&e)?)?
                ));
            }
            files.insert(a.clone(), sha256_hex(h.as_bytes()));
        }
    }
    let fp = |p: PathBuf| {
        std::fs::metadata(&p)
            .map(|m| format!("{}:{}:{:?}", p.display(), m.len(), m.modified().ok()))
            .unwrap_or_default()
    };
    let v = json!({
        "argv": &argv[1..], "files": files, "version": ragprobe_artifact::RAGPROBE_VERSION,
        "models": [fp(ragprobe_models::paths::smollm2_gguf()), fp(ragprobe_models::paths::minilm_dir().join("model.safetensors"))],
    });
    Ok(sha256_hex(ragprobe_artifact::canonical_json(&v).as_bytes()))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else if p.is_file() {
                // Regular files only: opening a FIFO or a device would block.
                out.push(p);
            }
        }
    }
    out
}

fn record_path(store: &Store, key: &str) -> PathBuf {
    store
        .root()
        .join("pipeline-steps")
        .join(format!("{key}.json"))
}

/// The cached outputs of a step key, if every output is still stored.
fn cached_step(store: &Store, key: &str) -> Option<Vec<(String, String)>> {
    let text = std::fs::read_to_string(record_path(store, key)).ok()?;
    let outs: Vec<(String, String)> = serde_json::from_str(&text).ok()?;
    outs.iter()
        .all(|(_, id)| store.object_path(id).is_file())
        .then_some(outs)
}

fn record_step(store: &Store, key: &str, outs: &[(String, String)]) -> Result<()> {
    let path = record_path(store, key);
    std::fs::create_dir_all(path.parent().expect("has parent"))?;
    let tmp = store.tmp_path(".step");
    std::fs::write(&tmp, serde_json::to_string(outs)?)?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

/// Steps that use the embedded model or the embedder run one at a time.
fn heavy(s: &Step) -> bool {
    let has = |k: &str, v: &str| {
        s.params
            .iter()
            .any(|(kk, vals)| kk == k && vals.iter().any(|x| x == v))
    };
    match s.stage.as_str() {
        "generate" => !has("backend", "openai"),
        "retrieve" => !s.params.iter().any(|(k, _)| k == "method") || !has("method", "bm25"),
        "perturb" => true,
        _ => false,
    }
}

struct Summary {
    ran: usize,
    cached: usize,
    requests: (u64, u64, u64),
}

pub fn run(store: &Store, a: RunArgs) -> Result<()> {
    let started = Instant::now();
    let p = Pipeline::load(&a.pipeline, &a.set)?;
    for name in a.only.iter().chain(a.from.iter()) {
        if !p.steps.contains_key(name) {
            bail!("no step `{name}` in {}", a.pipeline.display());
        }
    }
    // Steps forced to run again with --from: the step and everything after it.
    let mut forced: BTreeSet<String> = BTreeSet::new();
    if let Some(f) = &a.from {
        forced.insert(f.clone());
        for n in &p.order {
            if p.steps[n].deps.iter().any(|d| forced.contains(d)) {
                forced.insert(n.clone());
            }
        }
    }
    if let Err(e) = p.check_inputs() {
        if !a.dry_run {
            return Err(e);
        }
        eprintln!("warning: {e}");
    }
    let mut done: Done = BTreeMap::new();
    let mut summary = Summary {
        ran: 0,
        cached: 0,
        requests: (0, 0, 0),
    };
    if a.dry_run {
        println!(
            "plan for {} ({} steps):",
            a.pipeline.display(),
            p.order.len()
        );
        for n in &p.order {
            let s = &p.steps[n];
            let argv = p.argv(s, &resolver(&done));
            let state = match argv {
                Ok(argv) => match (
                    forced.contains(n),
                    cached_step(store, &step_key(&p, &argv)?),
                ) {
                    (false, Some(outs)) => {
                        done.insert(n.clone(), outs);
                        "cached".to_string()
                    }
                    _ => "to-run".to_string(),
                },
                Err(_) => "to-run (after its inputs)".to_string(),
            };
            println!("  {n:<28} {:<9} {state}", s.stage);
        }
        return Ok(());
    }
    let bar = ProgressBar::new(p.order.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("pipeline [{bar:20}] {pos}/{len} steps {msg}")
            .expect("static")
            .progress_chars("=> "),
    );
    let selected: Vec<String> = match &a.only {
        Some(o) => {
            // Inputs of --only must come from cached runs of their steps.
            for d in p.steps[o].deps.iter() {
                let argv = p
                    .argv(&p.steps[d], &resolver(&done))
                    .map_err(|e| anyhow!("--only {o}: input step `{d}`: {e}"))?;
                let outs = cached_step(store, &step_key(&p, &argv)?).ok_or_else(|| anyhow!("--only {o}: its input step `{d}` has not run yet; run the pipeline (or --only {d}) first"))?;
                done.insert(d.clone(), outs);
            }
            vec![o.clone()]
        }
        None => p.order.clone(),
    };
    let jobs = a.jobs.max(1);
    let mut remaining: Vec<String> = selected.clone();
    let heavy_lock = std::sync::Mutex::new(());
    while !remaining.is_empty() {
        let ready: Vec<String> = remaining
            .iter()
            .filter(|n| p.steps[*n].deps.iter().all(|d| done.contains_key(d)))
            .cloned()
            .collect();
        if ready.is_empty() {
            bail!("internal: no step is ready (unresolved inputs)");
        }
        let batch: Vec<String> = ready.into_iter().take(jobs).collect();
        let results: Vec<(String, Result<(StageOut, bool)>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .map(|n| {
                    let (p, done, forced, heavy_lock, bar) =
                        (&p, &done, &forced, &heavy_lock, &bar);
                    let n = n.clone();
                    scope.spawn(move || {
                        let s = &p.steps[&n];
                        let r = (|| -> Result<(StageOut, bool)> {
                            let argv = p.argv(s, &resolver(done))?;
                            let key = step_key(p, &argv)?;
                            if !forced.contains(&n) {
                                if let Some(outs) = cached_step(store, &key) {
                                    return Ok((
                                        StageOut {
                                            outputs: outs,
                                            cached: true,
                                            ..Default::default()
                                        },
                                        true,
                                    ));
                                }
                            }
                            let _guard = heavy(s)
                                .then(|| heavy_lock.lock().unwrap_or_else(|e| e.into_inner()));
                            bar.set_message(format!("running {n} ({})", s.stage));
                            tracing::info!("step {n}: {}", argv[1..].join(" "));
                            let cli = Cli::try_parse_from(&argv)
                                .map_err(|e| anyhow!("step `{n}`: {e}"))?;
                            let out = dispatch(store, cli.command)
                                .with_context(|| format!("step `{n}` ({}) failed", s.stage))?;
                            if let Some(e) = &out.error {
                                bail!("step `{n}` ({}): {e}", s.stage);
                            }
                            record_step(store, &key, &out.outputs)?;
                            Ok((out, false))
                        })();
                        (n, r)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("step thread"))
                .collect()
        });
        for (n, r) in results {
            let (out, from_cache) = r?;
            if from_cache {
                summary.cached += 1;
                tracing::info!("step {n}: cached");
            } else {
                summary.ran += 1;
            }
            if let Some((new, cached, failed)) = out.requests {
                summary.requests = (
                    summary.requests.0 + new,
                    summary.requests.1 + cached,
                    summary.requests.2 + failed,
                );
            }
            for (k, id) in &out.outputs {
                println!("{n}\t{k}\t{id}");
            }
            done.insert(n.clone(), out.outputs);
            remaining.retain(|x| *x != n);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let report = p
        .steps
        .values()
        .filter(|s| s.stage == "report")
        .find_map(|s| {
            s.params
                .iter()
                .find(|(k, _)| k == "out")
                .and_then(|(_, v)| v.first().cloned())
        });
    eprintln!(
        "pipeline {}: {} step(s) run, {} cached; requests: {} new, {} cached, {} failed; {:.1}s{}",
        a.pipeline.display(),
        summary.ran,
        summary.cached,
        summary.requests.0,
        summary.requests.1,
        summary.requests.2,
        started.elapsed().as_secs_f64(),
        report
            .map(|r| format!("; report: {}", Path::new(&r).join("index.html").display()))
            .unwrap_or_default()
    );
    store.log_run(json!({"stage": "run", "pipeline": a.pipeline.display().to_string(), "ran": summary.ran, "cached": summary.cached, "seconds": started.elapsed().as_secs_f64()}));
    Ok(())
}
