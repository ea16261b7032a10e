//! Parsing a pipeline file: variables, `[defaults.<stage>]`, steps, with the
//! line of every table and key taken from the TOML parser's spans.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use toml::Spanned;

use crate::vars::{apply_sets, fill_item, fill_vars, var_names, VarValue, Vars};
use crate::{PipelineError, Result};

/// Parameters that are positional arguments rather than flags; their values
/// are input paths that must exist.
pub const POSITIONAL: &[&str] = &["paths"];
/// The CLI's global flags: valid on the command line, never in a step.
pub const GLOBAL_FLAGS: &[&str] = &["store", "verbose", "quiet"];

type SpannedTable = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// The file as TOML gives it, with spans.
#[derive(Deserialize)]
struct FileDoc {
    #[serde(default)]
    vars: SpannedTable,
    /// `[defaults.<stage>]`: parameters every step of that stage takes
    /// unless it sets them itself.
    #[serde(default)]
    defaults: BTreeMap<Spanned<String>, SpannedTable>,
    steps: Option<BTreeMap<Spanned<String>, SpannedTable>>,
}

/// One parsed step.
#[derive(Debug, Clone)]
pub struct Step {
    /// The step's name (`[steps.<name>]`).
    pub name: String,
    /// The stage it runs (`stage = ...`).
    pub stage: String,
    /// The line of its `[steps.<name>]` header.
    pub line: usize,
    /// (flag, values) in key order; values may be `@step.kind` references.
    pub params: Vec<(String, Vec<String>)>,
    /// Steps it must run after: those its `@step.kind` references and `after` list name.
    pub deps: BTreeSet<String>,
}

/// The step parameter naming a dataset to read when the step's paths do
/// not exist (`fetch = "nomiracl"`).
pub const FETCH: &str = "fetch";

/// An input path of the pipeline and where its value came from.
#[derive(Debug, Clone)]
pub struct InputPath {
    pub at: String,
    pub path: PathBuf,
    pub template: String,
    pub vars: Vec<String>,
}

/// A parsed pipeline (not yet planned).
#[derive(Debug)]
pub struct Parsed {
    pub path: PathBuf,
    pub steps: BTreeMap<String, Step>,
    pub inputs: Vec<InputPath>,
}

/// 1-based line of byte offset `at` in `text`.
pub fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
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

/// A parameter value as strings: a scalar, or a list of scalars.
fn values(v: &toml::Value, at: &str) -> Result<Vec<String>> {
    match v {
        toml::Value::Array(a) => a
            .iter()
            .map(|x| {
                scalar(x).ok_or_else(|| {
                    PipelineError::msg(format!("{at}: list items must be strings or numbers"))
                })
            })
            .collect(),
        other => Ok(vec![scalar(other).ok_or_else(|| {
            PipelineError::msg(format!(
                "{at}: must be a string, number, boolean or a list of them"
            ))
        })?]),
    }
}

fn read_vars(doc: &FileDoc, text: &str, file: &str) -> Result<Vars> {
    let mut vars = Vars::new();
    for (k, v) in &doc.vars {
        let bad = || {
            PipelineError::msg(format!(
                "{file}:{}: variable `{}` must be a string, number, boolean or a list of them",
                line_at(text, k.span().start),
                k.get_ref()
            ))
        };
        let value = match v.get_ref() {
            toml::Value::Array(a) => VarValue::List(
                a.iter()
                    .map(|x| scalar(x).ok_or_else(bad))
                    .collect::<Result<_>>()?,
            ),
            other => VarValue::One(scalar(other).ok_or_else(bad)?),
        };
        vars.insert(k.get_ref().clone(), value);
    }
    Ok(vars)
}

/// Parses `path` with `--set` overrides. `stages` are the stage names a
/// step may use.
pub fn parse(path: &Path, sets: &[String], stages: &[&str]) -> Result<Parsed> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| PipelineError::msg(format!("{file}: cannot read: {e}")))?;
    let doc: FileDoc = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| line_at(&text, s.start)).unwrap_or(0);
        PipelineError::msg(format!("{file}:{line}: not valid TOML: {}", e.message()))
    })?;
    let mut vars = read_vars(&doc, &text, &file)?;
    let var_line = |k: &str| {
        doc.vars
            .keys()
            .find(|s| s.get_ref() == k)
            .map(|s| line_at(&text, s.span().start))
            .unwrap_or(0)
    };
    let used: BTreeSet<String> = var_names(&text).into_iter().map(String::from).collect();
    apply_sets(&mut vars, sets, &used, &var_line, &file)?;
    for stage in doc.defaults.keys() {
        if !stages.contains(&stage.get_ref().as_str()) {
            return Err(PipelineError::msg(format!(
                "{file}:{}: [defaults.{}]: unknown stage (known: {})",
                line_at(&text, stage.span().start),
                stage.get_ref(),
                stages.join(", ")
            )));
        }
    }
    let steps_t = doc
        .steps
        .as_ref()
        .ok_or_else(|| PipelineError::msg(format!("{file}: no [steps.*] tables")))?;
    let cx = Context {
        file: &file,
        text: &text,
        vars: &vars,
        names: steps_t.keys().map(|k| k.get_ref().as_str()).collect(),
        stages,
        defaults: &doc.defaults,
    };
    let mut steps = BTreeMap::new();
    let mut inputs = Vec::new();
    for (name, table) in steps_t {
        let step = cx.step(name, table, &mut inputs)?;
        steps.insert(step.name.clone(), step);
    }
    Ok(Parsed {
        path: path.to_path_buf(),
        steps,
        inputs,
    })
}

