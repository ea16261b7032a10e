//! MiniLM embeddings in Rust agree with sentence-transformers (reference
//! numbers made by scripts/make-embedding-reference.py from the same files).

use ragprobe_models::{cosine, paths, Embedder};

#[test]
fn embeddings_match_sentence_transformers() {
    let dir = paths::minilm_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("SKIPPED: MiniLM model not found in {} (run `bash scripts/fetch-models.sh`; `make test` does)", dir.display());
        return;
    }
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("data/minilm-reference.json")).unwrap();
    let sentences: Vec<&str> = reference["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let expected: Vec<Vec<f32>> = reference["embeddings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect();
    let embedder = Embedder::load(&dir).unwrap();
    // Batches of 3 mix lengths, so padding and masking are exercised.
    let got = embedder.embed(&sentences, 3).unwrap();
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        let c = cosine(g, e);
        assert!(
            c >= 0.999,
            "sentence {i} ({:?}): cosine {c} < 0.999",
            sentences[i]
        );
        let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not L2-normalised: {norm}");
    }
    // Batch composition does not change an embedding.
    let alone = embedder.embed_batch(&[sentences[2]]).unwrap();
    assert!(cosine(&alone[0], &got[2]) > 0.99999);
}

#[test]
fn similarity_orders_related_texts_above_unrelated() {
    let dir = paths::minilm_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("SKIPPED: MiniLM model not found in {}", dir.display());
        return;
    }
    let e = Embedder::load(&dir).unwrap();
    let related = e
        .similarity(
            "Who designed the Eiffel Tower?",
            "Gustave Eiffel's company built the tower in Paris.",
        )
        .unwrap();
    let unrelated = e
        .similarity(
            "Who designed the Eiffel Tower?",
            "Photosynthesis converts light into chemical energy.",
        )
        .unwrap();
    assert!(related > unrelated + 0.2, "{related} vs {unrelated}");
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let err = Embedder::load(std::path::Path::new("/nonexistent/minilm"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent/minilm/model.safetensors") && err.contains("fetch-models.sh"),
        "{err}"
    );
}
