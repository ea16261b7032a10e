use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use ragprobe_artifact::Store;
use ragprobe_score::predictions::{score_predictions, OnDuplicate, PredictionColumns};

use ragprobe_generate::judge::{judge, JudgeOn, JudgeOptions};
use ragprobe_generate::BackendSpec;
use ragprobe_score::agreement::{read_judgements, Matcher, Verdicts};
use ragprobe_score::metrics::KMatcher;
use ragprobe_score::{compare, metrics_table, score, ParseMode, ScoreOptions, Side};
use std::path::PathBuf;
use std::sync::Arc;

/// Score responses: per-row scores and every metric of the studies whose
/// conditions are present, with question-level bootstrap intervals.
///
/// Give several responses artifacts to pair runs of the same cases (e.g. the
/// closed-book baseline with the Soft and Strict runs for the misleading
/// rate). Failed requests are excluded from every denominator and counted.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ScoreArgs {
    #[command(subcommand)]
    pub sub: Option<ScoreSub>,
    /// Responses artifact(s) (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    pub responses: Vec<String>,
    /// Score predictions made elsewhere (JSONL, CSV/TSV or Parquet) instead of responses.
    #[arg(long, conflicts_with = "responses")]
    pub predictions: Option<PathBuf>,
    /// The questions or cases artifact the predictions answer.
    #[arg(long, requires = "predictions")]
    pub against: Option<String>,
    /// Predictions: id column (qid or case_id).
    #[arg(long, default_value = "id")]
    pub id_col: String,
    /// Predictions: prediction column.
    #[arg(long, default_value = "prediction")]
    pub pred_col: String,
    /// Predictions: model column (optional).
    #[arg(long)]
    pub model_col: Option<String>,
    /// Predictions: the role of the prompt that produced them (closed-book,
    /// normal, unans, conflict, soft, strict, ...), so that its metric
    /// families run; without it, accuracy/EM/F1 and the NoMIRACL/RGB rates.
    #[arg(long, requires = "predictions")]
    pub role: Option<String>,
    /// Predictions: several rows for one id (and model) are an `error` (the
    /// default, naming both lines), or keep the `first` or the `last`.
    #[arg(long, default_value = "error", value_parser = ["error", "first", "last"])]
    pub on_duplicate: String,
    /// Parse responses with kinder rules than the reference code: NoMIRACL
    /// maps curly apostrophes, backticks and carriage returns; RGB matches
    /// its phrases case-insensitively and drops the correction quirk.
    #[arg(long)]
    pub lenient: bool,
    /// Seed 000 Table 7: put only this seeded share (0 < P <= 1) of the
    /// questions with a built conflict passage into C (conflicting); the rest
    /// join NC (non-conflicting) by their base case.
    #[arg(long, value_name = "P", value_parser = crate::bounds::f64_in(0.0, 1.0, true))]
    pub conflict_share: Option<f64>,
    /// Seed 002: the matcher that defines K (closed-book-correct). `paper`
    /// uses accuracy for the main MR tables and exact match for the audit
    /// families (HOR, BCR, transitions, controls), as the paper does.
    #[arg(long, default_value_t = KMatcher::default(), value_parser = k_matchers())]
    pub k_matcher: KMatcher,
    /// Also compute every metric per group of these columns (comma-separated):
    /// question columns dataset, lang, split, subset, meta.FIELD (e.g.
    /// meta.s_pop); case columns condition, answer_position, inserted_at,
    /// expected, answerable, foil, prompt, prompt_role, prompt_variant.
    #[arg(long, value_delimiter = ',', value_name = "COL")]
    pub by: Vec<String>,
    /// Bin numeric --by columns: N = N quantile bins over the questions'
    /// values; E1,E2,... = these edges ([-inf,E1), [E1,E2), ..., [Ek,inf)).
    #[arg(long, value_name = "N|E1,E2,...", requires = "by")]
    pub bins: Option<ragprobe_score::breakdown::Bins>,
    /// Verdicts to set the string matcher against (people's labels or
    /// another tool's judge): JSON Lines, CSV, TSV or Parquet of `id` (the
    /// case id), `model` and `prompt` (optional) and `verdict` (correct |
    /// incorrect | abstained; on a case with a foil gold | foil | both |
    /// neither). Adds the `matcher` metrics: string vs verdict accuracy,
    /// disagreement and Cohen's kappa per condition.
    #[arg(long, value_name = "FILE", conflicts_with = "judge")]
    pub verdicts: Option<std::path::PathBuf>,
    /// A judge model to set the string matcher against (the `matcher`
    /// metrics, as with --verdicts): `embedded`, a .gguf path or
    /// hf:<owner>/<name>/<file> (in-process), or openai:<model>@<base URL>.
    /// Its requests are journaled and cached like generate's.
    #[arg(long, value_name = "SPEC", requires = "responses")]
    pub judge: Option<String>,
    /// The decision the headline metrics and tables take: the study's
    /// string matchers (as the papers score), or `judge`: the verdicts of
    /// --judge or --verdicts where a row has one. Either way the `matcher`
    /// metrics and breakdown set the two side by side.
    #[arg(long, default_value_t = Matcher::default(), value_parser = matchers())]
    pub matcher: Matcher,
    /// Which responses the judge sees: only those where exact match,
    /// substring accuracy and has_answer disagree, or all.
    #[arg(long, value_enum, default_value_t = JudgeOn::default(), requires = "judge")]
    pub judge_on: JudgeOn,
    /// The judge's prompt template (see `ragprobe prompts show judge-qa`).
    #[arg(long, default_value = "judge-qa", requires = "judge")]
    pub judge_prompt: String,
    /// The judge's template for a case with a foil (gold, foil, both or
    /// neither); `none` judges those with --judge-prompt too.
    #[arg(long, default_value = "judge-foil", requires = "judge")]
    pub judge_foil_prompt: String,
    /// Name of the environment variable holding the judge server's API key.
    #[arg(long, requires = "judge")]
    pub judge_api_key_env: Option<String>,
    #[command(flatten)]
    pub boot: BootArgs,
}

