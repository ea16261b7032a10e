//! `ragprobe remote` and `artifacts push|pull` from the command line,
//! against a directory remote and a real S3-protocol server (moto) that
//! each test starts on 127.0.0.1 and stops.

mod common;

use common::*;
use ragprobe_remote::test_server::S3Server;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// moto, or `None` (the test is skipped) when it is not installed and the
/// run does not require it (`make test` sets `RAGPROBE_REQUIRE_S3=1`).
fn s3(dir: &Path) -> Option<S3Server> {
    match S3Server::start(dir.join("moto.log")).unwrap() {
        Some(s) => {
            s.create_bucket("lab").unwrap();
            Some(s)
        }
        None if std::env::var("RAGPROBE_REQUIRE_S3").as_deref() == Ok("1") => {
            panic!("moto_server not found: run `bash scripts/s3-server.sh install`")
        }
        None => {
            eprintln!("SKIPPED: no moto_server (bash scripts/s3-server.sh install)");
            None
        }
    }
}

/// The environment of a teammate with S3 credentials, and nothing of the
/// host's (a temp HOME: no ~/.aws).
fn env_with_keys(home: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("HOME", home.display().to_string()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
    ]
}

/// `ragprobe --store STORE ARGS` with the AWS variables of the host removed
/// and `env` set.
fn rp(store: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    cmd(store, args, env).output().unwrap()
}

fn cmd(store: &Path, args: &[&str], env: &[(&str, String)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ragprobe"));
    c.arg("--store").arg(store).args(args).current_dir(root());
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") || k.starts_with("RAGPROBE_REMOTE") {
            c.env_remove(k);
        }
    }
    c.env_remove("RAGPROBE_STORE");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn ok_out(o: Output) -> (String, String) {
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    (stdout(&o), stderr(&o))
}

/// Ingest a few fixture files: a handful of artifacts with action records.
fn some_artifacts(store: &Path, files: &[(&str, &str)]) -> Vec<String> {
    let mut ids = Vec::new();
    for (format, path) in files {
        let (out, _) = ok_out(rp(store, &["ingest", "--format", format, path], &[]));
        ids.extend(outputs(&out).into_iter().map(|(_, id)| id));
    }
    ids
}

fn add_s3(store: &Path, server: &S3Server, url: &str) {
    ok_out(rp(
        store,
        &[
            "remote",
            "add",
            "team",
            url,
            "--endpoint",
            &server.endpoint(),
        ],
        &[],
    ));
}

/// The error lines of a failed command.
fn error_lines(o: &Output) -> Vec<String> {
    assert!(!o.status.success(), "expected a failure: {}", stderr(o));
    stderr(o)
        .lines()
        .filter(|l| l.starts_with("error:"))
        .map(str::to_string)
        .collect()
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn a_directory_remote_round_trip_from_the_command_line() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let ids = some_artifacts(&a, &[("dpr", "fixtures/nq-mini.jsonl")]);
    let remote = d.path().join("shared");
    for s in [&a, &b] {
        ok_out(rp(
            s,
            &["remote", "add", "team", remote.to_str().unwrap()],
            &[],
        ));
    }
    let (listed, _) = ok_out(rp(&a, &["remote", "ls"], &[]));
    assert!(listed.starts_with("* team\t"), "{listed}");
    let (_, err) = ok_out(rp(&a, &["artifacts", "push", &ids[0][..8]], &[]));
    assert!(err.contains("sent"), "{err}");
    let (_, err) = ok_out(rp(&a, &["artifacts", "push", &ids[0]], &[]));
    assert!(
        err.contains(": 0 sent"),
        "a second push sends nothing: {err}"
    );
    let (out, err) = ok_out(rp(&b, &["artifacts", "pull", &ids[0]], &[]));
    assert!(out.contains(&ids[0]), "{out}\n{err}");
    // The same ingest on the other machine is a cache hit.
    let o = rp(
        &b,
        &["ingest", "--format", "dpr", "fixtures/nq-mini.jsonl"],
        &[],
    );
    let (out, err) = ok_out(o);
    assert_eq!(outputs(&out).len(), ids.len());
    assert!(err.contains("cached"), "{err}");
    ok_out(rp(&b, &["remote", "verify"], &[]));
}

