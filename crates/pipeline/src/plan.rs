//! Planning: the steps' order (a DAG, ties by name), each step's command
//! line with `@step.kind` references resolved, and validation of every
//! step's arguments before anything runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::parse::{parse, InputPath, Step, POSITIONAL};
use crate::{PipelineError, Result, StepExecutor};

/// A stand-in artifact id used to validate arguments before anything runs.
const PLACEHOLDER_ID: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Outputs of finished steps: step -> [(kind, id)].
pub type Done = BTreeMap<String, Vec<(String, String)>>;

/// A parsed, ordered, validated pipeline.
#[derive(Debug)]
pub struct Pipeline {
    /// The pipeline file it was parsed from.
    pub path: PathBuf,
    /// Every step, by name.
    pub steps: BTreeMap<String, Step>,
    /// Topological order, ties by name: deterministic.
    pub order: Vec<String>,
    /// Every input path, with the template and variables it came from.
    pub inputs: Vec<InputPath>,
}

/// Kahn's algorithm; a cycle is an error at the line of its first step.
fn order(file: &str, steps: &BTreeMap<String, Step>) -> Result<Vec<String>> {
    let mut order = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    while order.len() < steps.len() {
        let ready: Vec<&str> = steps
            .values()
            .filter(|s| {
                !done.contains(s.name.as_str()) && s.deps.iter().all(|d| done.contains(d.as_str()))
            })
            .map(|s| s.name.as_str())
            .collect();
        if ready.is_empty() {
            let stuck: Vec<&Step> = steps
                .values()
                .filter(|s| !done.contains(s.name.as_str()))
                .collect();
            return Err(PipelineError::msg(format!(
                "{file}:{}: the steps {} form a cycle",
                stuck[0].line,
                stuck
                    .iter()
                    .map(|s| format!("`{}`", s.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        for r in ready {
            done.insert(r);
            order.push(r.to_string());
        }
    }
    Ok(order)
}

impl Pipeline {
    /// Parses, orders and validates a pipeline file with `--set` overrides;
    /// every step's arguments are checked by `exec` with stand-in ids.
    pub fn load(
        path: &std::path::Path,
        sets: &[String],
        exec: &dyn StepExecutor,
    ) -> Result<Pipeline> {
        let parsed = parse(path, sets, exec.stages())?;
        let file = path.display().to_string();
        let order = order(&file, &parsed.steps)?;
        let p = Pipeline {
            path: parsed.path,
            steps: parsed.steps,
            order,
            inputs: parsed.inputs,
        };
        for s in p.steps.values() {
            let argv = p.argv(s, &|_| Ok(PLACEHOLDER_ID.to_string()))?;
            if let Err(first) = exec.check(&argv) {
                return Err(PipelineError::msg(format!(
                    "{file}:{}: step `{}`: bad parameter for stage `{}`: {first}",
                    s.line, s.name, s.stage
                )));
            }
        }
        Ok(p)
    }

    /// Every input path must exist; a missing one names the variables that
    /// made it, so a user with one language knows what to set.
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
                return Err(PipelineError::msg(format!(
                    "{}: input {} does not exist{hint}",
                    i.at,
                    i.path.display()
                )));
            }
        }
        Ok(())
    }

    /// The command line of a step (`[stage, args...]`), with `@refs`
    /// resolved by `resolve`: `k = v` is `--k v`, `true` a bare flag,
    /// `false` nothing, a list repeats the flag, `paths` are positional.
    pub fn argv(&self, s: &Step, resolve: &dyn Fn(&str) -> Result<String>) -> Result<Vec<String>> {
        let mut argv = vec![s.stage.clone()];
        let mut positional = Vec::new();
        for (k, values) in &s.params {
            let resolved: Vec<String> = values
                .iter()
                .map(|v| match v.strip_prefix('@') {
                    Some(r) => resolve(r),
                    None => Ok(v.clone()),
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

    /// Step `from` and every step after it (for `--from`).
    pub fn downstream(&self, from: &str) -> BTreeSet<String> {
        let mut forced = BTreeSet::from([from.to_string()]);
        for n in &self.order {
            if self.steps[n].deps.iter().any(|d| forced.contains(d)) {
                forced.insert(n.clone());
            }
        }
        forced
    }
}

/// Resolves `step.kind` (or `step`, its first output) against finished steps.
pub fn resolver(done: &Done) -> impl Fn(&str) -> Result<String> + '_ {
    move |r: &str| {
        let (step, kind) = r
            .split_once('.')
            .map(|(a, b)| (a, Some(b)))
            .unwrap_or((r, None));
        let outs = done
            .get(step)
            .ok_or_else(|| PipelineError::msg(format!("step `{step}` has not run")))?;
        match kind {
            Some(k) => outs
                .iter()
                .find(|(kk, _)| kk == k)
                .map(|(_, id)| id.clone())
                .ok_or_else(|| {
                    PipelineError::msg(format!(
                        "step `{step}` wrote no `{k}` artifact (it wrote {})",
                        outs.iter()
                            .map(|o| o.0.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }),
            None => outs
                .first()
                .map(|(_, id)| id.clone())
                .ok_or_else(|| PipelineError::msg(format!("step `{step}` wrote no artifact"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::Fake;

    fn load(text: &str) -> Result<Pipeline> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.toml");
        std::fs::write(&p, text).unwrap();
        Pipeline::load(&p, &[], &Fake::default())
    }

    #[test]
    fn order_is_topological_with_ties_by_name() {
        let p = load("[steps.z]\nstage = \"a\"\n[steps.b]\nstage = \"a\"\nin = \"@z.x\"\n[steps.a]\nstage = \"a\"\nafter = [\"b\"]\n").unwrap();
        assert_eq!(p.order, ["z", "b", "a"]);
        assert_eq!(
            p.downstream("b"),
            BTreeSet::from(["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn a_cycle_names_its_first_step_line() {
        let e = load(
            "[steps.a]\nstage = \"a\"\nin = \"@b\"\n\n[steps.b]\nstage = \"a\"\nin = \"@a\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("p.toml:1") && e.contains("cycle"), "{e}");
    }

    #[test]
    fn argv_maps_keys_to_flags_and_paths_to_positionals() {
        let p = load("[steps.s]\nstage = \"a\"\npaths = [\"f1\", \"f2\"]\nflag = true\noff = false\nrep = [1, 2]\nin = \"@t.k\"\n[steps.t]\nstage = \"a\"\n").unwrap();
        let mut done = Done::new();
        done.insert("t".into(), vec![("k".into(), "ID".into())]);
        let argv = p.argv(&p.steps["s"], &resolver(&done)).unwrap();
        assert_eq!(
            argv,
            ["a", "--flag", "--in", "ID", "--rep", "1", "--rep", "2", "f1", "f2"]
        );
        let e = p.argv(&p.steps["s"], &resolver(&Done::new())).unwrap_err();
        assert!(e.to_string().contains("step `t` has not run"));
    }

    #[test]
    fn a_parameter_the_stage_rejects_names_the_step_line() {
        let e = load("[steps.s]\nstage = \"a\"\nreject = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("p.toml:1") && e.contains("step `s`") && e.contains("reject"),
            "{e}"
        );
    }
}
