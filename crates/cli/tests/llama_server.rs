//! The OpenAI-compatible client against a real server, not our mock:
//! llama.cpp's own (`llama-cpp-python[server]`, built by
//! `scripts/llama-server.sh`, which `make test` runs) serving the embedded
//! SmolLM2 GGUF on 127.0.0.1. A small pipeline goes through `--backend
//! openai`: responses arrive, the server's usage is recorded, `max_tokens`
//! and a stop string are honoured (temperature 0 is sent), a killed run
//! resumes sending each request once, and a rerun sends none.
//!
//! The server is `RAGPROBE_LLAMA_SERVER` (the python of that venv); without
//! it the test says it was skipped, unless `RAGPROBE_REQUIRE_LLAMA=1` (as in
//! `make test`), where that is a failure.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{ragprobe, stderr};

/// The server process, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status line of `GET path` on 127.0.0.1:port, if it answers.
fn get_status(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    buf.lines().next().map(String::from)
}

/// Start llama.cpp's server over `gguf` on a free loopback port and wait
/// until it lists its model.
fn start(python: &Path, gguf: &Path, dir: &Path) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.join("llama-server.log");
    let child = Command::new(python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(gguf)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--model_alias",
            "smollm2",
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut server = Server { child, port, log };
    let t0 = Instant::now();
    loop {
        if get_status(port, "/v1/models").is_some_and(|l| l.contains(" 200")) {
            return server;
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!(
                "llama.cpp server exited ({status}): {}",
                std::fs::read_to_string(&server.log).unwrap_or_default()
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "llama.cpp server did not come up: {}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

const MAX_TOKENS: u32 = 12;

/// Ingest, closed-book and base cases of the NQ fixture's first questions,
/// answered by the server.
fn pipeline(dir: &Path, port: u16, limit: usize) -> PathBuf {
    let p = dir.join(format!("llama-{limit}.toml"));
    std::fs::write(
        &p,
        format!(
            "[steps.q]\nstage = \"ingest\"\nformat = \"dpr\"\npaths = [\"fixtures/nq-mini.jsonl\"]\n\n\
             [steps.c]\nstage = \"perturb\"\nquestions = \"@q.questions\"\ncontexts = \"@q.contexts\"\nscenario = [\"closed-book\", \"base\"]\nk = \"2\"\nlimit = \"{limit}\"\n\n\
             [steps.g]\nstage = \"generate\"\ncases = \"@c.cases\"\nprompt = \"imperfect-normal\"\nbackend = \"openai\"\n\
             base-url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"smollm2\"\nconcurrency = 1\nmax-tokens = \"{MAX_TOKENS}\"\ntemperature = \"0\"\nstop = [\"\\n\"]\n"
        ),
    )
    .unwrap();
    p
}

/// Lines of the store's request journal, and how many distinct requests
/// they answer.
fn journal(store: &Path) -> (usize, usize) {
    let mut ids = std::collections::BTreeSet::new();
    let mut lines = 0;
    for e in std::fs::read_dir(store.join("requests"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for l in std::fs::read_to_string(e.path())
            .unwrap_or_default()
            .lines()
        {
            let v: serde_json::Value = match serde_json::from_str(l) {
                Ok(v) => v,
                Err(_) => continue,
            };
            lines += 1;
            if v.get("generation").is_some_and(|g| !g.is_null()) {
                ids.insert(v["request_id"].as_str().unwrap_or("").to_string());
            }
        }
    }
    (lines, ids.len())
}

#[test]
fn the_client_against_llama_cpp_server() {
    let Some(python) = std::env::var_os("RAGPROBE_LLAMA_SERVER").filter(|p| !p.is_empty()) else {
        assert!(
            std::env::var("RAGPROBE_REQUIRE_LLAMA").as_deref() != Ok("1"),
            "RAGPROBE_LLAMA_SERVER is not set (make test sets it from scripts/llama-server.sh)"
        );
        eprintln!("SKIPPED: no llama.cpp server (RAGPROBE_LLAMA_SERVER; `make test` builds one)");
        return;
    };
    let gguf = ragprobe_models::paths::smollm2_gguf();
    assert!(
        gguf.is_file(),
        "the embedded model: run scripts/fetch-models.sh"
    );
    let d = tempfile::tempdir().unwrap();
    let server = start(Path::new(&python), &gguf, d.path());

    // A full run: every response arrives, with the server's usage.
    let p = pipeline(d.path(), server.port, 4);
    let store = d.path().join("s");
    let o = ragprobe(&store, &["run", p.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(
        o.status.success(),
        "{err}\nserver: {}",
        std::fs::read_to_string(&server.log).unwrap_or_default()
    );
    assert!(err.contains("requests: 8 new, 0 cached, 0 failed"), "{err}");
    let responses = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("g\tresponses\t").map(String::from))
        .expect("the responses id");
    let st = ragprobe_artifact::Store::open(&store).unwrap();
    let rows = ragprobe_artifact::read::<ragprobe_artifact::Responses>(&st, &responses).unwrap();
    assert_eq!(rows.len(), 8);
    for r in &rows {
        let text = r
            .text
            .as_deref()
            .unwrap_or_else(|| panic!("no text: {:?}", r.error));
        assert!(
            !text.contains('\n'),
            "the stop string ends the reply: {text:?}"
        );
        let (p, c) = (
            r.prompt_tokens.unwrap_or(0),
            r.completion_tokens.unwrap_or(u32::MAX),
        );
        assert!(p > 0, "prompt tokens reported: {r:?}");
        assert!(c <= MAX_TOKENS, "max_tokens honoured: {c} > {MAX_TOKENS}");
        let finish = r.finish_reason.as_deref().unwrap_or("");
        assert!(finish == "stop" || finish == "length", "{finish}");
    }
    assert!(
        err.contains("tokens (new requests, as reported): ")
            && !err.contains("as reported): 0 prompt"),
        "the run's usage: {err}"
    );

    // A rerun sends nothing.
    let o3 = ragprobe(&store, &["run", p.to_str().unwrap()]);
    assert!(o3.status.success(), "{}", stderr(&o3));
    assert!(stderr(&o3).contains("requests: 0 new"), "{}", stderr(&o3));

    // A killed run resumes: every request is answered once over both runs.
    let p16 = pipeline(d.path(), server.port, 16);
    let killed = d.path().join("s-killed");
    let mut child = common::spawn(&killed, &["run", p16.to_str().unwrap()]);
    let t0 = Instant::now();
    while journal(&killed).1 < 3 && t0.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let (_, before) = journal(&killed);
    eprintln!("killed after {before} of 32 requests");
    let o4 = ragprobe(&killed, &["run", p16.to_str().unwrap()]);
    let err4 = stderr(&o4);
    assert!(o4.status.success(), "{err4}");
    let (lines, answered) = journal(&killed);
    assert_eq!(answered, 32, "every request answered: {err4}");
    assert_eq!(
        lines, answered,
        "none answered twice (killed after {before})"
    );
    assert!(
        err4.contains(&format!("requests: {} new, {before} cached", 32 - before)),
        "{err4}"
    );
}
