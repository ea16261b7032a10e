//! Execution: steps run in plan order, independent ones in parallel (up to
//! `jobs`), steps that load a local model one at a time; each step's key is
//! checked against the step cache first, and its outputs recorded after.

use indicatif::{ProgressBar, ProgressStyle};
use ragprobe_artifact::Store;
use std::collections::BTreeSet;

use crate::cache::{cached_step, record_step, step_key};
use crate::plan::{resolver, Done, Pipeline};
use crate::{PipelineError, Result, StepExecutor, StepInputs, StepOutcome};

/// How to run a pipeline.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Run only this step (its inputs must be cached).
    pub only: Option<String>,
    /// Run this step and everything after it again, ignoring the step cache.
    pub from: Option<String>,
    /// Independent steps run at once.
    pub jobs: usize,
    /// Show a progress bar.
    pub progress: bool,
    /// Leave out these steps and every step after one (`run --estimate`
    /// runs every step but those that send model requests, then estimates
    /// what they would send).
    pub leave_out: BTreeSet<String>,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Steps that ran.
    pub ran: usize,
    /// Steps taken from the step cache.
    pub cached: usize,
    /// Model requests: (new, cached, failed).
    pub requests: (u64, u64, u64),
    /// Tokens of the new requests, as the model reported them: (prompt,
    /// completion).
    pub tokens: (u64, u64),
}

/// The pipeline's progress bar: one tick a step (hidden without `progress`).
fn steps_bar(steps: usize, progress: bool) -> ProgressBar {
    let bar = if progress {
        ProgressBar::new(steps as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("pipeline [{bar:20}] {pos}/{len} steps {msg}")
            .expect("static")
            .progress_chars("=> "),
    );
    bar
}

impl RunSummary {
    /// Counts a finished step: ran or cached, and its requests.
    fn count(&mut self, step: &str, out: &StepOutcome, from_cache: bool) {
        if from_cache || out.cached {
            self.cached += 1;
            tracing::info!("step {step}: cached");
        } else {
            self.ran += 1;
        }
        if let Some((new, cached, failed)) = out.requests {
            self.requests.0 += new;
            self.requests.1 += cached;
            self.requests.2 += failed;
        }
        if let Some((prompt, completion)) = out.tokens {
            self.tokens.0 += prompt;
            self.tokens.1 += completion;
        }
    }
}

/// What every step of one run shares.
#[derive(Clone, Copy)]
struct Running<'a> {
    store: &'a Store,
    exec: &'a dyn StepExecutor,
    /// Held by a step that loads a local model, so such steps run alone.
    exclusive: &'a std::sync::Mutex<()>,
    bar: &'a ProgressBar,
}

/// One step of a dry run's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStep {
    /// The step's name.
    pub name: String,
    /// Its stage.
    pub stage: String,
    /// Cached, to run, or after its inputs.
    pub state: PlanState,
    /// Its command line, when its inputs are known (every input step
    /// cached); None after inputs that must run first.
    pub argv: Option<Vec<String>>,
}

/// A step's state in a dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanState {
    /// Found in the step cache: it will not run.
    Cached,
    /// It will run (not cached, or forced by `--from`).
    ToRun,
    /// Its inputs come from steps that must run first.
    AfterInputs,
}

impl Pipeline {
    fn check_steps(&self, opts: &RunOptions) -> Result<()> {
        for name in opts.only.iter().chain(opts.from.iter()) {
            if !self.steps.contains_key(name) {
                return Err(PipelineError::msg(format!(
                    "no step `{name}` in {}",
                    self.path.display()
                )));
            }
        }
        Ok(())
    }

    fn key(&self, exec: &dyn StepExecutor, argv: &[String]) -> Result<String> {
        self.key_with(argv, &exec.inputs(argv))
    }

    /// The step key of `argv` whose declared inputs are `inputs`.
    fn key_with(&self, argv: &[String], inputs: &StepInputs) -> Result<String> {
        let base = self.path.parent().unwrap_or(std::path::Path::new("."));
        step_key(base, argv, inputs)
    }

    /// Each step in order with its state; runs nothing.
    pub fn dry_run(
        &self,
        store: &Store,
        exec: &dyn StepExecutor,
        opts: &RunOptions,
    ) -> Result<Vec<PlannedStep>> {
        self.check_steps(opts)?;
        let forced = opts
            .from
            .as_deref()
            .map(|f| self.downstream(f))
            .unwrap_or_default();
        let mut done = Done::new();
        let mut out = Vec::new();
        for n in &self.order {
            let s = &self.steps[n];
            let argv = self.argv(s, &resolver(&done)).ok();
            let state = match &argv {
                Some(argv) => match (
                    forced.contains(n),
                    cached_step(store, &self.key(exec, argv)?),
                ) {
                    (false, Some(outs)) => {
                        done.insert(n.clone(), outs);
                        PlanState::Cached
                    }
                    _ => PlanState::ToRun,
                },
                None => PlanState::AfterInputs,
            };
            out.push(PlannedStep {
                name: n.clone(),
                stage: s.stage.clone(),
                state,
                argv,
            });
        }
        Ok(out)
    }

