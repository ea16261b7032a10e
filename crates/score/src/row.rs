//! Per-response scores (see schemas/scores.md for each flag's definition).

use ragprobe_artifact::{CaseRow, DocSource, ScoreRow};
use ragprobe_matching::parse::{says_conflict_normalized, says_unanswerable_normalized, ParseMode};
use ragprobe_matching::{normalize_answer, squad_scores_normalized};

use crate::metrics::Studies;
use crate::PromptInfo;

/// Score one response (`None` = the request failed) to one case, under
/// the prompt's declared study and role, parsing with `mode`; the
/// registered `studies` add their own judgements ([`crate::metrics::MetricFamilies::judge`]).
pub fn score(
    case: &CaseRow,
    prompt: &PromptInfo,
    model: &str,
    request_id: &str,
    response: Option<&str>,
    mode: ParseMode,
    studies: Studies,
) -> ScoreRow {
    let mut row = unscored_row(case, prompt, model, request_id, response);
    let Some(text) = response else { return row };
    let has_gold = !case.answers.is_empty();
    if let (Some(options), true) = (&case.options, has_gold) {
        score_mcq(&mut row, case, options, text);
        return row;
    }
    // The response normalised once, for the SQuAD scores and the flags.
    let normalized = normalize_answer(text);
    if has_gold && matches!(case.lang.as_str(), "zh" | "ja") {
        score_cjk(&mut row, case, text);
    } else if has_gold {
        let (acc, em, f1) = squad_scores_normalized(&normalized, &case.answers);
        row.flags.accuracy = Some(acc);
        row.flags.em = Some(em);
        row.flags.f1 = Some(f1);
    }
    row.flags.says_unanswerable = Some(says_unanswerable_normalized(&normalized));
    row.flags.says_conflict = Some(says_conflict_normalized(&normalized));
    score_foil(&mut row, case, &normalized);
    for s in studies.0 {
        s.judge(case, text, mode, &mut row);
    }
    row
}

/// The row of one response before any flag is set: the case, prompt and
/// request fields, whether the retrieved documents hold an answer, and
/// whether the request failed.
fn unscored_row(
    case: &CaseRow,
    prompt: &PromptInfo,
    model: &str,
    request_id: &str,
    response: Option<&str>,
) -> ScoreRow {
    let retrieved: Vec<_> = case
        .docs
        .iter()
        .filter(|d| d.source == DocSource::Retrieved)
        .collect();
    let answerable =
        (!retrieved.is_empty()).then(|| retrieved.iter().any(|d| d.has_answer == Some(true)));
    ScoreRow {
        case_id: case.case_id.clone(),
        qid: case.qid.clone(),
        dataset: case.dataset.clone(),
        lang: case.lang.clone(),
        condition: case.condition.clone(),
        prompt: prompt.id.clone(),
        prompt_study: prompt.study.clone(),
        prompt_role: prompt.role.clone(),
        prompt_variant: prompt.variant.clone(),
        model: model.into(),
        request_id: request_id.into(),
        expected: case.expected,
        answer_position: case.answer_position.clone(),
        answerable,
        failed: response.is_none(),
        foil: case.foil.clone(),
        response: response.map(String::from),
        ..Default::default()
    }
}

/// Multiple choice: the option chosen by letter, text or both; naming
/// two options is neither the reference nor the foil.
fn score_mcq(row: &mut ScoreRow, case: &CaseRow, options: &[(String, String)], text: &str) {
    use ragprobe_matching::mcq::{mcq_choice, Choice};
    let label_of = |t: &str| options.iter().find(|(_, o)| o == t).map(|(l, _)| l.clone());
    let gold = case.answers.iter().find_map(|a| label_of(a));
    let foil = case.foil.as_deref().and_then(label_of);
    let choice = mcq_choice(text, options);
    let picked = match &choice {
        Choice::One(l) => Some(l.clone()),
        _ => None,
    };
    row.mcq_choice = Some(match &choice {
        Choice::One(l) => l.clone(),
        Choice::Several(_) => "several".into(),
        Choice::None => "none".into(),
    });
    let ok = picked.is_some() && picked == gold;
    row.flags.accuracy = Some(ok);
    row.flags.em = Some(ok);
    row.flags.f1 = Some(if ok { 1.0 } else { 0.0 });
    row.flags.says_unanswerable = Some(ragprobe_matching::parse::says_unanswerable(text));
    row.flags.says_conflict = Some(ragprobe_matching::parse::says_conflict(text));
    if case.foil.is_some() {
        let f = picked.is_some() && picked == foil;
        row.flags.foil_any = Some(f);
        row.flags.foil_only = Some(f);
        row.flags.foil_exact = Some(f);
    }
}

/// Chinese and Japanese: no spaces between words, so compare
/// NFKC-normalised characters (ragprobe_matching::mcq::normalize_cjk);
/// F1 over characters.
fn score_cjk(row: &mut ScoreRow, case: &CaseRow, text: &str) {
    let p = ragprobe_matching::mcq::normalize_cjk(text);
    row.flags.accuracy = Some(ragprobe_matching::mcq::accuracy_cjk(text, &case.answers));
    row.flags.em = Some(
        case.answers
            .iter()
            .any(|g| ragprobe_matching::mcq::normalize_cjk(g) == p),
    );
    let pc: Vec<char> = p.chars().collect();
    row.flags.f1 = Some(
        case.answers
            .iter()
            .map(|g| {
                ragprobe_matching::overlap_f1(
                    &pc,
                    &ragprobe_matching::mcq::normalize_cjk(g)
                        .chars()
                        .collect::<Vec<_>>(),
                )
            })
            .fold(0.0, f64::max),
    );
}

/// The foil flags, when the case has a foil: the response contains it
/// (`foil_any`), contains it but not the reference (`foil_only`), or is
/// exactly it after normalisation (`foil_exact`).
fn score_foil(row: &mut ScoreRow, case: &CaseRow, normalized: &str) {
    if let Some(foil) = &case.foil {
        // `accuracy` with the foil as the one alias.
        let nf = normalize_answer(foil);
        let matches_foil = !nf.is_empty() && normalized.contains(&nf);
        row.flags.foil_any = Some(matches_foil);
        row.flags.foil_only = Some(matches_foil && !row.flags.accuracy.unwrap_or(false));
        row.flags.foil_exact = Some(!nf.is_empty() && normalized == nf);
    }
}
