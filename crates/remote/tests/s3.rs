//! Push and pull against a real S3-protocol server (moto) on 127.0.0.1,
//! started and stopped by the test. Its own test binary: the S3 client
//! reads credentials from the environment, set here before any thread runs.

mod common;

use common::*;
use ragprobe_artifact::Store;
use ragprobe_remote::test_server::S3Server;
use ragprobe_remote::{Remote, RemoteConfig, Transfer};

/// The moto server, or `None` (skipped) when it is not installed and the
/// run does not require it (`make test` sets `RAGPROBE_REQUIRE_S3=1`).
fn s3(dir: &std::path::Path) -> Option<S3Server> {
    match S3Server::start(dir.join("moto.log")).unwrap() {
        Some(s) => Some(s),
        None if std::env::var("RAGPROBE_REQUIRE_S3").as_deref() == Ok("1") => {
            panic!("moto_server not found: run `bash scripts/s3-server.sh install`")
        }
        None => {
            eprintln!("SKIPPED: no moto_server (bash scripts/s3-server.sh install)");
            None
        }
    }
}

fn s3_remote(server: &S3Server, url: &str) -> Remote {
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    let cfg = RemoteConfig {
        url: url.into(),
        endpoint: Some(server.endpoint()),
        region: Some("us-east-1".into()),
        anonymous: false,
    };
    Remote::open("team", &cfg).unwrap()
}

#[test]
fn s3_round_trip_with_a_multipart_object_and_racing_record_writers() {
    let d = tempfile::tempdir().unwrap();
    let Some(server) = s3(d.path()) else { return };
    server.create_bucket("lab").unwrap();
    let remote = s3_remote(&server, "s3://lab/ragprobe");
    let here = Store::open(d.path().join("here")).unwrap();
    // A 20 MB artifact goes up in parts (8 MiB each).
    let big_recipe = recipe("ingest", "big", &[]);
    let big = corpus(&here, &big_recipe, 20_000, 60);
    here.record_action(&big_recipe, &[store_written(&here, &big)])
        .unwrap();
    assert!(
        std::fs::metadata(here.object_path(&big)).unwrap().len()
            > 2 * ragprobe_remote::PART_BYTES as u64
    );
    let (recipes, ids) = lineage(&here, "x");
    let t = Transfer {
        jobs: 4,
        ..Transfer::default()
    };
    let p = remote
        .push(&here, &[big.clone(), ids[3].clone()], &t)
        .unwrap();
    assert_eq!((p.objects, p.sent, p.actions_sent), (5, 5, 4));
    let requests_before = server.requests();
    let again = remote
        .push(&here, &[big.clone(), ids[3].clone()], &t)
        .unwrap();
    assert_eq!((again.sent, again.actions_present), (0, 4));
    // Unchanged data: three listings (objects, actions, refs); identical
    // records are recognised by their ETag, without reading them.
    let extra = server.requests() - requests_before;
    assert!(extra <= 3, "{extra} requests");

    let there = Store::open(d.path().join("there")).unwrap();
    let r = remote
        .pull(&there, &[big.clone(), ids[3].clone()], &t)
        .unwrap();
    assert_eq!((r.fetched, r.actions), (5, 4));
    assert!(there.cached(&big_recipe, &[]).unwrap().is_some());
    for rc in &recipes {
        assert!(there.cached(rc, &[]).unwrap().is_some());
    }
    assert!(remote.verify(&t).unwrap().problems.is_empty());

    // Eight machines push different records for one recipe at once:
    // exactly one record lands, whole, and the others report the conflict.
    let r = recipe("generate", "race", &[]);
    let stores: Vec<(Store, String)> = (0..8)
        .map(|i| {
            let s = Store::open(d.path().join(format!("racer{i}"))).unwrap();
            let id = corpus(&s, &r, 2 + i, 2);
            s.record_action(&r, &[store_written(&s, &id)]).unwrap();
            (s, id)
        })
        .collect();
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .map(|(s, id)| {
                let remote = s3_remote(&server, "s3://lab/ragprobe");
                scope.spawn(move || {
                    remote
                        .push(s, std::slice::from_ref(id), &Transfer::default())
                        .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners = results.iter().filter(|p| p.actions_sent == 1).count();
    let losers = results.iter().filter(|p| p.conflicts.len() == 1).count();
    assert_eq!((winners, losers), (1, 7));
    let fresh = Store::open(d.path().join("fresh")).unwrap();
    let all: Vec<String> = stores.iter().map(|(_, id)| id.clone()).collect();
    remote.pull(&fresh, &all, &t).unwrap();
    let won = fresh.cached(&r, &[]).unwrap().unwrap().outputs[0]
        .id
        .clone();
    let w = results.iter().position(|p| p.actions_sent == 1).unwrap();
    assert_eq!(won, stores[w].1);
    assert!(remote.verify(&t).unwrap().problems.is_empty());
}

/// #33 L5: a key with a `..` or `.` segment, which another S3 client can
/// put and `object_store` cannot parse, made every listing (and so every
/// pull, verify and read-through) of the remote fail. Such keys are now
/// skipped and the rest of the remote is used.
#[test]
fn keys_with_dot_segments_are_skipped_not_fatal() {
    let d = tempfile::tempdir().unwrap();
    let Some(server) = s3(d.path()) else { return };
    server.create_bucket("dots").unwrap();
    let remote = s3_remote(&server, "s3://dots/team");
    let here = Store::open(d.path().join("here")).unwrap();
    let (recipes, ids) = lineage(&here, "dots");
    remote
        .push(&here, &[ids[3].clone()], &Transfer::default())
        .unwrap();
    for key in [
        "/dots/team/refs/../evil.json",
        "/dots/team/objects/../x.parquet",
        "/dots/team/objects/./y.parquet",
        "/dots/team/actions/a/../b.json",
        "/dots/team/journals/../j.jsonl",
    ] {
        let (code, body) = server.request("PUT", key, b"{}").unwrap();
        assert_eq!(code, 200, "{key}: {}", String::from_utf8_lossy(&body));
    }
    let listing = remote.listing().unwrap();
    assert_eq!(listing.objects.len(), 4, "{listing:?}");
    let there = Store::open(d.path().join("there")).unwrap();
    let r = remote
        .pull(&there, &[ids[3].clone()], &Transfer::default())
        .unwrap();
    assert_eq!(r.fetched, 4);
    for rc in &recipes {
        assert!(there.cached(rc, &[]).unwrap().is_some());
    }
    assert!(remote
        .verify(&Transfer::default())
        .unwrap()
        .problems
        .is_empty());
}
