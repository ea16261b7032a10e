//! The case browser's reading of a response, as each study gives it
//! (`StudyReport::verdict`, `tags`), through the report stage's browser.

use ragprobe_artifact::{Expected, ScoreRow};
use ragprobe_report::browser::{tags, verdict};

fn score(cond: &str, prompt: &str) -> ScoreRow {
    ScoreRow {
        case_id: "c".into(),
        qid: "q".into(),
        dataset: "d".into(),
        lang: "en".into(),
        condition: cond.into(),
        prompt: prompt.into(),
        model: "m".into(),
        request_id: "r".into(),
        ..Default::default()
    }
}

#[test]
fn nomiracl_says_whether_the_label_fits_the_subset() {
    let s = ragprobe_studies::reports();
    let mut r = score("nomiracl", "nomiracl-vanilla");
    r.expected = Expected::NonRelevant;
    r.study.nomiracl_label = Some("idk".into());
    assert_eq!(
        verdict(&r, &s),
        (
            "said “I don't know”: right for the non-relevant subset".into(),
            Some(true)
        )
    );
    assert!(tags(&r, &s, None).contains(&"nomiracl: idk".to_string()));
    r.study.nomiracl_label = Some("yes".into());
    assert_eq!(verdict(&r, &s).1, Some(false));
    r.expected = Expected::Relevant;
    r.study.nomiracl_label = Some("maybe".into());
    assert_eq!(
        verdict(&r, &s),
        (
            "said “invalid”: wrong for the relevant subset".into(),
            Some(false)
        )
    );
}

#[test]
fn rgb_counts_detection_correction_and_rejection() {
    let s = ragprobe_studies::reports();
    let mut r = score("rgb-counterfactual-0", "rgb-en");
    r.study.rgb_fact_error = Some(true);
    r.study.rgb_correct = Some(false);
    assert_eq!(
        verdict(&r, &s),
        ("error detected: yes · corrected: no".into(), Some(false))
    );
    assert!(tags(&r, &s, None).contains(&"error detected".to_string()));
    // Elsewhere RGB's correctness and rejection count as right and abstained.
    let mut r = score("rgb-noise-0.4", "rgb-en");
    r.flags.accuracy = Some(false);
    r.study.rgb_correct = Some(true);
    assert_eq!(verdict(&r, &s), ("correct".into(), Some(true)));
    assert_eq!(verdict(&r, &[]), ("wrong".into(), Some(false)));
    let mut r = score("rgb-noise-1", "rgb-en");
    r.expected = Expected::Unanswerable;
    r.flags.says_unanswerable = Some(false);
    r.study.rgb_rejection = Some(true);
    assert_eq!(verdict(&r, &s).1, Some(true));
    assert!(!tags(&r, &s, None).contains(&"hallucinated unanswerable".to_string()));
}

#[test]
fn imperfect_tags_the_conflict_transitions() {
    let s = ragprobe_studies::reports();
    let mut r = score("add-conflict", "imperfect-normal");
    r.flags.accuracy = Some(false);
    r.flags.foil_any = Some(true);
    let t = tags(&r, &s, Some(true));
    assert!(t.contains(&"A→C".to_string()), "{t:?}");
    assert!(
        t.contains(&"lost by the added document".to_string()),
        "{t:?}"
    );
    assert!(!tags(&r, &s, Some(false)).contains(&"A→C".to_string()));
}

#[test]
fn faitheval_reads_its_own_verdicts() {
    let s = ragprobe_studies::reports();
    let mut r = score("faitheval-unanswerable", "faitheval-unanswerable");
    r.expected = Expected::Unanswerable;
    r.flags.accuracy = Some(true);
    r.flags.em = Some(false);
    r.flags.says_unanswerable = Some(false);
    assert_eq!(
        verdict(&r, &s),
        (
            "abstained as the context asks (not the strict phrase)".into(),
            Some(true)
        )
    );
    assert!(!tags(&r, &s, None).contains(&"hallucinated unanswerable".to_string()));
    let mut r = score("faitheval-counterfactual", "faitheval-counterfactual");
    r.mcq_choice = Some("B".into());
    r.flags.accuracy = Some(false);
    assert_eq!(
        verdict(&r, &s),
        (
            "chose option B: not the one the context supports".into(),
            Some(false)
        )
    );
    assert!(tags(&r, &s, None).contains(&"unfaithful: counterfactual".to_string()));
}
