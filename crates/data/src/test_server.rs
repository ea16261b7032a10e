//! A local server on 127.0.0.1 that speaks the Hugging Face hub's file
//! protocol as `hf-hub` uses it, and serves plain files, for tests (no
//! test reaches a real hub).
//!
//! * `GET /datasets/<repo>/resolve/<revision>/<path>`: the file, with
//!   `ETag` (its SHA-256, quoted), `X-Repo-Commit` (the commit the
//!   revision names), `X-Linked-Size`, and range requests (`206` with
//!   `Content-Range`); a revision the repository lacks is `404`; a gated
//!   repository is `401` without `Authorization: Bearer <token>`.
//! * `GET /<any other path>`: a plain file, with range requests.
//! * Faults: [`Served::cut_once`] makes the first full download of a file
//!   stop after some bytes (the connection closes mid-body);
//!   [`Served::stall`] holds a download after some bytes (to kill the
//!   client mid-file). [`Served::gets`] counts the requests per file.
//!
//! One thread per connection; stopped when dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the server holds and how it misbehaves.
#[derive(Debug, Default)]
pub struct Served {
    /// (repo, revision) -> commit SHA the revision names.
    pub revisions: BTreeMap<(String, String), String>,
    /// (repo, commit, path) -> bytes: dataset repositories.
    pub hub_files: BTreeMap<(String, String, String), Vec<u8>>,
    /// (repo, commit, path) -> bytes: model repositories
    /// (`/<repo>/resolve/<revision>/<path>`; their revisions in `revisions`).
    pub model_files: BTreeMap<(String, String, String), Vec<u8>>,
    /// URL path -> bytes.
    pub plain_files: BTreeMap<String, Vec<u8>>,
    /// Repositories that need the token.
    pub gated: BTreeSet<String>,
    /// The token gated repositories accept.
    pub token: Option<String>,
    /// URL path -> bytes after which its first whole-file response is cut.
    pub cut_once: BTreeMap<String, usize>,
    /// URL path -> bytes after which every response to it stalls (the rest
    /// is never sent): a download in progress, for a process to be killed.
    pub stall: BTreeMap<String, usize>,
    /// URL path -> GET requests answered (whole or ranged).
    pub gets: BTreeMap<String, usize>,
    /// URL path -> ranged GET requests answered (resumed downloads).
    pub ranged_gets: BTreeMap<String, usize>,
}

/// A running server.
pub struct TestServer {
    port: u16,
    stop: Arc<AtomicBool>,
    /// Requests answered so far.
    pub requests: Arc<AtomicUsize>,
    /// What it serves (changeable while it runs).
    pub served: Arc<Mutex<Served>>,
}

impl TestServer {
    /// Starts serving `served` on a free port of 127.0.0.1.
    pub fn start(served: Served) -> std::io::Result<TestServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(Mutex::new(served));
        let (s, r, v) = (stop.clone(), requests.clone(), served.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (r, v) = (r.clone(), v.clone());
                        std::thread::spawn(move || {
                            let _ = conn.set_nonblocking(false);
                            let _ = handle(conn, &r, &v);
                        });
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        });
        Ok(TestServer {
            port,
            stop,
            requests,
            served,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn handle(conn: TcpStream, requests: &AtomicUsize, served: &Mutex<Served>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        if let Some(n) = headers
            .get("content-length")
            .and_then(|n| n.parse::<usize>().ok())
        {
            let mut body = vec![0u8; n];
            reader.read_exact(&mut body)?;
        }
        requests.fetch_add(1, Ordering::Relaxed);
        let mut parts = line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
        let keep = respond(&conn, method, path, &headers, served)?;
        if !keep {
            return Ok(());
        }
    }
}

/// The bytes at `path` with the extra headers of their answer, or the
/// status line of the refusal (404, or 401 for a gated repository).
fn lookup(
    s: &Served,
    path: &str,
    headers: &BTreeMap<String, String>,
) -> Result<(Vec<u8>, String), &'static str> {
    // A hub path has `resolve` as its third segment after `/datasets/`
    // (datasets) or after `/` (models); anything else is a plain file
    // (HotpotQA's URL path also starts with `/datasets/`).
    let hub = match path.strip_prefix("/datasets/") {
        Some(rest) if rest.split('/').nth(2) == Some("resolve") => Some((rest, true)),
        _ => {
            let rest = &path[1..];
            (rest.split('/').nth(2) == Some("resolve")).then_some((rest, false))
        }
    };
    if let Some((rest, dataset)) = hub {
        // <owner>/<name>/resolve/<revision>/<path>
        let p: Vec<&str> = rest.splitn(5, '/').collect();
        if p.len() < 5 || p[2] != "resolve" {
            return Err("404 Not Found");
        }
        let repo = format!("{}/{}", p[0], p[1]);
        if s.gated.contains(&repo) {
            let ok = s
                .token
                .as_ref()
                .is_some_and(|t| headers.get("authorization") == Some(&format!("Bearer {t}")));
            if !ok {
                return Err("401 Unauthorized");
            }
        }
        let Some(commit) = s.revisions.get(&(repo.clone(), p[3].to_string())).cloned() else {
            return Err("404 Not Found");
        };
        let files = if dataset {
            &s.hub_files
        } else {
            &s.model_files
        };
        let Some(b) = files
            .get(&(repo, commit.clone(), p[4].to_string()))
            .cloned()
        else {
            return Err("404 Not Found");
        };
        let etag = hex_sha256(&b);
        let extra = format!(
            "etag: \"{etag}\"\r\nx-repo-commit: {commit}\r\nx-linked-size: {}\r\n",
            b.len()
        );
        Ok((b, extra))
    } else {
        match s.plain_files.get(path) {
            Some(b) => Ok((b.clone(), String::new())),
            None => Err("404 Not Found"),
        }
    }
}