/// What parsing one step needs from the whole file.
struct Context<'a> {
    file: &'a str,
    text: &'a str,
    vars: &'a Vars,
    names: BTreeSet<&'a str>,
    stages: &'a [&'a str],
    defaults: &'a BTreeMap<Spanned<String>, SpannedTable>,
}

/// A parameter's key and value, with spans.
type Entry<'a> = (&'a Spanned<String>, &'a Spanned<toml::Value>);

impl<'a> Context<'a> {
    /// One `[steps.<name>]` table; its input paths are added to `inputs`.
    fn step(
        &self,
        name: &Spanned<String>,
        table: &'a SpannedTable,
        inputs: &mut Vec<InputPath>,
    ) -> Result<Step> {
        let line = line_at(self.text, name.span().start);
        let name = name.get_ref().clone();
        let at = format!("{}:{line}: step `{name}`", self.file);
        let stage = table
            .iter()
            .find(|(k, _)| k.get_ref() == "stage")
            .and_then(|(_, v)| v.get_ref().as_str().map(str::to_string))
            .ok_or_else(|| PipelineError::msg(format!("{at}: missing `stage`")))?;
        if !self.stages.contains(&stage.as_str()) {
            return Err(PipelineError::msg(format!(
                "{at}: unknown stage `{stage}` (known: {})",
                self.stages.join(", ")
            )));
        }
        let mut params = Vec::new();
        let mut deps = BTreeSet::new();
        let mut step_inputs = Vec::new();
        for (k, (key, val)) in self.entries(&stage, table) {
            if k == "stage" {
                continue;
            }
            let kline = line_at(self.text, key.span().start);
            if GLOBAL_FLAGS.contains(&k) {
                return Err(PipelineError::msg(format!("{}:{kline}: step `{name}`: `{k}` is not a step parameter (it belongs to the whole run: `ragprobe --{k} ... run`)", self.file)));
            }
            let kat = format!("{}:{kline}: step `{name}`, `{k}`", self.file);
            if k == "after" {
                self.after(val.get_ref(), &kat, &at, &mut deps)?;
                continue;
            }
            let values = self.param(k, val.get_ref(), &kat, &mut deps, &mut step_inputs)?;
            params.push((k.to_string(), values));
        }
        // A step that names a dataset to fetch reads its paths only when
        // they exist: they are not required inputs.
        if !params.iter().any(|(k, _)| k == FETCH) {
            inputs.extend(step_inputs);
        }
        Ok(Step {
            name,
            stage,
            line,
            params,
            deps,
        })
    }

    /// The step's own keys, then its stage's defaults for keys it does not set.
    fn entries(&self, stage: &str, table: &'a SpannedTable) -> BTreeMap<&'a str, Entry<'a>> {
        let mut entries = BTreeMap::new();
        if let Some(d) = self.defaults.iter().find(|(s, _)| s.get_ref() == stage) {
            for (k, v) in d.1 {
                entries.insert(k.get_ref().as_str(), (k, v));
            }
        }
        for (k, v) in table {
            entries.insert(k.get_ref().as_str(), (k, v));
        }
        entries
    }

    /// `after = [...]`: explicit dependencies on other steps.
    fn after(
        &self,
        val: &toml::Value,
        kat: &str,
        at: &str,
        deps: &mut BTreeSet<String>,
    ) -> Result<()> {
        let bad = || PipelineError::msg(format!("{kat}: must be a list of step names"));
        for d in val.as_array().ok_or_else(bad)? {
            let d = d.as_str().ok_or_else(bad)?;
            if !self.names.contains(d) {
                return Err(PipelineError::msg(format!(
                    "{at}: `after` names `{d}`, which is not a step"
                )));
            }
            deps.insert(d.to_string());
        }
        Ok(())
    }

