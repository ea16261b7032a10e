//! Prompt-processing and generation tokens/s of the embedded model.
//! `cargo run --release -p ragprobe-models --example llm_speed`

use ragprobe_models::llm::local::LocalLlm;
use ragprobe_models::llm::ChatMessage;

fn main() {
    let m = LocalLlm::load_default().expect("run scripts/fetch-models.sh first");
    let doc = "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. ";
    let user = format!("Documents:\n{}\nUse the above documents to answer the subsequent question.\nQuestion: When was the Eiffel Tower completed?\nAnswer:", doc.repeat(12));
    let prompt = m.render_chat(&[ChatMessage::new("user", user)]).unwrap();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let _ = m.speed(&prompt, 4).unwrap(); // warm up
    let mut best = (0usize, f64::MAX, f64::MAX);
    for _ in 0..3 {
        let (p, pre, dec) = m.speed(&prompt, 64).unwrap();
        best = (p, best.1.min(pre), best.2.min(dec));
    }
    let (p, pre, dec) = best;
    println!("embedded {} on {threads} threads: prompt processing {:.0} tokens/s ({p} tokens in {:.2} s); generation {:.1} tokens/s (64 tokens in {:.2} s)", m.name(), p as f64 / pre, pre, 64.0 / dec, dec);
}