    /// The outputs (kind, id) of every step that has run with its current
    /// inputs, from the step cache; steps not run yet (or downstream of
    /// one) are named in the second list. Runs nothing.
    pub fn cached_outputs(
        &self,
        store: &Store,
        exec: &dyn StepExecutor,
    ) -> Result<(Vec<(String, String)>, Vec<String>)> {
        let mut done = Done::new();
        let mut missing = Vec::new();
        for n in &self.order {
            let cached = match self.argv(&self.steps[n], &resolver(&done)) {
                Ok(argv) => cached_step(store, &self.key(exec, &argv)?),
                Err(_) => None,
            };
            match cached {
                Some(outs) => {
                    done.insert(n.clone(), outs);
                }
                None => missing.push(n.clone()),
            }
        }
        let mut outputs: Vec<(String, String)> = done.into_values().flatten().collect();
        outputs.sort();
        outputs.dedup();
        Ok((outputs, missing))
    }

    /// The inputs of `--only` step `only`, from cached runs of their steps.
    fn cached_inputs(
        &self,
        store: &Store,
        exec: &dyn StepExecutor,
        only: &str,
        done: &mut Done,
    ) -> Result<()> {
        for d in &self.steps[only].deps {
            let argv = self
                .argv(&self.steps[d], &resolver(done))
                .map_err(|e| PipelineError::msg(format!("--only {only}: input step `{d}`: {e}")))?;
            let outs = cached_step(store, &self.key(exec, &argv)?).ok_or_else(|| {
                PipelineError::msg(format!("--only {only}: its input step `{d}` has not run yet; run the pipeline (or --only {d}) first"))
            })?;
            done.insert(d.clone(), outs);
        }
        Ok(())
    }

    /// One step: from the step cache, or run by `exec` and recorded.
    fn run_step(
        &self,
        run: &Running<'_>,
        n: &str,
        done: &Done,
        forced: bool,
    ) -> Result<(StepOutcome, bool)> {
        let Running {
            store,
            exec,
            exclusive,
            bar,
        } = *run;
        let s = &self.steps[n];
        let argv = self.argv(s, &resolver(done))?;
        let inputs = exec.inputs(&argv);
        let key = self.key_with(&argv, &inputs)?;
        if !forced {
            if let Some(outputs) = cached_step(store, &key) {
                return Ok((
                    StepOutcome {
                        outputs,
                        requests: None,
                        tokens: None,
                        cached: true,
                    },
                    true,
                ));
            }
        }
        let _guard = inputs
            .exclusive
            .then(|| exclusive.lock().unwrap_or_else(|e| e.into_inner()));
        bar.set_message(format!("running {n} ({})", s.stage));
        tracing::info!("step {n}: {}", argv.join(" "));
        let out = exec.run(&argv).map_err(|e| PipelineError::Step {
            step: n.to_string(),
            stage: s.stage.clone(),
            message: e.to_string(),
        })?;
        record_step(store, &key, &out.outputs)?;
        Ok((out, false))
    }

