//! The content-hashed Parquet artifact store (ARCHITECTURE.md).
//!
//! Stages exchange artifacts: one Parquet file each, addressed by the
//! SHA-256 of its bytes, with its execution record (the [`Manifest`]) in the
//! Parquet key-value metadata under [`MANIFEST_KEY`]. A stage invocation is
//! keyed by its [`Recipe`]; when the store already holds an action record for
//! that key, the stage is not run again and its outputs are returned.
//!
//! Layout of a store directory:
//!
//! ```text
//! objects/<id>.parquet   artifacts, immutable, named by the SHA-256 of their bytes
//! actions/<key>.json     action records: recipe key -> output artifact ids
//! pins/<id>              imported artifacts, kept by `gc` although no action made them
//! indexes/               derived data (search indexes), keyed by their inputs
//! tmp/                   files being written; renamed into place when complete
//! log/runs.jsonl         wall-clock run log (never hashed)
//! ```

pub mod column;
pub mod domain;
mod error;
mod kind;
pub mod kinds;
mod manifest;
mod sink;
mod store;
mod writer;

pub use domain::{condition, DocSource, Expected, GenAdvStatus, Vocabulary};
pub use error::{ArtifactError, Result};
pub use kind::{Kind, KindInfo};
pub use kinds::{
    CaseDoc, CaseRow, Cases, ContextRow, Contexts, Corpus, CorpusRow, EmbeddingRow, Embeddings,
    GenAdv, GenAdvRow, MatchFlags, MetricRow, Metrics, QuestionRow, Questions, ResponseRow,
    Responses, ScoreRow, Scores, StudyCells, VerdictRow, Verdicts,
};
pub use manifest::{Manifest, Recipe, MANIFEST_KEY};
pub use sink::{
    read, read_columns, read_columns_batched, rows_of, write_all, writer, Sink, BATCH_ROWS,
};
pub use store::{
    check_record, check_record_against, file_stamp, footer_metadata_len, manifest_from_footer,
    ActionLock, ActionRecord, Fallback, GcReport, ObjectInfo, OutputRef, Store, VerifyProblem,
};
pub use writer::{ArtifactWriter, Written};

/// ragprobe's version, recorded in every manifest.
pub const RAGPROBE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Regular files under `dir`, recursively, in directory order (never a FIFO
/// or a device, which would block a reader); a directory reached twice
/// (a symlink loop such as `x -> .`) is walked once. Unreadable entries are
/// skipped: callers hash or read what is listed and report their own errors.
pub fn regular_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(
        dir: &std::path::Path,
        out: &mut Vec<std::path::PathBuf>,
        seen: &mut std::collections::HashSet<std::path::PathBuf>,
    ) {
        let Ok(real) = std::fs::canonicalize(dir) else {
            return;
        };
        if !seen.insert(real) {
            return;
        }
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out, seen);
                } else if p.is_file() {
                    out.push(p);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out, &mut std::collections::HashSet::new());
    out
}

/// An error and its causes on one line (`a: b: c`), a cause whose text an
/// earlier part already holds said once (libraries often repeat their
/// source in their own message).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    parts.join(": ")
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    // Into a buffer, not through `hex::encode`'s char iterator: request
    // ids are hashed once per scored row.
    let mut out = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(bytes), &mut out).expect("64 hex digits");
    String::from_utf8(out.to_vec()).expect("hex is ASCII")
}

/// Lowercase hex SHA-256 of everything `reader` yields, streamed.
pub fn sha256_reader(mut reader: impl std::io::Read) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Serialise a JSON value canonically: object keys sorted (serde_json's
/// default map is ordered), no insignificant whitespace, numbers as serde_json
/// prints them. Equal values give equal bytes.
pub fn canonical_json(value: &serde_json::Value) -> String {
    // serde_json without `preserve_order` stores objects in a BTreeMap, so
    // serialisation is already key-sorted; re-parse guards values built from
    // other maps.
    serde_json::to_string(value).expect("a serde_json::Value always serialises")
}

/// True if `s` is a full artifact id (64 lowercase hex digits).
pub fn is_full_id(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    /// The FIPS 180-2 example digests, as lowercase hex.
    #[test]
    fn sha256_hex_is_the_lowercase_digest() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            super::sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
