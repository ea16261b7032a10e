//! Lineage closure: what must travel with an artifact so that the pipeline
//! that made it is fully cached on another machine.

use ragprobe_artifact::{ActionRecord, Store};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::{RemoteError, Result};

/// Objects and action records closed under "made from" and "made by".
#[derive(Debug, Clone, Default)]
pub struct Closure {
    /// Every object: the roots, all their inputs (manifest `inputs`, to the
    /// bottom), and every output of the records below.
    pub objects: BTreeSet<String>,
    /// Every action record that made one of the objects, by key.
    pub actions: BTreeMap<String, ActionRecord>,
}

/// The closure of `roots` in the local store.
///
/// An object brings its manifest's inputs, and the action records that
/// list it as an output; a record brings all its outputs (a cached step
/// needs every one of them). Records whose outputs are not all in the
/// store are stale (the step would run again anyway) and stay behind. A
/// missing input is an error naming the artifact that needs it.
pub fn local_closure(store: &Store, roots: &[String]) -> Result<Closure> {
    let mut by_output: HashMap<String, Vec<ActionRecord>> = HashMap::new();
    for r in store.actions()? {
        if !r.outputs.iter().all(|o| store.contains(&o.id)) {
            tracing::debug!(
                "action {} has outputs missing locally; not pushed",
                &r.key[..12]
            );
            continue;
        }
        for o in &r.outputs {
            by_output.entry(o.id.clone()).or_default().push(r.clone());
        }
    }
    let mut c = Closure::default();
    let mut todo: Vec<(String, Option<String>)> = roots.iter().map(|r| (r.clone(), None)).collect();
    while let Some((id, needed_by)) = todo.pop() {
        if !c.objects.insert(id.clone()) {
            continue;
        }
        if !store.contains(&id) {
            return Err(RemoteError::Usage(match needed_by {
                Some(by) => format!("artifact {id} (an input of {by}) is not in the local store; nothing was pushed"),
                None => format!("artifact {id} is not in the local store"),
            }));
        }
        let m = store.manifest(&id)?;
        for input in m.recipe.inputs {
            todo.push((input, Some(id.clone())));
        }
        for r in by_output.get(&id).into_iter().flatten() {
            if c.actions.contains_key(&r.key) {
                continue;
            }
            for o in &r.outputs {
                todo.push((o.id.clone(), Some(format!("action {}", &r.key[..12]))));
            }
            c.actions.insert(r.key.clone(), r.clone());
        }
    }
    Ok(c)
}
