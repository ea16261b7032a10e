//! The embedded GGUF model: chat template, tokenizer, deterministic greedy output.

use ragprobe_models::llm::local::LocalLlm;
use ragprobe_models::llm::{ChatMessage, GenSettings};
use ragprobe_models::paths;

fn model() -> Option<LocalLlm> {
    let p = paths::smollm2_gguf();
    if !p.is_file() {
        eprintln!(
            "SKIPPED: {} not found (run `bash scripts/fetch-models.sh`; `make test` does)",
            p.display()
        );
        return None;
    }
    Some(LocalLlm::load(&p).unwrap())
}

#[test]
fn answers_a_fixture_prompt_deterministically() {
    let Some(m) = model() else { return };
    let msgs = vec![ChatMessage::new(
        "user",
        "Answer the following question. Q: What is the capital of France? A:",
    )];
    let prompt = m.render_chat(&msgs).unwrap();
    // The GGUF's own template adds SmolLM2's default system prompt.
    assert!(prompt.starts_with("<|im_start|>system\n"), "{prompt}");
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
    let ids = m.encode(&prompt).unwrap();
    assert_eq!(ids[0], 1, "<|im_start|> is one special token (id 1)");
    let s = GenSettings {
        max_tokens: 16,
        ..Default::default()
    };
    let a = m.chat(&msgs, &s).unwrap();
    let b = m.chat(&msgs, &s).unwrap();
    assert_eq!(a, b, "greedy decoding is deterministic");
    assert!(!a.text.trim().is_empty());
    assert!(a.completion_tokens.unwrap() <= 16);
    assert_eq!(a.prompt_tokens.unwrap() as usize, ids.len());
    eprintln!("SmolLM2 says: {:?} ({})", a.text, a.finish_reason);
}

#[test]
fn digits_are_split_and_text_round_trips() {
    let Some(m) = model() else { return };
    let ids = m.encode("In 1889 the tower opened.").unwrap();
    let digits: Vec<u32> = m.encode("1889").unwrap();
    assert_eq!(digits.len(), 4, "one token per digit");
    assert!(ids.windows(4).any(|w| w == digits.as_slice()));
}

#[test]
fn stop_strings_and_max_tokens() {
    let Some(m) = model() else { return };
    let msgs = vec![ChatMessage::new(
        "user",
        "Count from one to twenty in words, separated by commas.",
    )];
    let g = m
        .chat(
            &msgs,
            &GenSettings {
                max_tokens: 5,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        (g.finish_reason.as_str(), g.completion_tokens),
        ("length", Some(5))
    );
    let g = m
        .chat(
            &msgs,
            &GenSettings {
                max_tokens: 40,
                stop: vec![",".into()],
                ..Default::default()
            },
        )
        .unwrap();
    assert!(!g.text.contains(','), "{:?}", g.text);
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let e = LocalLlm::load(std::path::Path::new("/nope/model.gguf"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/nope/model.gguf") && e.contains("fetch-models.sh"),
        "{e}"
    );
}

/// Every answer of `chats` (in request order) with the given engine setup.
fn answers(
    (threads, batch, prefix, packed): (usize, usize, usize, bool),
    chats: &[Vec<ChatMessage>],
    s: &GenSettings,
) -> Vec<Vec<u32>> {
    let mut m = LocalLlm::load_with_threads(&paths::smollm2_gguf(), threads).unwrap();
    m.set_prefix_reuse(prefix);
    m.set_packed(packed);
    let refs: Vec<&[ChatMessage]> = chats.iter().map(|c| c.as_slice()).collect();
    let mut out = vec![None; chats.len()];
    m.chat_all(&refs, s, batch, &mut |i, g| {
        assert!(out[i].is_none(), "request {i} answered twice");
        out[i] = Some(g.unwrap().token_ids.unwrap());
        Ok(())
    })
    .unwrap();
    out.into_iter()
        .map(|o| o.expect("every request answered"))
        .collect()
}

#[test]
fn batched_outputs_are_identical_to_unbatched_across_threads_prefix_reuse_and_packed_weights() {
    if model().is_none() {
        return;
    }
    // One template, different questions and passages: the shared prefix
    // (system prompt and instructions) is reused, the rest differs.
    let passages = [
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "Mount Everest, at 8,849 metres, is Earth's highest mountain above sea level.",
        "The Amazon is the largest rainforest, spanning nine countries in South America.",
        "Marie Curie won Nobel Prizes in both physics and chemistry.",
        "The Great Wall of China stretches over 21,000 kilometres.",
        "Honey never spoils; edible honey was found in ancient Egyptian tombs.",
        "Jupiter is the largest planet in the Solar System.",
    ];
    let chats: Vec<Vec<ChatMessage>> = passages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![ChatMessage::new(
                "user",
                format!("Answer the question using the document.\nDocument: {p}\nQuestion: what is fact number {i} about?\nAnswer:"),
            )]
        })
        .collect();
    let s = GenSettings {
        max_tokens: 20,
        ..Default::default()
    };
    // The reference: one request at a time, f32 weights only.
    let reference = answers((1, 1, 0, false), &chats, &s);
    assert!(reference.iter().all(|r| !r.is_empty()));
    for setup in [
        (1, 1, 0, true),
        (2, 3, 4, true),
        (1, 8, 0, true),
        (2, 8, 1, false),
        (2, 8, 1, true),
    ] {
        let got = answers(setup, &chats, &s);
        assert_eq!(
            got, reference,
            "(threads, batch, prefix entries, packed weights) = {setup:?}"
        );
    }
}
