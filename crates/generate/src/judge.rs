//! A judge model's verdicts on responses (`score --judge`): each judged
//! response rendered with a judge template (`judge-qa`: question, gold
//! answers, response) and sent like any generation — journaled, cached,
//! resumed, never sent twice. The judge's replies are a `responses`
//! artifact of their own (recipe stage `judge`, input the judged
//! responses), so its lineage is the store's like every other artifact.
//!
//! The cascade (`JudgeOn::Disagreements`, the default): a response is
//! sent only when the string matchers disagree on it — SQuAD exact match,
//! SQuAD substring accuracy and the DPR `has_answer` on the response. Where
//! all three agree the judge is unlikely to change the decision, and not
//! asking saves its cost; the summary says what judging every row would
//! have cost.

use ragprobe_artifact::{
    canonical_json, kinds, read, write_all, CaseRow, Cases, Recipe, ResponseRow, Responses, Store,
    Written,
};
use ragprobe_models::llm::session::ModelSession;
use ragprobe_models::llm::{ChatMessage, GenSettings};
use ragprobe_models::tokens::TokenCounter;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};

use crate::{BackendSpec, GenerateError, Result, Template};

/// Version of the judge step's logic; part of its recipe.
pub const JUDGE_VERSION: u32 = 1;

/// Which responses the judge sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum JudgeOn {
    /// Only those on which exact match, substring accuracy and `has_answer` disagree.
    #[default]
    Disagreements,
    /// Every response with gold answers.
    All,
}

impl JudgeOn {
    /// The name the recipe records.
    pub fn name(self) -> &'static str {
        match self {
            JudgeOn::Disagreements => "disagreements",
            JudgeOn::All => "all",
        }
    }
}

/// How to judge.
#[derive(Debug, Clone)]
pub struct JudgeOptions {
    /// The judge template (`judge-qa`).
    pub template: Template,
    /// The template for a case with a foil (`judge-foil`: gold, foil, both
    /// or neither); None: such cases are judged with `template` too.
    pub foil_template: Option<Template>,
    /// The judge model.
    pub backend: BackendSpec,
    /// Its settings (temperature 0 and a short `max_tokens` suit a verdict).
    pub settings: GenSettings,
    /// Which responses are sent.
    pub on: JudgeOn,
    /// Show a progress bar.
    pub progress: bool,
}

/// What judging one responses artifact did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JudgeSummary {
    /// Responses with gold answers and a text: those a judge can grade.
    pub judgeable: u64,
    /// Those sent to the judge (all, or the disagreements).
    pub judged: u64,
    /// Of those, answered before this run (journal or cache).
    pub cached: u64,
    /// Answered by this run.
    pub new: u64,
    /// Failed after retries (no verdict; the next run retries them).
    pub failed: u64,
    /// Prompt and completion tokens of the judged requests, as reported.
    pub prompt_tokens: u64,
    /// See `prompt_tokens`.
    pub completion_tokens: u64,
    /// Prompt tokens judging every judgeable response would take (4
    /// characters a token).
    pub all_prompt_tokens: u64,
}

/// The judge's replies to one responses artifact.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The `responses` artifact of the judge's replies (one row per judged
    /// response, its `case_id` the judged case).
    pub judgements: Written,
    /// The model whose responses were judged.
    pub judged_model: String,
    /// The prompt template they answered.
    pub judged_prompt: String,
    /// The counts.
    pub summary: JudgeSummary,
}

/// The three string matchers (exact match, substring accuracy,
/// `has_answer`) disagree on whether `text` gives one of `answers`.
fn matchers_disagree(answers: &[String], text: &str) -> bool {
    let em = ragprobe_matching::squad::exact_match(text, answers);
    let acc = ragprobe_matching::squad::accuracy(text, answers);
    let has = ragprobe_matching::has_answer(answers, text);
    !(em == acc && acc == has)
}

/// `text` is judged: `on` is `All`, or the matchers disagree on the gold
/// answers, or (with a foil) on the foil, or it matches both.
fn selected(on: JudgeOn, answers: &[String], foil: Option<&str>, text: &str) -> bool {
    if on == JudgeOn::All || matchers_disagree(answers, text) {
        return true;
    }
    foil.is_some_and(|f| {
        let f = [f.to_string()];
        matchers_disagree(&f, text)
            || (ragprobe_matching::squad::accuracy(text, answers)
                && ragprobe_matching::squad::accuracy(text, &f))
    })
}

/// One response to judge: the row, the template it is rendered with, the
/// messages.
type Picked<'r> = (&'r ResponseRow, &'r Template, Vec<ChatMessage>);

/// The responses sent to the judge (with their rendered messages), counting
/// the gradable ones and what judging them all would take.
fn pick<'r>(
    rows: &'r [ResponseRow],
    cases: &HashMap<String, CaseRow>,
    opts: &'r JudgeOptions,
    summary: &mut JudgeSummary,
) -> Result<Vec<Picked<'r>>> {
    let mut picked = Vec::new();
    for r in rows {
        let (Some(text), Some(case)) = (r.text.as_deref(), cases.get(&r.case_id)) else {
            continue;
        };
        if case.answers.is_empty() {
            continue;
        }
        let foil = case.foil.as_deref().filter(|f| !f.trim().is_empty());
        let template = match (foil, &opts.foil_template) {
            (Some(_), Some(t)) => t,
            _ => &opts.template,
        };
        let vars: BTreeMap<&str, String> = [
            ("question", case.question.clone()),
            ("answers", case.answers.join(" | ")),
            ("foil", foil.unwrap_or_default().to_string()),
            ("response", text.to_string()),
        ]
        .into_iter()
        .collect();
        let msgs = template.render_vars(&vars);
        summary.judgeable += 1;
        summary.all_prompt_tokens += TokenCounter::Approx.count(&msgs)?;
        if selected(opts.on, &case.answers, foil, text) {
            picked.push((r, template, msgs));
        }
    }
    Ok(picked)
}