#[test]
fn missing_credentials_no_bucket_and_a_dead_server_each_give_one_line() {
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("s");
    let ids = some_artifacts(&store, &[("rgb", "fixtures/rgb-mini.jsonl")]);
    let home = d.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    ok_out(rp(
        &store,
        &[
            "remote",
            "add",
            "team",
            "s3://lab/rp",
            "--endpoint",
            &format!("http://127.0.0.1:{port}"),
        ],
        &[],
    ));
    let no_keys = [("HOME", home.display().to_string())];
    let e = error_lines(&rp(&store, &["artifacts", "push", &ids[0]], &no_keys));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("remote `team` (s3://lab/rp)") && e[0].contains("no AWS credentials"),
        "{e:?}"
    );

    let mut env = env_with_keys(&home);
    env.push(("RAGPROBE_REMOTE_RETRY_SECS", "0".into()));
    let e = error_lines(&rp(&store, &["artifacts", "push", &ids[0]], &env));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("remote `team`") && e[0].contains("cannot reach the server"),
        "{e:?}"
    );
    assert!(!e[0].contains("testing"), "no secret in messages: {e:?}");
    let fresh = d.path().join("fresh");
    ok_out(rp(
        &fresh,
        &[
            "remote",
            "add",
            "team",
            "s3://lab/rp",
            "--endpoint",
            &format!("http://127.0.0.1:{port}"),
        ],
        &[],
    ));
    let e = error_lines(&rp(&fresh, &["artifacts", "pull", &ids[0]], &env));
    assert!(e[0].contains("cannot reach the server"), "{e:?}");
    assert_eq!(
        files_in(&fresh.join("objects")) + files_in(&fresh.join("tmp")),
        0
    );

    let Some(server) = s3(d.path()) else { return };
    let other = d.path().join("o");
    add_s3(&other, &server, "s3://no-such-bucket/rp");
    let e = error_lines(&rp(
        &other,
        &["artifacts", "push", "--report", "nowhere"],
        &env,
    ));
    assert!(e[0].contains("nowhere"), "{e:?}");
    let ids_o = some_artifacts(&other, &[("rgb", "fixtures/rgb-mini.jsonl")]);
    let e = error_lines(&rp(&other, &["artifacts", "push", &ids_o[0]], &env));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("remote `team` (s3://no-such-bucket/rp)")
            && e[0].contains("the bucket does not exist"),
        "{e:?}"
    );
}

#[test]
fn a_corrupted_remote_object_is_refused_and_verify_names_it() {
    let d = tempfile::tempdir().unwrap();
    let Some(server) = s3(d.path()) else { return };
    let home = d.path().join("home");
    let env = env_with_keys(&home);
    let a = d.path().join("a");
    let ids = some_artifacts(&a, &[("dpr", "fixtures/nq-mini.jsonl")]);
    add_s3(&a, &server, "s3://lab/rp");
    ok_out(rp(&a, &["artifacts", "push", &ids[0]], &env));
    ok_out(rp(&a, &["remote", "verify"], &env));
    // Someone replaces an object's bytes in the bucket.
    put_signed(
        &server,
        &format!("rp/objects/{}.parquet", ids[0]),
        b"PAR1 not really",
    );
    let b = d.path().join("b");
    add_s3(&b, &server, "s3://lab/rp");
    let e = error_lines(&rp(&b, &["artifacts", "pull", &ids[0]], &env));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains(&format!("rp/objects/{}.parquet", ids[0]))
            || e[0].contains(&format!("objects/{}.parquet", ids[0])),
        "{e:?}"
    );
    assert!(e[0].contains("refused"), "{e:?}");
    assert_eq!(files_in(&b.join("objects")) + files_in(&b.join("tmp")), 0);
    let o = rp(&b, &["remote", "verify"], &env);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(&format!("CORRUPT\tobjects/{}.parquet", ids[0])),
        "{}",
        stdout(&o)
    );
    // Pushing again from the machine that has the right bytes heals it
    // (the size differs, so the object is sent again).
    ok_out(rp(&a, &["artifacts", "push", &ids[0]], &env));
    ok_out(rp(&b, &["artifacts", "pull", &ids[0]], &env));
}