    /// Runs the steps of `batch` at once, one thread each; their outcomes
    /// in batch order.
    fn run_batch(
        &self,
        running: &Running<'_>,
        batch: &[String],
        done: &Done,
        forced: &BTreeSet<String>,
    ) -> Vec<(String, Result<(StepOutcome, bool)>)> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .map(|n| {
                    scope.spawn(move || {
                        (
                            n.clone(),
                            self.run_step(running, n, done, forced.contains(n)),
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("step thread"))
                .collect()
        })
    }

    /// Runs the pipeline; `on_step` sees each finished step's outputs.
    pub fn run(
        &self,
        store: &Store,
        exec: &dyn StepExecutor,
        opts: &RunOptions,
        on_step: &mut dyn FnMut(&str, &[(String, String)]),
    ) -> Result<RunSummary> {
        self.check_steps(opts)?;
        self.check_inputs()?;
        let forced: BTreeSet<String> = opts
            .from
            .as_deref()
            .map(|f| self.downstream(f))
            .unwrap_or_default();
        let mut done = Done::new();
        let mut summary = RunSummary::default();
        let bar = steps_bar(self.order.len(), opts.progress);
        let mut remaining: Vec<String> = match &opts.only {
            Some(o) => {
                self.cached_inputs(store, exec, o, &mut done)?;
                vec![o.clone()]
            }
            None => self.order.clone(),
        };
        if !opts.leave_out.is_empty() {
            let left_out: BTreeSet<String> = opts
                .leave_out
                .iter()
                .filter(|n| self.steps.contains_key(*n))
                .flat_map(|n| self.downstream(n))
                .collect();
            remaining.retain(|n| !left_out.contains(n));
            bar.set_length(remaining.len() as u64);
        }
        let exclusive = std::sync::Mutex::new(());
        let running = Running {
            store,
            exec,
            exclusive: &exclusive,
            bar: &bar,
        };
        while !remaining.is_empty() {
            let batch: Vec<String> = remaining
                .iter()
                .filter(|n| self.steps[*n].deps.iter().all(|d| done.contains_key(d)))
                .take(opts.jobs.max(1))
                .cloned()
                .collect();
            if batch.is_empty() {
                return Err(PipelineError::msg(
                    "internal: no step is ready (unresolved inputs)".into(),
                ));
            }
            let results = self.run_batch(&running, &batch, &done, &forced);
            for (n, r) in results {
                let (out, from_cache) = r?;
                summary.count(&n, &out, from_cache);
                on_step(&n, &out.outputs);
                done.insert(n.clone(), out.outputs);
                remaining.retain(|x| *x != n);
                bar.inc(1);
            }
        }
        bar.finish_and_clear();
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::Fake;

    fn setup(text: &str) -> (tempfile::TempDir, Store, Pipeline, Fake) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.toml");
        std::fs::write(&p, text).unwrap();
        let store = Store::open(d.path().join("s")).unwrap();
        let fake = Fake::default();
        let pipe = Pipeline::load(&p, &[], &fake).unwrap();
        (d, store, pipe, fake)
    }

    const TWO: &str =
        "[steps.a]\nstage = \"a\"\nx = 1\n\n[steps.b]\nstage = \"a\"\nin = \"@a.out\"\n";

    /// `leave_out` leaves out its steps and every step after one; the
    /// others run (`run --estimate` leaves out the generate steps).
    #[test]
    fn leave_out_runs_only_the_steps_not_after_it() {
        let (_d, store, p, fake) = setup(
            "[steps.a]\nstage = \"a\"\nx = 1\n\n[steps.b]\nstage = \"b\"\nin = \"@a.out\"\n\n\
             [steps.c]\nstage = \"a\"\nx = 2\n\n[steps.d]\nstage = \"a\"\nin = \"@b.out\"\n",
        );
        let opts = RunOptions {
            jobs: 1,
            leave_out: BTreeSet::from(["b".to_string()]),
            ..Default::default()
        };
        let mut seen = Vec::new();
        let s = p
            .run(&store, &fake, &opts, &mut |n, _| seen.push(n.to_string()))
            .unwrap();
        seen.sort();
        assert_eq!((s.ran, seen), (2, vec!["a".to_string(), "c".into()]));
    }

    #[test]
    fn steps_run_in_order_then_come_from_the_cache() {
        let (_d, store, p, fake) = setup(TWO);
        let opts = RunOptions {
            jobs: 2,
            ..Default::default()
        };
        let mut seen = Vec::new();
        // The fake writes no objects: store a file for each output, as a stage would.
        let s = p
            .run(&store, &fake, &opts, &mut |n, outs| {
                seen.push(n.to_string());
                for (_, id) in outs {
                    std::fs::write(store.object_path(id), "x").unwrap();
                }
            })
            .unwrap();
        assert_eq!((s.ran, s.cached), (2, 0));
        assert_eq!(seen, ["a", "b"]);
        let calls = fake.calls.lock().unwrap().clone();
        assert_eq!(calls[1], vec!["a", "--in", &fake.id_for(&calls[0])]);
        let s = p.run(&store, &fake, &opts, &mut |_, _| {}).unwrap();
        assert_eq!((s.ran, s.cached), (0, 2));
        let states: Vec<PlanState> = p
            .dry_run(&store, &fake, &opts)
            .unwrap()
            .into_iter()
            .map(|x| x.state)
            .collect();
        assert_eq!(states, [PlanState::Cached, PlanState::Cached]);
        // --from re-runs the step and everything after it.
        let from = RunOptions {
            from: Some("a".into()),
            jobs: 1,
            ..Default::default()
        };
        let s = p.run(&store, &fake, &from, &mut |_, _| {}).unwrap();
        assert_eq!((s.ran, s.cached), (2, 0));
    }

    #[test]
    fn only_needs_its_inputs_cached_and_a_failing_step_names_itself() {
        let (_d, store, p, fake) = setup(TWO);
        let only = RunOptions {
            only: Some("b".into()),
            jobs: 1,
            ..Default::default()
        };
        let e = p
            .run(&store, &fake, &only, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("input step `a` has not run yet"), "{e}");
        let (_d2, store2, p2, fake2) = setup("[steps.bad]\nstage = \"a\"\nfail = true\n");
        let e = p2
            .run(&store2, &fake2, &RunOptions::default(), &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("step `bad` (a)") && e.contains("asked to fail"),
            "{e}"
        );
    }
}