/// Judge the responses of `responses` (an id or prefix).
pub fn judge(store: &Store, responses: &str, opts: &JudgeOptions) -> Result<Judged> {
    let rid = store.resolve_kind(responses, kinds::RESPONSES)?;
    let m = store.manifest(&rid)?;
    let cases_id =
        m.recipe.inputs.first().cloned().ok_or_else(|| {
            GenerateError::Invalid(format!("responses {rid} records no cases input"))
        })?;
    let cases: HashMap<String, CaseRow> = read::<Cases>(store, &cases_id)?
        .into_iter()
        .map(|c| (c.case_id.clone(), c))
        .collect();
    let rows = read::<Responses>(store, &rid)?;
    let judged_model = rows.first().map(|r| r.model.clone()).unwrap_or_default();
    let judged_prompt = rows.first().map(|r| r.template.clone()).unwrap_or_default();
    let t = &opts.template;
    let mut summary = JudgeSummary::default();
    let picked = pick(&rows, &cases, opts, &mut summary)?;
    summary.judged = picked.len() as u64;
    let mut session = ModelSession::open(&opts.backend, &store.root().join("requests"))?;
    let model = session.id().clone();
    let mut recipe = Recipe::new(
        "judge",
        JUDGE_VERSION,
        json!({"template": {"id": t.id, "version": t.version}, "foil_template": opts.foil_template.as_ref().map(|f| json!({"id": f.id, "version": f.version})), "settings": opts.settings, "on": opts.on.name(), "backend": model.kind}),
    );
    recipe.inputs = vec![rid.clone()];
    recipe
        .resources
        .insert("model".into(), format!("{}:{}", model.kind, model.key));
    let _running = store.lock_action(&recipe)?;
    if let Some(rec) = store.cached(&recipe, &[kinds::RESPONSES])? {
        let judgements = rec.output(kinds::RESPONSES)?;
        summary.cached = summary.judged;
        return Ok(Judged {
            judgements,
            judged_model,
            judged_prompt,
            summary,
        });
    }
    let messages: Vec<Vec<ChatMessage>> = picked.iter().map(|(_, _, m)| m.clone()).collect();
    // Each request is named by its own template (a case with a foil has the foil's).
    let ids: Vec<String> = picked
        .iter()
        .flat_map(|(_, tpl, m)| {
            session.request_ids(
                (&tpl.id, tpl.version),
                std::slice::from_ref(m),
                &opts.settings,
            )
        })
        .collect();
    summary.cached = ids.iter().filter(|id| session.is_done(id)).count() as u64;
    let bar = crate::progress_bar(session.pending(&ids).len() as u64, opts.progress);
    let answers = session.run_all(&ids, &messages, &opts.settings, &mut || bar.inc(1))?;
    bar.finish_and_clear();
    let out = judgement_rows(&picked, &ids, &answers, opts, &model, &mut summary);
    let details = json!({
        "template": {"id": t.id, "version": t.version, "source": t.source, "role": t.role},
        "backend": model.kind, "model": model.name, "model_key": model.key, "settings": opts.settings,
        "judged_responses": rid, "judged_model": judged_model, "judged_prompt": judged_prompt, "on": opts.on.name(),
        "judgeable": summary.judgeable, "judged": summary.judged, "failed": summary.failed,
    });
    let judgements = write_all::<Responses>(store, &recipe, out, details)?;
    if summary.failed == 0 {
        store.record_action(&recipe, std::slice::from_ref(&judgements))?;
    }
    Ok(Judged {
        judgements,
        judged_model,
        judged_prompt,
        summary,
    })
}

/// One `responses` row per judged response (its case, the judge's
/// request and reply), counting new, failed and tokens into `summary`.
fn judgement_rows(
    picked: &[Picked<'_>],
    ids: &[String],
    answers: &[ragprobe_models::llm::session::Answer],
    opts: &JudgeOptions,
    model: &ragprobe_models::llm::backend::BackendId,
    summary: &mut JudgeSummary,
) -> Vec<ResponseRow> {
    let settings_json =
        canonical_json(&serde_json::to_value(&opts.settings).expect("settings serialise"));
    let mut out = Vec::with_capacity(ids.len());
    for (((r, t, msgs), id), a) in picked.iter().zip(ids).zip(answers) {
        let g = a.entry.generation.as_ref();
        match g {
            None => summary.failed += 1,
            Some(g) => {
                summary.new += u64::from(a.fresh);
                summary.prompt_tokens += u64::from(g.prompt_tokens.unwrap_or(0));
                summary.completion_tokens += u64::from(g.completion_tokens.unwrap_or(0));
            }
        }
        out.push(crate::response_row(
            (&r.case_id, &r.qid, &r.condition),
            id,
            t,
            model,
            msgs,
            &settings_json,
            a,
        ));
    }
    out
}
