//! Push and pull through a local directory and the in-memory store (the
//! S3 tests are in s3.rs).

use object_store::memory::InMemory;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use ragprobe_artifact::Store;
use ragprobe_remote::{Backend, Remote, RemoteConfig, RemoteError, Transfer};
use serde_json::json;
use std::sync::Arc;

mod common;
use common::*;

fn memory_remote() -> (Arc<InMemory>, Remote) {
    let mem = Arc::new(InMemory::new());
    let r = Remote::with_store("mem", "memory://", mem.clone(), Backend::Memory).unwrap();
    (mem, r)
}

#[test]
fn a_pushed_artifact_brings_its_lineage_and_a_pull_is_fully_cached() {
    let d = tempfile::tempdir().unwrap();
    let here = Store::open(d.path().join("here")).unwrap();
    let (recipes, ids) = lineage(&here, "x");
    // An unrelated artifact stays behind.
    let other = corpus(&here, &recipe("ingest", "other", &[]), 2, 2);
    let cfg = RemoteConfig {
        url: format!("file://{}", d.path().join("remote").display()),
        endpoint: None,
        region: None,
        anonymous: false,
    };
    let remote = Remote::open("team", &cfg).unwrap();
    let t = Transfer::default();
    // Pushing the last step's output `c` brings `a`, `b` and the sibling `d`.
    let p = remote.push(&here, &[ids[2].clone()], &t).unwrap();
    assert_eq!((p.objects, p.sent, p.present), (4, 4, 0));
    assert_eq!((p.actions_sent, p.actions_present), (3, 0));
    let again = remote.push(&here, &[ids[2].clone()], &t).unwrap();
    assert_eq!(
        (again.sent, again.present, again.actions_present),
        (0, 4, 3)
    );
    let listed: Vec<String> = remote
        .listing()
        .unwrap()
        .objects
        .into_iter()
        .map(|o| o.0)
        .collect();
    assert!(!listed.contains(&other));

    let there = Store::open(d.path().join("there")).unwrap();
    let r = remote
        .pull(&there, &[ids[2][..10].to_string()], &t)
        .unwrap();
    assert_eq!((r.objects, r.fetched, r.actions), (4, 4, 3));
    assert_eq!(r.roots, vec![ids[2].clone()]);
    for rc in &recipes {
        let hit = there
            .cached(rc, &[])
            .unwrap()
            .expect("every step is cached after the pull");
        assert!(hit.outputs.iter().all(|o| ids.contains(&o.id)));
    }
    assert!(there.verify().unwrap().is_empty());
    let second = remote.pull(&there, &[ids[2].clone()], &t).unwrap();
    assert_eq!(
        (second.fetched, second.present, second.actions_present),
        (0, 4, 3)
    );
    assert_eq!(tmp_files(&there), 0);
    assert!(remote.verify(&t).unwrap().problems.is_empty());
    // One artifact named twice (an id and its prefix) is fetched once.
    let twice = Store::open(d.path().join("twice")).unwrap();
    let r = remote
        .pull(
            &twice,
            &[ids[2].clone(), ids[2][..8].to_string(), ids[1].clone()],
            &t,
        )
        .unwrap();
    assert_eq!((r.objects, r.fetched), (4, 4));
    assert_eq!(r.roots, {
        let mut v = vec![ids[1].clone(), ids[2].clone()];
        v.sort();
        v
    });
}

