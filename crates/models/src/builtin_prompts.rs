//! The studies' prompt templates, compiled into the binary from
//! `pipelines/prompts/` so that `ragprobe` works from any directory.
//! (A template file given by path, or `--prompts-dir`, overrides these.)

/// (id, TOML text) of every built-in template.
pub const BUILTIN: &[(&str, &str)] = &[
    ("conflict-passage", include_str!("../../../pipelines/prompts/conflict-passage.toml")),
    ("genadv-adversarial-passage", include_str!("../../../pipelines/prompts/genadv-adversarial-passage.toml")),
    ("genadv-adversarial-sentence", include_str!("../../../pipelines/prompts/genadv-adversarial-sentence.toml")),
    ("genadv-answer-sentence", include_str!("../../../pipelines/prompts/genadv-answer-sentence.toml")),
    ("imperfect-closed-book", include_str!("../../../pipelines/prompts/imperfect-closed-book.toml")),
    ("imperfect-conflict", include_str!("../../../pipelines/prompts/imperfect-conflict.toml")),
    ("imperfect-normal", include_str!("../../../pipelines/prompts/imperfect-normal.toml")),
    ("imperfect-unans", include_str!("../../../pipelines/prompts/imperfect-unans.toml")),
    ("nomiracl-explanation", include_str!("../../../pipelines/prompts/nomiracl-explanation.toml")),
    ("nomiracl-repeat", include_str!("../../../pipelines/prompts/nomiracl-repeat.toml")),
    ("nomiracl-role", include_str!("../../../pipelines/prompts/nomiracl-role.toml")),
    ("nomiracl-vanilla", include_str!("../../../pipelines/prompts/nomiracl-vanilla.toml")),
    ("rgb-en", include_str!("../../../pipelines/prompts/rgb-en.toml")),
    ("rgb-zh", include_str!("../../../pipelines/prompts/rgb-zh.toml")),
    ("stress-closed-book", include_str!("../../../pipelines/prompts/stress-closed-book.toml")),
    ("stress-closed-book-mcq", include_str!("../../../pipelines/prompts/stress-closed-book-mcq.toml")),
    ("stress-soft", include_str!("../../../pipelines/prompts/stress-soft.toml")),
    ("stress-soft-mcq", include_str!("../../../pipelines/prompts/stress-soft-mcq.toml")),
    ("stress-soft-v1", include_str!("../../../pipelines/prompts/stress-soft-v1.toml")),
    ("stress-soft-v2", include_str!("../../../pipelines/prompts/stress-soft-v2.toml")),
    ("stress-strict", include_str!("../../../pipelines/prompts/stress-strict.toml")),
    ("stress-strict-mcq", include_str!("../../../pipelines/prompts/stress-strict-mcq.toml")),
    ("stress-strict-v1", include_str!("../../../pipelines/prompts/stress-strict-v1.toml")),
    ("stress-strict-v2", include_str!("../../../pipelines/prompts/stress-strict-v2.toml")),
];
