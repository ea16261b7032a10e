//! The step cache: a step's key is the SHA-256 of its command line, the
//! content of the files it reads and the fingerprints of the models it may
//! load (both declared by the [`StepExecutor`]); a step whose key has a
//! record with every output still stored is not run again.

use ragprobe_artifact::{canonical_json, sha256_hex, sha256_reader, Store};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{PipelineError, Result, StepInputs};

fn hash_file(path: &Path) -> Result<String> {
    let f = std::fs::File::open(path).map_err(|e| PipelineError::io(path, e))?;
    sha256_reader(f).map_err(|e| PipelineError::io(path, e))
}

/// Content hash of a declared file input: a file's SHA-256, or for a
/// directory the hash of its files' relative names and hashes. Relative
/// paths are tried from the working directory, then the pipeline's.
fn hash_input(arg: &str, base: &Path) -> Result<Option<String>> {
    let path = Path::new(arg);
    let path = if path.exists() {
        path.to_path_buf()
    } else {
        base.join(arg)
    };
    if path.is_file() {
        return hash_file(&path).map(Some);
    }
    if path.is_dir() {
        let mut entries = ragprobe_artifact::regular_files(&path);
        entries.sort();
        let mut h = String::new();
        for e in entries {
            h.push_str(&format!(
                "{}={}\n",
                e.strip_prefix(&path).unwrap_or(&e).display(),
                hash_file(&e)?
            ));
        }
        return Ok(Some(sha256_hex(h.as_bytes())));
    }
    Ok(None)
}

/// A model file's fingerprint: path, size and modification time (hashing
/// a model on every plan would cost seconds).
fn fingerprint(p: &Path) -> String {
    std::fs::metadata(p)
        .map(|m| format!("{}:{}:{:?}", p.display(), m.len(), m.modified().ok()))
        .unwrap_or_default()
}

/// The content fingerprint of a step.
pub fn step_key(pipeline_dir: &Path, argv: &[String], inputs: &StepInputs) -> Result<String> {
    let mut files = BTreeMap::new();
    for a in &inputs.files {
        if let Some(h) = hash_input(a, pipeline_dir)? {
            files.insert(a.clone(), h);
        }
    }
    let models: Vec<String> = inputs.models.iter().map(|m| fingerprint(m)).collect();
    let mut v = json!({
        "argv": argv, "files": files, "version": ragprobe_artifact::RAGPROBE_VERSION,
        "models": models,
    });
    if !inputs.engines.is_empty() {
        v["engines"] = json!(inputs.engines);
    }
    if !inputs.sources.is_empty() {
        v["sources"] = json!(inputs.sources);
    }
    Ok(sha256_hex(canonical_json(&v).as_bytes()))
}

fn record_path(store: &Store, key: &str) -> PathBuf {
    store
        .root()
        .join("pipeline-steps")
        .join(format!("{key}.json"))
}

/// The cached outputs of a step key, if every output is still stored.
pub fn cached_step(store: &Store, key: &str) -> Option<Vec<(String, String)>> {
    let text = std::fs::read_to_string(record_path(store, key)).ok()?;
    let outs: Vec<(String, String)> = serde_json::from_str(&text).ok()?;
    outs.iter()
        .all(|(_, id)| store.object_path(id).is_file())
        .then_some(outs)
}

/// Records a finished step's outputs (atomically: temp file, rename).
pub fn record_step(store: &Store, key: &str, outs: &[(String, String)]) -> Result<()> {
    let path = record_path(store, key);
    let dir = path.parent().expect("has parent");
    std::fs::create_dir_all(dir).map_err(|e| PipelineError::io(dir, e))?;
    let tmp = store.tmp_path(".step");
    let text = serde_json::to_string(outs).expect("outputs serialise");
    std::fs::write(&tmp, text).map_err(|e| PipelineError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| PipelineError::io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(files: &[&str], models: &[PathBuf]) -> StepInputs {
        StepInputs {
            files: files.iter().map(|s| s.to_string()).collect(),
            models: models.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn the_key_follows_file_contents_and_models_not_other_arguments() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("in.jsonl");
        std::fs::write(&f, "a").unwrap();
        let fs = f.to_str().unwrap();
        let argv = vec!["ingest".to_string(), fs.to_string()];
        let k1 = step_key(d.path(), &argv, &inputs(&[fs], &[])).unwrap();
        assert_eq!(k1, step_key(d.path(), &argv, &inputs(&[fs], &[])).unwrap());
        std::fs::write(&f, "b").unwrap();
        let k2 = step_key(d.path(), &argv, &inputs(&[fs], &[])).unwrap();
        assert_ne!(k1, k2, "the key follows the file's bytes");
        // An argument that is not a declared input is not hashed.
        let undeclared = step_key(d.path(), &argv, &inputs(&[], &[])).unwrap();
        std::fs::write(&f, "c").unwrap();
        assert_eq!(
            undeclared,
            step_key(d.path(), &argv, &inputs(&[], &[])).unwrap()
        );
        let m = d.path().join("model.gguf");
        std::fs::write(&m, "weights").unwrap();
        assert_ne!(k2, step_key(d.path(), &argv, &inputs(&[fs], &[m])).unwrap());
        // A new engine version is a new key; no engine keeps the old key.
        let mut with_engine = inputs(&[fs], &[]);
        with_engine.engines.push("engine-2".into());
        let plain = step_key(d.path(), &argv, &inputs(&[fs], &[])).unwrap();
        assert_ne!(plain, step_key(d.path(), &argv, &with_engine).unwrap());
    }

    #[test]
    fn a_record_counts_only_while_its_outputs_exist() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(d.path()).unwrap();
        let id = "ab".repeat(32);
        record_step(&store, "k", &[("cases".into(), id.clone())]).unwrap();
        assert!(cached_step(&store, "k").is_none(), "the object is missing");
        std::fs::write(store.object_path(&id), "x").unwrap();
        assert_eq!(
            cached_step(&store, "k").unwrap(),
            vec![("cases".to_string(), id)]
        );
    }
}