#[test]
fn a_corrupted_or_substituted_remote_object_is_refused_with_its_key() {
    let d = tempfile::tempdir().unwrap();
    let here = Store::open(d.path().join("here")).unwrap();
    let (_, ids) = lineage(&here, "x");
    let (mem, remote) = memory_remote();
    let t = Transfer::default();
    remote.push(&here, &[ids[1].clone()], &t).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Substitute `a` with another valid artifact's bytes.
    let key = Key::from(format!("objects/{}.parquet", ids[0]));
    let other = std::fs::read(here.object_path(&ids[2])).unwrap();
    rt.block_on(mem.put(&key, PutPayload::from(other))).unwrap();

    let there = Store::open(d.path().join("there")).unwrap();
    let e = remote.pull(&there, &[ids[1].clone()], &t).unwrap_err();
    assert!(matches!(e, RemoteError::Corrupt { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("objects/{}.parquet", ids[0])) && msg.contains("refused"),
        "{msg}"
    );
    assert!(!there.contains(&ids[0]));
    assert_eq!(tmp_files(&there), 0, "nothing half-written is left");
    let v = remote.verify(&t).unwrap();
    assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
    assert!(v.problems[0].contains(&ids[0]));

    // A record altered to name other outputs no longer matches its key.
    let key = Key::from(format!("actions/{}.json", here.actions().unwrap()[0].key));
    let mut rec: serde_json::Value = serde_json::from_slice(
        &rt.block_on(async { mem.get(&key).await.unwrap().bytes().await.unwrap() }),
    )
    .unwrap();
    rec["recipe"]["params"]["tag"] = json!("forged");
    rt.block_on(mem.put(&key, PutPayload::from(serde_json::to_vec(&rec).unwrap())))
        .unwrap();
    assert!(remote
        .verify(&t)
        .unwrap()
        .problems
        .iter()
        .any(|p| p.contains(key.as_ref()) && p.contains("altered")));
}

#[test]
fn a_differing_remote_record_is_kept_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let one = Store::open(d.path().join("one")).unwrap();
    let two = Store::open(d.path().join("two")).unwrap();
    // The same recipe made different outputs on two machines (a sampled model).
    let r = recipe("generate", "same", &[]);
    let x = corpus(&one, &r, 3, 3);
    one.record_action(&r, &[store_written(&one, &x)]).unwrap();
    let y = corpus(&two, &r, 4, 3);
    two.record_action(&r, &[store_written(&two, &y)]).unwrap();
    let (_, remote) = memory_remote();
    let t = Transfer::default();
    remote.push(&one, std::slice::from_ref(&x), &t).unwrap();
    let p = remote.push(&two, std::slice::from_ref(&y), &t).unwrap();
    assert_eq!(p.conflicts.len(), 1, "{:?}", p.conflicts);
    assert_eq!(p.sent, 1, "the object itself is still shared");
    let fresh = Store::open(d.path().join("fresh")).unwrap();
    remote.pull(&fresh, std::slice::from_ref(&x), &t).unwrap();
    assert_eq!(fresh.cached(&r, &[]).unwrap().unwrap().outputs[0].id, x);

    let forced = Transfer {
        force: true,
        ..Transfer::default()
    };
    let p = remote
        .push(&two, std::slice::from_ref(&y), &forced)
        .unwrap();
    assert!(p.conflicts.is_empty() && p.actions_sent == 1);
    let fresh2 = Store::open(d.path().join("fresh2")).unwrap();
    remote.pull(&fresh2, std::slice::from_ref(&y), &t).unwrap();
    assert_eq!(fresh2.cached(&r, &[]).unwrap().unwrap().outputs[0].id, y);
    // A store that has its own record keeps it on pull, and says so.
    let p = remote.pull(&one, std::slice::from_ref(&y), &t).unwrap();
    assert_eq!(p.conflicts.len(), 1);
    assert_eq!(one.cached(&r, &[]).unwrap().unwrap().outputs[0].id, x);
}

#[test]
fn journals_merge_as_sets_of_lines_both_ways() {
    let d = tempfile::tempdir().unwrap();
    let (_, remote) = memory_remote();
    let t = Transfer {
        with_journals: true,
        ..Transfer::default()
    };
    let write = |store: &Store, lines: &[&str]| {
        let p = store.root().join("requests");
        std::fs::create_dir_all(&p).unwrap();
        let body: String = lines
            .iter()
            .map(|l| format!("{{\"request_id\":\"{l}\"}}\n"))
            .collect();
        std::fs::write(p.join("openai-0123456789abcdef.jsonl"), body).unwrap();
    };
    let one = Store::open(d.path().join("one")).unwrap();
    let two = Store::open(d.path().join("two")).unwrap();
    let (_, ids1) = lineage(&one, "a");
    let (_, ids2) = lineage(&two, "b");
    write(&one, &["r1", "r2"]);
    write(&two, &["r2", "r3"]);
    assert_eq!(remote.push(&one, &ids1[..1], &t).unwrap().journal_lines, 2);
    assert_eq!(remote.push(&two, &ids2[..1], &t).unwrap().journal_lines, 1);
    assert_eq!(remote.push(&two, &ids2[..1], &t).unwrap().journal_lines, 0);
    let p = remote.pull(&one, &ids2[..1], &t).unwrap();
    assert_eq!(p.journal_lines, 1);
    let text =
        std::fs::read_to_string(one.root().join("requests/openai-0123456789abcdef.jsonl")).unwrap();
    assert_eq!(
        text,
        "{\"request_id\":\"r1\"}\n{\"request_id\":\"r2\"}\n{\"request_id\":\"r3\"}\n"
    );
}

