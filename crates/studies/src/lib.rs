//! The studies ragprobe reproduces, one folder each: imperfect retrieval
//! (seed 000), NoMIRACL (seed 001), RAG-Stress (seed 002), RGB and
//! FaithEval.
//!
//! A study is a [`Study`]: it plugs into each stage through that stage's
//! extension trait, and the stages name no study. Each study is registered
//! here, once, in [`STUDIES`]; every registry the stages take is made from
//! that list:
//!
//! * ingest's [`RecordFormat`]s: [`record_formats`];
//! * perturb's [`Scenario`](ragprobe_perturb::Scenario)s: [`SCENARIOS`];
//!   its question samples and the studies' options: [`perturb_options`];
//! * the prompt templates and roles of generate: [`prompt_catalog`];
//! * score's [`MetricFamilies`]: [`METRIC_FAMILIES`], [`studies`];
//! * report's [`StudyReport`]s (tables, charts, case-browser verdicts): [`reports`].
//!
//! What a study shares with the stages (the general dataset readers, the
//! perturb stage's GenADV and foil picker, the `scores` columns of its
//! per-row readings): ARCHITECTURE.md says which and why. FaithEval, the
//! fifth, is all in its folder.

use ragprobe_ingest::RecordFormat;
use ragprobe_models::prompts::Catalog;
use ragprobe_perturb::{PerturbOptions, QuestionSample, ScenarioRef, StudyOptions};
use ragprobe_report::StudyReport;
use ragprobe_score::metrics::{MetricFamilies, Studies};
use std::sync::LazyLock;

/// One study: its metric families ([`MetricFamilies`]: per-row judgements
/// and metrics), its report part ([`StudyReport`]: tables, verdicts), and
/// what it adds to the other stages. Every method returns static data: a
/// study is a unit struct whose parts are constants of its folder.
///
/// The caller ([`STUDIES`] and the registries made from it) guarantees
/// that each part is offered to its stage in registration order, after the
/// stage's own built-in parts (a study can add, never replace).
///
/// An implementation must: give names (formats, scenarios, templates,
/// roles) that no other study and no stage uses; keep every part
/// deterministic (see each stage trait's contract).
pub trait Study: MetricFamilies + StudyReport {
    /// The input formats it reads (`ingest --format <name>`).
    fn record_formats(&self) -> &'static [&'static dyn RecordFormat] {
        &[]
    }
    /// The scenarios it builds (`perturb --scenario <name>`).
    fn scenarios(&self) -> &'static [ScenarioRef] {
        &[]
    }
    /// Its question samples, drawn before perturb builds any case (each
    /// applied when its option is set).
    fn question_samples(&self) -> &'static [&'static dyn QuestionSample] {
        &[]
    }
    /// Record its perturb options' defaults in `opts`: those the recipe
    /// records whether or not the run sets them (a study's own options are
    /// read with their defaults where absent; this only keeps recipes, and
    /// so ids, the same for every caller).
    fn perturb_defaults(&self, opts: &mut StudyOptions) {
        let _ = opts;
    }
    /// Its prompt templates: (id, TOML text), found by id (`generate
    /// --prompt <id>`).
    fn prompts(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The template roles it adds (its templates' `role`, which its metric
    /// families select rows by).
    fn prompt_roles(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Declares each study's folder (`pub mod <folder>;`) and lists the study
/// in [`STUDIES`]: registering a study is one line of [`studies!`].
macro_rules! studies {
    ($($folder:ident :: $study:ident),+ $(,)?) => {
        $(pub mod $folder;)+
        /// Every study, in the order their parts are offered to the stages
        /// (and their metric rows written).
        pub static STUDIES: &[&dyn Study] = &[$(&$folder::$study),+];
    };
}

studies! {
    imperfect::Imperfect,
    nomiracl::Nomiracl,
    stress::Stress,
    rgb::Rgb,
    faitheval::FaithEval,
}

/// Every study's scenarios, in the order `--scenario` lists them (after
/// the stage's shared `closed-book` and `base`).
pub static SCENARIOS: LazyLock<Vec<ScenarioRef>> = LazyLock::new(|| {
    STUDIES
        .iter()
        .flat_map(|s| s.scenarios())
        .copied()
        .collect()
});

/// The scenario `name` (or alias) among the shared ones and [`SCENARIOS`].
pub fn scenario(name: &str) -> Option<ScenarioRef> {
    ragprobe_perturb::find_scenario(&SCENARIOS, name)
}

static SAMPLES: LazyLock<Vec<&'static dyn QuestionSample>> = LazyLock::new(|| {
    STUDIES
        .iter()
        .flat_map(|s| s.question_samples())
        .copied()
        .collect()
});

/// Perturb options with every study's parts: the question samples, the
/// studies' option defaults and the prompt catalog; the rest the stage's
/// defaults.
pub fn perturb_options() -> PerturbOptions {
    let mut study = StudyOptions::default();
    for s in STUDIES {
        s.perturb_defaults(&mut study);
    }
    PerturbOptions {
        study,
        samples: SAMPLES.as_slice(),
        prompts: prompt_catalog(),
        ..PerturbOptions::default()
    }
}

/// Every study's metric families, in the order their rows are written.
pub static METRIC_FAMILIES: LazyLock<Vec<&'static dyn MetricFamilies>> = LazyLock::new(|| {
    STUDIES
        .iter()
        .map(|s| *s as &'static dyn MetricFamilies)
        .collect()
});

/// [`METRIC_FAMILIES`] as the score options take them.
pub fn studies() -> Studies {
    Studies(&METRIC_FAMILIES)
}

/// Every study's report part, as the report stage takes them.
pub fn reports() -> Vec<&'static dyn StudyReport> {
    STUDIES
        .iter()
        .map(|s| *s as &'static dyn StudyReport)
        .collect()
}

/// Every study's input formats.
pub fn record_formats() -> Vec<&'static dyn RecordFormat> {
    STUDIES
        .iter()
        .flat_map(|s| s.record_formats())
        .copied()
        .collect()
}

/// The ingest format `name`: a built-in one or a study's.
pub fn format(name: &str) -> Option<ragprobe_ingest::Format> {
    ragprobe_ingest::Format::find(name, &record_formats())
}

/// Templates no one study owns: the judge's (`score --judge`), with its
/// role.
static SHARED_PROMPTS: &[(&str, &str)] = &[
    ("judge-qa", include_str!("judge/judge-qa.toml")),
    ("judge-foil", include_str!("judge/judge-foil.toml")),
];
static SHARED_ROLES: &[&str] = &["judge"];

static PROMPTS: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
    STUDIES
        .iter()
        .flat_map(|s| s.prompts())
        .chain(SHARED_PROMPTS)
        .copied()
        .collect()
});
static ROLES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    STUDIES
        .iter()
        .flat_map(|s| s.prompt_roles())
        .chain(SHARED_ROLES)
        .copied()
        .collect()
});

/// The studies' prompt templates and roles, for the template loader.
pub fn prompt_catalog() -> Catalog {
    Catalog {
        templates: &PROMPTS,
        roles: &ROLES,
    }
}