#[derive(Args, Debug, Clone, Copy)]
pub struct BootArgs {
    /// Bootstrap resamples for the 95% intervals (the seed-002 audit used 20,000).
    #[arg(long, default_value_t = 2000, value_parser = crate::bounds::usize_in(0, 1_000_000))]
    pub bootstrap: usize,
    /// Bootstrap seed (recorded in the artifacts).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Subcommand, Debug)]
pub enum ScoreSub {
    /// Paired difference (B - A) of a per-row metric between two runs, models,
    /// prompts or conditions, on their shared questions, with a bootstrap interval.
    Compare(CompareArgs),
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Scores artifact of side A.
    #[arg(long)]
    pub a: String,
    /// Scores artifact of side B [default: the same as A].
    #[arg(long)]
    pub b: Option<String>,
    #[arg(long)]
    pub a_model: Option<String>,
    #[arg(long)]
    pub b_model: Option<String>,
    #[arg(long)]
    pub a_prompt: Option<String>,
    #[arg(long)]
    pub b_prompt: Option<String>,
    #[arg(long)]
    pub a_condition: Option<String>,
    #[arg(long)]
    pub b_condition: Option<String>,
    /// acc, em, f1, foil_only, says_unanswerable, says_conflict, rgb_correct.
    #[arg(long, default_value = "acc")]
    pub metric: String,
    #[command(flatten)]
    pub boot: BootArgs,
}

pub fn run(store: &Store, a: ScoreArgs) -> Result<crate::StageOut> {
    no_huge_pages();
    if let Some(ScoreSub::Compare(c)) = a.sub {
        return compare_cmd(store, c);
    }
    let opts = ScoreOptions {
        bootstrap: a.boot.bootstrap,
        seed: a.boot.seed,
        parse: if a.lenient {
            ParseMode::Lenient
        } else {
            ParseMode::Reference
        },
        conflict_share: a.conflict_share,
        k_matcher: a.k_matcher,
        breakdown: (!a.by.is_empty()).then(|| ragprobe_score::breakdown::Breakdown {
            columns: a.by.clone(),
            bins: a.bins.clone().unwrap_or_default(),
        }),
        studies: ragprobe_studies::studies(),
        verdicts: verdicts(store, &a)?.map(Arc::new),
        matcher: a.matcher,
    };
    let report = if let Some(file) = &a.predictions {
        let Some(against) = &a.against else {
            bail!("--predictions needs --against <questions or cases artifact>")
        };
        let cols = PredictionColumns {
            id: a.id_col.clone(),
            prediction: a.pred_col.clone(),
            model: a.model_col.clone(),
            role: a.role.clone(),
            on_duplicate: match a.on_duplicate.as_str() {
                "first" => OnDuplicate::First,
                "last" => OnDuplicate::Last,
                _ => OnDuplicate::Error,
            },
        };
        let (report, unmatched) = score_predictions(store, file, against, &cols, &opts)?;
        if !unmatched.is_empty() {
            eprintln!(
                "{} prediction id(s) matched nothing: {}{}",
                unmatched.len(),
                unmatched
                    .iter()
                    .take(10)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                if unmatched.len() > 10 { ", …" } else { "" }
            );
        }
        report
    } else {
        if a.responses.is_empty() {
            bail!("give --responses <artifact>... (or --predictions FILE --against ARTIFACT)");
        }
        score(store, &a.responses, &opts)?
    };
    if report.failed > 0 {
        eprintln!(
            "{} failed request(s) excluded from every denominator",
            report.failed
        );
    }
    eprint!("{}", metrics_table(&report.rows));
    Ok(crate::StageOut::new(
        [
            (report.scores.kind.as_str(), report.scores.id.as_str()),
            (report.metrics.kind.as_str(), report.metrics.id.as_str()),
        ],
        report.cached,
    ))
}

/// The judge's backend from `--judge SPEC`.
fn judge_backend(store: &Store, spec: &str, api_key_env: Option<String>) -> Result<BackendSpec> {
    use ragprobe_models::llm::openai::OpenAiConfig;
    if let Some(rest) = spec.strip_prefix("openai:") {
        let Some((model, url)) = rest.rsplit_once('@') else {
            bail!("--judge openai:<model>@<base URL>, got `{spec}`");
        };
        return Ok(BackendSpec::OpenAi(OpenAiConfig {
            base_urls: vec![url.to_string()],
            model: model.to_string(),
            api_key_env,
            ..OpenAiConfig::default()
        }));
    }
    let Some(gguf) = crate::generate_cmd::local_model_file(store, Some(spec))? else {
        bail!("--judge takes embedded, a .gguf path, hf:<owner>/<name>/<file> or openai:<model>@<base URL>, got `{spec}`");
    };
    Ok(BackendSpec::Local {
        gguf,
        batch: ragprobe_models::llm::backend::DEFAULT_BATCH,
    })
}

/// The judge's verdicts on every responses artifact of `a` (see
/// [`ragprobe_generate::judge`]): each judged response's reply parsed
/// ([`read_judgements`]; an unparsed one counted, not guessed), keyed by
/// its case and the judged model and prompt; their counts printed and
/// kept in the verdicts' notes.
/// The verdicts to set against the string matchers: a file's
/// (`--verdicts`, kept in the store for the report), a judge's
/// (`--judge`), or none.
fn verdicts(store: &Store, a: &ScoreArgs) -> Result<Option<Verdicts>> {
    Ok(match (&a.verdicts, &a.judge) {
        (Some(f), _) => {
            let mut v = Verdicts::read(f)?;
            v.keep(store)?;
            Some(v)
        }
        (None, Some(spec)) => Some(judge_verdicts(store, a, spec)?),
        (None, None) => None,
    })
}

fn judge_verdicts(store: &Store, a: &ScoreArgs, spec: &str) -> Result<Verdicts> {
    let catalog = ragprobe_studies::prompt_catalog();
    let opts = JudgeOptions {
        template: ragprobe_generate::Template::load(&a.judge_prompt, None, &catalog)?,
        foil_template: match a.judge_foil_prompt.as_str() {
            "none" => None,
            t => Some(ragprobe_generate::Template::load(t, None, &catalog)?),
        },
        backend: judge_backend(store, spec, a.judge_api_key_env.clone())?,
        settings: ragprobe_models::llm::GenSettings {
            max_tokens: 24,
            temperature: 0.0,
            ..Default::default()
        },
        on: a.judge_on,
        progress: true,
    };
    let (mut entries, mut ids, mut unparsed) = (Vec::new(), Vec::new(), 0u64);
    let mut total = serde_json::Map::new();
    for r in &a.responses {
        let j = judge(store, r, &opts)?;
        let s = &j.summary;
        eprintln!(
            "judge: {} of {} gradable responses sent ({}); requests: {} new, {} cached, {} failed; tokens: {} prompt, {} completion; judging all would take ~{} prompt tokens",
            s.judged, s.judgeable, opts.on.name(), s.new, s.cached, s.failed, s.prompt_tokens, s.completion_tokens, s.all_prompt_tokens
        );
        for (key, verdict) in read_judgements(store, &j.judgements.id)? {
            match verdict {
                Some(v) => entries.push((key, v)),
                None => unparsed += 1,
            }
        }
        for (k, v) in [
            ("judgeable", s.judgeable),
            ("judged", s.judged),
            ("failed", s.failed),
            ("prompt_tokens", s.prompt_tokens),
            ("completion_tokens", s.completion_tokens),
            ("all_prompt_tokens_estimate", s.all_prompt_tokens),
        ] {
            let n = total.get(k).and_then(|x| x.as_u64()).unwrap_or(0) + v;
            total.insert(k.into(), n.into());
        }
        ids.push(j.judgements.id);
    }
    if unparsed > 0 {
        eprintln!("judge: {unparsed} repl(ies) not in the asked-for form: counted as unparsed, no verdict");
    }
    total.insert("unparsed".into(), unparsed.into());
    total.insert("on".into(), opts.on.name().into());
    total.insert("judgements".into(), ids.clone().into());
    Ok(Verdicts::from_entries(
        entries,
        ragprobe_artifact::sha256_hex(ids.join(",").as_bytes()),
        format!("judge {spec}"),
        serde_json::Value::Object(total),
    )?)
}

/// Scoring allocates and frees blocks of rows all the way through; with
/// transparent huge pages (which mimalloc asks for) the kernel backs them
/// with 2 MiB pages that are zeroed and kept whole. At a million
/// predictions (`scripts/bench-score.sh`) this took the peak RSS from
/// about 480 to 390 MiB and made the time steadier. Process-wide, so only
/// this command does it; the model runners keep huge pages.
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// `--k-matcher`'s values (listed in `--help`), named once by [`KMatcher::name`].
fn k_matchers() -> impl clap::builder::TypedValueParser<Value = KMatcher> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(KMatcher::ALL.map(KMatcher::name))
        .map(|s| KMatcher::parse(&s).expect("one of the listed names"))
}