#[test]
fn two_machines_pushing_at_once_lose_nothing() {
    let d = tempfile::tempdir().unwrap();
    let Some(server) = s3(d.path()) else { return };
    let env = env_with_keys(&d.path().join("home"));
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    // Overlapping lineages: both ingested nq-mini.
    let ia = some_artifacts(
        &a,
        &[
            ("dpr", "fixtures/nq-mini.jsonl"),
            ("rgb", "fixtures/rgb-mini.jsonl"),
        ],
    );
    let ib = some_artifacts(
        &b,
        &[
            ("dpr", "fixtures/nq-mini.jsonl"),
            ("selfrag", "fixtures/popqa-mini.jsonl"),
        ],
    );
    for s in [&a, &b] {
        add_s3(s, &server, "s3://lab/rp");
    }
    let mut args_a = vec!["artifacts", "push", "--jobs", "2"];
    args_a.extend(ia.iter().map(String::as_str));
    let mut args_b = vec!["artifacts", "push", "--jobs", "2"];
    args_b.extend(ib.iter().map(String::as_str));
    let pa = cmd(&a, &args_a, &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pb = cmd(&b, &args_b, &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ok_out(pa.wait_with_output().unwrap());
    ok_out(pb.wait_with_output().unwrap());
    ok_out(rp(&a, &["remote", "verify"], &env));
    let fresh = d.path().join("fresh");
    add_s3(&fresh, &server, "s3://lab/rp");
    let mut all = vec!["artifacts", "pull"];
    all.extend(ia.iter().chain(&ib).map(String::as_str));
    ok_out(rp(&fresh, &all, &env));
    ok_out(rp(&fresh, &["artifacts", "verify"], &[]));
    // Each machine's ingest steps are cached on the fresh one.
    for f in ["fixtures/rgb-mini.jsonl", "fixtures/popqa-mini.jsonl"] {
        let format = if f.contains("rgb") { "rgb" } else { "selfrag" };
        let (_, err) = ok_out(rp(&fresh, &["ingest", "--format", format, f], &[]));
        assert!(err.contains("cached"), "{err}");
    }
}

/// Write `body` at `key` in bucket `lab`, as a client with the test keys.
fn put_signed(server: &S3Server, key: &str, body: &'static [u8]) {
    use object_store::ObjectStoreExt;
    let s3 = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("lab")
        .with_region("us-east-1")
        .with_endpoint(server.endpoint())
        .with_allow_http(true)
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .build()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(s3.put(&object_store::path::Path::from(key), body.into()))
        .unwrap();
}

/// Objects the moto bucket lists under `prefix`.
fn remote_objects(server: &S3Server, prefix: &str) -> usize {
    let (_, body) = server
        .request("GET", &format!("/lab?list-type=2&prefix={prefix}"), b"")
        .unwrap();
    String::from_utf8_lossy(&body).matches("<Key>").count()
}

#[test]
fn a_push_killed_mid_way_resumes_without_resending() {
    let d = tempfile::tempdir().unwrap();
    let Some(server) = s3(d.path()) else { return };
    let env = env_with_keys(&d.path().join("home"));
    let a = d.path().join("a");
    let ids = some_artifacts(
        &a,
        &[
            ("dpr", "fixtures/nq-mini.jsonl"),
            ("rgb", "fixtures/rgb-mini.jsonl"),
            ("selfrag", "fixtures/popqa-mini.jsonl"),
            ("beir", "fixtures/corpus"),
        ],
    );
    assert!(ids.len() >= 5, "{ids:?}");
    add_s3(&a, &server, "s3://lab/rp");
    let mut slow = env.clone();
    slow.push(("RAGPROBE_REMOTE_THROTTLE_MS", "700".into()));
    let mut args = vec!["artifacts", "push", "--jobs", "1"];
    args.extend(ids.iter().map(String::as_str));
    let mut child = cmd(&a, &args, &slow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while remote_objects(&server, "rp/objects/") < 2 {
        assert!(Instant::now() < deadline, "the push made no progress");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the push finished before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = remote_objects(&server, "rp/objects/");
    assert!(
        before >= 2 && before < ids.len(),
        "{before} of {}",
        ids.len()
    );
    let (_, err) = ok_out(rp(&a, &args, &env));
    let sent = ids.len() - before;
    assert!(
        err.contains(&format!("{sent} sent")) && err.contains(&format!("{before} already there")),
        "only the unfinished objects are sent: {err}"
    );
    ok_out(rp(&a, &["remote", "verify"], &env));

    // A pull killed mid-way: no half object is ever visible, and the rerun
    // fetches only what is missing.
    let b = d.path().join("b");
    add_s3(&b, &server, "s3://lab/rp");
    let mut pull = vec!["artifacts", "pull", "--jobs", "1"];
    pull.extend(ids.iter().map(String::as_str));
    let mut child = cmd(&b, &pull, &slow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while files_in(&b.join("objects")) < 2 {
        assert!(Instant::now() < deadline, "the pull made no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let have = files_in(&b.join("objects"));
    ok_out(rp(&b, &["artifacts", "verify"], &[]));
    let (_, err) = ok_out(rp(&b, &pull, &env));
    assert!(err.contains(&format!("{have} already here")), "{err}");
    ok_out(rp(&b, &["artifacts", "verify"], &[]));
}

#[test]
fn a_store_reading_through_fetches_steps_and_inputs_as_stages_ask() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let ids = some_artifacts(&a, &[("dpr", "fixtures/nq-mini.jsonl")]);
    let (q, c) = (&ids[0], &ids[1]);
    let (out, _) = ok_out(rp(
        &a,
        &["recall", "--questions", q, "--contexts", c, "-k", "5"],
        &[],
    ));
    let recall = outputs(&out)[0].1.clone();
    let shared = d.path().join("shared");
    for s in [&a, &b] {
        ok_out(rp(
            s,
            &["remote", "add", "team", shared.to_str().unwrap()],
            &[],
        ));
    }
    ok_out(rp(&a, &["artifacts", "push", &recall], &[]));
    // Without read-through the ids are unknown here.
    let o = rp(
        &b,
        &["recall", "--questions", q, "--contexts", c, "-k", "5"],
        &[],
    );
    assert!(!o.status.success());
    // With it, the inputs come over by id and the step's record answers.
    let o = rp(
        &b,
        &[
            "--store-remote",
            "team",
            "recall",
            "--questions",
            &q[..10],
            "--contexts",
            c,
            "-k",
            "5",
        ],
        &[],
    );
    let (out, err) = ok_out(o);
    assert_eq!(outputs(&out)[0].1, recall, "{err}");
    assert!(err.contains("cached"), "{err}");
    // The same ingest is answered from the remote's action record.
    let (_, err) = ok_out(rp(
        &b,
        &[
            "--store-remote",
            "team",
            "ingest",
            "--format",
            "dpr",
            "fixtures/nq-mini.jsonl",
        ],
        &[],
    ));
    assert!(err.contains("cached"), "{err}");
    ok_out(rp(&b, &["artifacts", "verify"], &[]));
}