/// Writes one response; false when the connection must close.
fn respond(
    mut conn: &TcpStream,
    method: &str,
    path: &str,
    headers: &BTreeMap<String, String>,
    served: &Mutex<Served>,
) -> std::io::Result<bool> {
    let mut s = served.lock().unwrap_or_else(|e| e.into_inner());
    let status = |conn: &mut &TcpStream, code: &str| -> std::io::Result<bool> {
        write!(conn, "HTTP/1.1 {code}\r\ncontent-length: 0\r\n\r\n")?;
        Ok(true)
    };
    let (body, extra) = match lookup(&s, path, headers) {
        Ok(found) => found,
        Err(code) => return status(&mut conn, code),
    };
    if method != "GET" && method != "HEAD" {
        return status(&mut conn, "405 Method Not Allowed");
    }
    let total = body.len();
    let range = headers.get("range").and_then(|r| {
        let r = r.strip_prefix("bytes=")?;
        let (a, b) = r.split_once('-')?;
        let a: usize = a.parse().ok()?;
        let b: usize = if b.is_empty() {
            total.saturating_sub(1)
        } else {
            b.parse().ok()?
        };
        Some((a, b.min(total.saturating_sub(1))))
    });
    let (code, slice, mut extra) = match range {
        Some((a, _)) if a >= total && total > 0 => {
            write!(conn, "HTTP/1.1 416 Range Not Satisfiable\r\ncontent-range: bytes */{total}\r\ncontent-length: 0\r\n\r\n")?;
            return Ok(true);
        }
        Some((a, b)) => (
            "206 Partial Content",
            &body[a..=b],
            format!("{extra}content-range: bytes {a}-{b}/{total}\r\n"),
        ),
        None => ("200 OK", &body[..], extra),
    };
    extra.push_str("accept-ranges: bytes\r\n");
    write!(
        conn,
        "HTTP/1.1 {code}\r\ncontent-length: {}\r\n{extra}\r\n",
        slice.len()
    )?;
    if method == "HEAD" {
        return Ok(true);
    }
    *s.gets.entry(path.to_string()).or_default() += 1;
    if range.is_some() {
        *s.ranged_gets.entry(path.to_string()).or_default() += 1;
    }
    if let Some(&n) = s.stall.get(path).filter(|&&n| slice.len() > n) {
        drop(s);
        conn.write_all(&slice[..n])?;
        conn.flush()?;
        // Hold the connection open (until the client goes away).
        let mut sink = [0u8; 1];
        let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(120)));
        let _ = conn.read(&mut sink);
        return Ok(false);
    }
    // The first response longer than the cut is cut, as a dropped connection.
    if s.cut_once.get(path).is_some_and(|&n| slice.len() > n) {
        let n = s.cut_once.remove(path).unwrap_or(0);
        conn.write_all(&slice[..n])?;
        conn.flush()?;
        let _ = conn.shutdown(std::net::Shutdown::Both);
        return Ok(false);
    }
    drop(s);
    conn.write_all(slice)?;
    conn.flush()?;
    Ok(true)
}

fn hex_sha256(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}
