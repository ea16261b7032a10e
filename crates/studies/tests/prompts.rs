//! The studies' prompt templates: each parses with the catalog's roles,
//! ids are unique and match their file names, Soft and Strict pair.

use ragprobe_models::prompts::Template;

#[test]
fn every_template_parses_and_declares_a_known_role() {
    let catalog = ragprobe_studies::prompt_catalog();
    let all = Template::all(&catalog);
    assert_eq!(all.len(), catalog.templates.len());
    assert!(all.len() >= 27);
    for (t, (id, _)) in all.iter().zip(catalog.templates) {
        assert_eq!(&t.id, id, "a template's id is its file name");
        assert!(
            catalog.roles.contains(&t.role.as_str()),
            "{} declares role `{}`",
            t.id,
            t.role
        );
        if matches!(t.role.as_str(), "soft" | "strict") {
            assert!(
                !t.variant.is_empty(),
                "{}: Soft/Strict need a variant to be paired",
                t.id
            );
        }
    }
    let mut ids: Vec<&str> = catalog.templates.iter().map(|(id, _)| *id).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "template ids are unique");
    for id in [
        "imperfect-normal",
        "imperfect-unans",
        "imperfect-conflict",
        "imperfect-closed-book",
        "genadv-answer-sentence",
        "conflict-passage",
        "nomiracl-vanilla",
        "stress-soft",
        "stress-strict",
        "rgb-en",
        "faitheval-unanswerable",
    ] {
        assert!(all.iter().any(|t| t.id == id), "{id}");
    }
}

#[test]
fn soft_and_strict_differ_only_in_the_policy_clause() {
    let catalog = ragprobe_studies::prompt_catalog();
    let (s, t) = (
        Template::load("stress-soft", None, &catalog).unwrap(),
        Template::load("stress-strict", None, &catalog).unwrap(),
    );
    assert_eq!(s.messages.len(), t.messages.len());
    assert_eq!(s.messages[1], t.messages[1]);
    let (a, b): (Vec<&str>, Vec<&str>) = (
        s.messages[0].content.lines().collect(),
        t.messages[0].content.lines().collect(),
    );
    assert_eq!(a.len(), b.len());
    assert_eq!(
        a.iter().zip(&b).filter(|(x, y)| x != y).count(),
        1,
        "exactly one line (the policy clause) differs"
    );
}

#[test]
fn nomiracl_renders_the_passages_in_case_order() {
    let t = Template::load(
        "nomiracl-vanilla",
        None,
        &ragprobe_studies::prompt_catalog(),
    )
    .unwrap();
    let doc = |id: &str, title: &str, text: &str| ragprobe_artifact::CaseDoc {
        doc_id: id.into(),
        title: Some(title.into()),
        text: text.into(),
        source: ragprobe_artifact::DocSource::Judged,
        has_answer: None,
    };
    let case = ragprobe_artifact::CaseRow {
        question: "Q?".into(),
        docs: vec![doc("b", "B", "second"), doc("a", "A", "first")],
        ..Default::default()
    };
    let m = t.render_case(&case);
    let u = &m.last().unwrap().content;
    assert!(u.contains("[1] B: second\n\n[2] A: first"), "{u}");
    assert!(u.contains("QUESTION:\nQ?"), "{u}");
}
