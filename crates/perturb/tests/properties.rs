//! Property tests of the perturbation rules.

use proptest::prelude::*;
use ragprobe_artifact::QuestionRow;
use ragprobe_matching::has_answer;
use ragprobe_perturb::foil::FoilPicker;
use ragprobe_perturb::text::{join_sentences, replace_aliases, split_sentences};
use ragprobe_perturb::{insert_at_random_slot, rng_for};

proptest! {
    /// An inserted document is never lost or duplicated, and the others keep their order.
    #[test]
    fn insertion_keeps_every_document_once(n in 0usize..12, seed in any::<u64>()) {
        let mut docs: Vec<usize> = (0..n).collect();
        let slot = insert_at_random_slot(&mut docs, 999, &mut rng_for(seed, "q", "slot"));
        prop_assert!(slot <= n);
        prop_assert_eq!(docs.len(), n + 1);
        prop_assert_eq!(docs.iter().filter(|&&d| d == 999).count(), 1);
        prop_assert_eq!(docs[slot], 999);
        let rest: Vec<usize> = docs.iter().copied().filter(|&d| d != 999).collect();
        prop_assert_eq!(rest, (0..n).collect::<Vec<_>>());
    }

    /// Editing the answer sentence changes nothing outside it.
    #[test]
    fn edit_changes_only_the_answer_sentence(
        before in proptest::collection::vec("[A-Z][a-z]{2,8}( [a-z]{2,8}){0,4} done\\.", 0..4),
        after in proptest::collection::vec("[A-Z][a-z]{2,8}( [a-z]{2,8}){0,4} done\\.", 0..4),
        answer in "[A-Z][a-z]{3,8}",
        foil in "[A-Z][a-z]{3,8}",
    ) {
        prop_assume!(answer.to_lowercase() != foil.to_lowercase());
        prop_assume!(!before.iter().chain(&after).any(|s| s.to_lowercase().contains(&answer.to_lowercase())));
        let sentence = format!("The answer is {answer} today.");
        let mut all = before.clone();
        all.push(sentence.clone());
        all.extend(after.clone());
        let clean = join_sentences(&all);
        let sentences = split_sentences(&clean);
        prop_assert_eq!(&sentences, &all);
        let (edited_sentence, n) = replace_aliases(&sentence, std::slice::from_ref(&answer), &foil);
        prop_assert_eq!(n, 1);
        let mut edited_all = before.clone();
        edited_all.push(edited_sentence);
        edited_all.extend(after);
        let edited = join_sentences(&edited_all);
        prop_assert_eq!(edited.replace(&foil, &answer), clean);
        prop_assert!(!has_answer(std::slice::from_ref(&answer), &edited));
    }

    /// A foil never matches a gold alias.
    #[test]
    fn foil_is_never_a_gold_alias(answers in proptest::collection::vec("[a-c]{1,3}( [a-c]{1,2})?", 2..30), seed in any::<u64>()) {
        let qs: Vec<QuestionRow> = answers.iter().enumerate().map(|(i, a)| QuestionRow {
            qid: format!("q{i}"), dataset: "p".into(), lang: "en".into(), question: "?".into(),
            answers: vec![a.clone(), format!("{a} x")], ..Default::default()
        }).collect();
        let mut picker = FoilPicker::new(&qs, None);
        for q in &qs {
            if let Some(f) = picker.pick(q, &mut rng_for(seed, &q.qid, "foil")).unwrap() {
                prop_assert!(!has_answer(&q.answers, &f.text), "foil {:?} matches {:?}", f.text, q.answers);
                prop_assert!(!q.answers.iter().any(|g| has_answer(std::slice::from_ref(&f.text), g)));
            }
        }
    }
}