/// `--matcher`'s values, named once by [`Matcher::name`].
fn matchers() -> impl clap::builder::TypedValueParser<Value = Matcher> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Matcher::ALL.map(Matcher::name))
        .map(|s| Matcher::parse(&s).expect("one of the listed names"))
}

/// `score compare`: one per-row metric of two sides of scores, paired by
/// question, with its bootstrap interval, as a tab-separated line.
fn compare_cmd(store: &Store, c: CompareArgs) -> Result<crate::StageOut> {
    let opts = ScoreOptions {
        bootstrap: c.boot.bootstrap,
        seed: c.boot.seed,
        ..Default::default()
    };
    let side_a = Side {
        scores: c.a.clone(),
        model: c.a_model,
        prompt: c.a_prompt,
        condition: c.a_condition,
    };
    let side_b = Side {
        scores: c.b.unwrap_or(c.a),
        model: c.b_model,
        prompt: c.b_prompt,
        condition: c.b_condition,
    };
    let r = compare(store, &side_a, &side_b, &c.metric, &opts)?;
    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    println!("metric\tquestions\tA\tB\tB-A\tci_low\tci_high");
    println!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}",
        r.metric,
        r.questions,
        f(r.a),
        f(r.b),
        f(r.diff),
        f(r.ci.map(|c| c.0)),
        f(r.ci.map(|c| c.1))
    );
    Ok(crate::StageOut::default())
}
