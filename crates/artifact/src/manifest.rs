use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::{canonical_json, sha256_hex};

/// Parquet key-value metadata key that holds the manifest JSON.
pub const MANIFEST_KEY: &str = "ragprobe.manifest";

/// What a stage invocation is: enough to decide that two invocations would
/// produce the same outputs.
///
/// The action key is the SHA-256 of the canonical JSON of every field,
/// `sources` included. `sources` (content hashes of raw input files, which
/// are not artifacts) key the action but stay out of the manifest, so that two
/// files with the same records (keys reordered, say) give the same artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    /// The stage's name.
    pub stage: String,
    /// The stage's version; bumping it invalidates cached outputs.
    pub stage_version: u32,
    /// Stage parameters; serialised canonically (sorted keys).
    pub params: Value,
    /// Ids of input artifacts, in the order the stage takes them.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Ids of external resources that determine the output: a model file's
    /// hash, or backend URL + served model + revision.
    #[serde(default)]
    pub resources: BTreeMap<String, String>,
    /// Content hashes of raw input files (name -> SHA-256). Key only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

impl Recipe {
    /// A recipe for `stage` with `params`, and no inputs, resources or sources yet.
    pub fn new(stage: &str, stage_version: u32, params: Value) -> Self {
        Recipe {
            stage: stage.to_string(),
            stage_version,
            params,
            inputs: Vec::new(),
            resources: BTreeMap::new(),
            sources: BTreeMap::new(),
        }
    }

    /// The action key: SHA-256 of the canonical JSON of the whole recipe.
    pub fn key(&self) -> String {
        let v = serde_json::to_value(self).expect("recipe serialises");
        sha256_hex(canonical_json(&v).as_bytes())
    }

    /// The recipe of part `i` of a step run in shards (the embeddings of a
    /// corpus): stage `<stage>-shard`, the same version, inputs and
    /// resources, and the parameters with `"shard": i` added. The step's own
    /// action record names its parts' outputs; [`Recipe::is_part_of`] is
    /// how a record's check recognises them.
    pub fn shard(&self, i: usize) -> Recipe {
        let mut params = self.params.clone();
        if let Value::Object(map) = &mut params {
            map.insert("shard".into(), Value::from(i));
        }
        Recipe {
            stage: format!("{}-shard", self.stage),
            params,
            ..self.clone()
        }
    }

    /// True when this recipe is a [`Recipe::shard`] of `whole` (sources
    /// aside, as in manifests).
    pub fn is_part_of(&self, whole: &Recipe) -> bool {
        let Some(i) = self.params.get("shard").and_then(Value::as_u64) else {
            return false;
        };
        usize::try_from(i).is_ok_and(|i| whole.for_manifest().shard(i) == self.for_manifest())
    }

    /// The recipe as recorded in a manifest: without raw source hashes.
    pub fn for_manifest(&self) -> Recipe {
        Recipe {
            sources: BTreeMap::new(),
            ..self.clone()
        }
    }
}

/// The execution record stored inside each artifact. Deterministic facts
/// only: no times, hosts or durations (those go to the run log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Artifact kind (`questions`, `contexts`, ...; see [`crate::kinds`]).
    pub kind: String,
    /// Schema version of the kind the artifact was written with.
    pub schema_version: u32,
    /// Version of ragprobe that wrote the artifact.
    pub ragprobe_version: String,
    /// The recipe that made the artifact, without raw source hashes.
    pub recipe: Recipe,
    /// Number of rows in the artifact.
    pub rows: u64,
    /// Stage-specific deterministic facts (counts of skipped records,
    /// generation settings, ...).
    #[serde(default)]
    pub details: Value,
}

impl Manifest {
    /// The manifest as canonical JSON, as stored in the Parquet metadata.
    pub fn to_json(&self) -> String {
        canonical_json(&serde_json::to_value(self).expect("manifest serialises"))
    }
}
