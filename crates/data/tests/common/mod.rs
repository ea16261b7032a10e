//! What the data tests share.

use ragprobe_artifact::Store;
use ragprobe_data::test_server::TestServer;
use ragprobe_data::DataOptions;
use ragprobe_ingest::{ingest, Format, IngestOptions};
use std::path::{Path, PathBuf};

/// Options that fetch from `server` (the hub and, as the mirror, every
/// other URL) into `dir`, without progress bars.
pub fn options(server: &TestServer, dir: &Path) -> DataOptions {
    DataOptions {
        hub_endpoint: server.url(),
        hub_token: None,
        hub_cache: dir.join("hub"),
        offline: false,
        mirror: Some(server.url()),
        data_dir: dir.join("data"),
        only: Vec::new(),
        retries: 3,
        progress: false,
    }
}

/// The ids `ragprobe ingest` gives `files` in a fresh store at `dir`, with
/// the options the pipelines' ingest steps use.
pub fn ingested_from_disk(
    dir: &Path,
    files: &[PathBuf],
    dataset: &str,
    lang: Option<&str>,
    format: Format,
    evidence: Option<PathBuf>,
) -> Vec<String> {
    let store = Store::open(dir).unwrap();
    let r = ingest(
        &store,
        &IngestOptions {
            format: Some(format),
            paths: files.to_vec(),
            dataset: Some(dataset.into()),
            lang: lang.map(String::from),
            evidence_dir: evidence,
            passage_words: 100,
            ..Default::default()
        },
    )
    .unwrap();
    r.outputs.into_iter().map(|o| o.id).collect()
}