#[test]
fn a_missing_local_input_names_what_needs_it_and_sends_nothing() {
    let d = tempfile::tempdir().unwrap();
    let here = Store::open(d.path().join("here")).unwrap();
    let (_, ids) = lineage(&here, "x");
    std::fs::remove_file(here.object_path(&ids[0])).unwrap();
    let (mem, remote) = memory_remote();
    let e = remote
        .push(&here, &[ids[1].clone()], &Transfer::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&ids[0]) && e.contains(&format!("an input of {}", ids[1])),
        "{e}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n = rt.block_on(async {
        use futures::TryStreamExt;
        mem.list(None).try_collect::<Vec<_>>().await.unwrap().len()
    });
    assert_eq!(n, 0);
}

/// Hardening II, H2: a remote record that keeps its key and recipe but names
/// another step's output (with its lineage index rewritten to match) was
/// pulled, and the step then answered "cached" with the wrong artifact —
/// through read-through too — while `remote verify` said all was intact.
#[test]
fn a_forged_remote_record_is_refused_on_pull_read_through_and_verify() {
    let d = tempfile::tempdir().unwrap();
    let here = Store::open(d.path().join("here")).unwrap();
    let (recipes, ids) = lineage(&here, "x");
    let (mem, remote) = memory_remote();
    let t = Transfer::default();
    remote.push(&here, &[ids[2].clone()], &t).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The `derive` step's record (outputs [b]) now names `a`, the ingest
    // step's output, which the remote holds; key and recipe unchanged.
    let rb = &recipes[1];
    let key = Key::from(format!("actions/{}.json", rb.key()));
    let mut rec: serde_json::Value = serde_json::from_slice(
        &rt.block_on(async { mem.get(&key).await.unwrap().bytes().await.unwrap() }),
    )
    .unwrap();
    rec["outputs"][0]["id"] = json!(ids[0]);
    rec["outputs"][0]["rows"] = json!(20);
    rt.block_on(mem.put(&key, PutPayload::from(serde_json::to_vec(&rec).unwrap())))
        .unwrap();
    // The lineage index that leads a pull of `a` to the forged record.
    let body = serde_json::to_vec(&json!({"made_by": {ids[0].clone(): [rb.key()]}})).unwrap();
    let refs = Key::from(format!(
        "refs/{}.json",
        ragprobe_artifact::sha256_hex(&body)
    ));
    rt.block_on(mem.put(&refs, PutPayload::from(body))).unwrap();

    let v = remote.verify(&t).unwrap();
    assert!(
        v.problems
            .iter()
            .any(|p| p.contains(key.as_ref()) && p.contains("another recipe")),
        "{:?}",
        v.problems
    );
    let there = Store::open(d.path().join("there")).unwrap();
    let e = remote.pull(&there, &[ids[2].clone()], &t).unwrap_err();
    assert!(
        matches!(e, RemoteError::Corrupt { .. }) && e.to_string().contains(key.as_ref()),
        "{e}"
    );
    assert!(there.action_record(&rb.key()).is_none(), "not adopted");
    assert!(there.cached(rb, &[]).unwrap().is_none());

    // Read-through: never a cache hit; the stage's lookup fails naming the
    // record (the remote needs mending) and nothing is adopted.
    let through = Store::open(d.path().join("through"))
        .unwrap()
        .with_fallback(Arc::new(ragprobe_remote::ReadThrough::new(
            Remote::with_store("mem", "memory://", mem.clone(), Backend::Memory).unwrap(),
            Transfer::default(),
        )));
    match through.cached(rb, &[]) {
        Ok(hit) => assert!(hit.is_none()),
        Err(e) => assert!(
            e.to_string().contains(key.as_ref()) && e.to_string().contains("altered or mixed up"),
            "{e}"
        ),
    }
    assert!(through.action_record(&rb.key()).is_none());
}