    /// A parameter's values with variables filled: `@step` references
    /// become dependencies, positional values input paths.
    fn param(
        &self,
        k: &str,
        val: &toml::Value,
        kat: &str,
        deps: &mut BTreeSet<String>,
        inputs: &mut Vec<InputPath>,
    ) -> Result<Vec<String>> {
        let mut filled_values = Vec::new();
        for raw in values(val, kat)? {
            let items = if val.is_array() {
                fill_item(&raw, self.vars, kat)?
            } else {
                vec![fill_vars(&raw, self.vars, kat)?]
            };
            for filled in items {
                if let Some(reference) = filled.strip_prefix('@') {
                    let dep = reference.split('.').next().unwrap_or("");
                    if !self.names.contains(dep) {
                        return Err(PipelineError::msg(format!(
                            "{kat}: refers to `@{reference}`, but there is no step `{dep}`"
                        )));
                    }
                    deps.insert(dep.to_string());
                } else if POSITIONAL.contains(&k) {
                    inputs.push(InputPath {
                        at: kat.to_string(),
                        path: PathBuf::from(&filled),
                        template: raw.clone(),
                        vars: var_names(&raw).into_iter().map(String::from).collect(),
                    });
                }
                filled_values.push(filled);
            }
        }
        Ok(filled_values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGES: &[&str] = &["ingest", "perturb", "generate"];

    fn parse_text(text: &str, sets: &[&str]) -> Result<Parsed> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.toml");
        std::fs::write(&p, text).unwrap();
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse(&p, &sets, STAGES)
    }

    fn err(text: &str) -> String {
        parse_text(text, &[]).unwrap_err().to_string()
    }

    #[test]
    fn lines_come_from_spans() {
        let e = err("[vars]\nok = \"x\"\nbad = { a = 1 }\n\n[steps.a]\nstage = \"ingest\"\n");
        assert!(
            e.contains("p.toml:3") && e.contains("variable `bad`"),
            "{e}"
        );
        let e = err("[steps.a]\nstage = \"ingest\"\n\n[steps.b]\nstage = \"train\"\n");
        assert!(
            e.contains("p.toml:4") && e.contains("unknown stage `train`"),
            "{e}"
        );
        let e = err("[steps.a]\nstage = \"ingest\"\nstore = \"x\"\n");
        assert!(
            e.contains("p.toml:3") && e.contains("`store` is not a step parameter"),
            "{e}"
        );
        let e = err("[steps.a]\nstage = \"perturb\"\nquestions = \"@nope.questions\"\n");
        assert!(
            e.contains("p.toml:3") && e.contains("no step `nope`"),
            "{e}"
        );
    }

    #[test]
    fn defaults_fill_keys_a_step_does_not_set() {
        let p = parse_text(
            "[defaults.generate]\nmax-tokens = 16\nbackend = \"{{b}}\"\n\n[vars]\nb = \"local\"\n\n[steps.g1]\nstage = \"generate\"\ncases = \"@g2\"\n\n[steps.g2]\nstage = \"generate\"\nmax-tokens = 4\ncases = \"x\"\n",
            &["b=openai"],
        )
        .unwrap();
        let get = |s: &str, k: &str| {
            p.steps[s]
                .params
                .iter()
                .find(|(kk, _)| kk == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("g1", "max-tokens"), Some(vec!["16".to_string()]));
        assert_eq!(get("g1", "backend"), Some(vec!["openai".to_string()]));
        assert_eq!(get("g2", "max-tokens"), Some(vec!["4".to_string()]));
        assert!(p.steps["g1"].deps.contains("g2"));
        let e = err("[defaults.train]\nx = 1\n\n[steps.a]\nstage = \"ingest\"\n");
        assert!(
            e.contains("p.toml:1") && e.contains("[defaults.train]"),
            "{e}"
        );
    }

    #[test]
    fn paths_are_inputs_with_their_variables() {
        let p = parse_text(
            "[vars]\nlangs = [\"en\", \"de\"]\n\n[steps.i]\nstage = \"ingest\"\npaths = [\"d/{{langs}}.jsonl\"]\n",
            &[],
        )
        .unwrap();
        let paths: Vec<_> = p
            .inputs
            .iter()
            .map(|i| i.path.display().to_string())
            .collect();
        assert_eq!(paths, ["d/en.jsonl", "d/de.jsonl"]);
        assert_eq!(p.inputs[0].vars, ["langs"]);
    }

    #[test]
    fn invalid_toml_names_the_line() {
        let e = err("[steps.a]\nstage = \"ingest\"\nx = [1,\n");
        assert!(e.contains("p.toml:") && e.contains("not valid TOML"), "{e}");
    }
}
