//! A real S3-protocol server on 127.0.0.1 for tests and benchmarks: moto
//! in server mode (PyPI `moto[server]`), started on a free port and
//! stopped on drop. `scripts/s3-server.sh install` provides it (`make test`
//! runs that); the path comes from `RAGPROBE_MOTO_SERVER`, then `PATH`,
//! then the script's virtual environment.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server.
pub struct S3Server {
    child: Child,
    port: u16,
    /// Its request log (one line per request), for counting requests.
    pub log: PathBuf,
}

/// Where the moto server program is, if anywhere.
pub fn moto_command() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RAGPROBE_MOTO_SERVER").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let venv = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/ragprobe/moto-venv/bin/moto_server"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("moto_server"))
        .chain(venv)
        .find(|p| p.is_file())
}

impl S3Server {
    /// Start a server with request log `log`; `None` when moto is not
    /// installed (the caller decides whether that skips or fails).
    pub fn start(log: PathBuf) -> std::io::Result<Option<S3Server>> {
        let Some(cmd) = moto_command() else {
            return Ok(None);
        };
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let err = std::fs::File::create(&log)?;
        let child = Command::new(cmd)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()?;
        let mut s = S3Server { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if s.request("GET", "/", b"").is_ok() {
                return Ok(Some(s));
            }
            if let Some(status) = s.child.try_wait()? {
                return Err(std::io::Error::other(format!(
                    "moto_server exited ({status}); see {}",
                    s.log.display()
                )));
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other("moto_server did not start in 30 s"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The endpoint URL (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One unsigned HTTP request (moto accepts them): returns the status
    /// code and body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let mut c = TcpStream::connect(("127.0.0.1", self.port))?;
        c.set_read_timeout(Some(Duration::from_secs(30)))?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        c.write_all(head.as_bytes())?;
        c.write_all(body)?;
        let mut resp = Vec::new();
        c.read_to_end(&mut resp)?;
        let text = String::from_utf8_lossy(&resp);
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other("not an HTTP response"))?;
        let body = match resp.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => resp[i + 4..].to_vec(),
            None => Vec::new(),
        };
        Ok((code, body))
    }

    /// Create a bucket.
    pub fn create_bucket(&self, name: &str) -> std::io::Result<()> {
        match self.request("PUT", &format!("/{name}"), b"")? {
            (200, _) => Ok(()),
            (code, body) => Err(std::io::Error::other(format!(
                "creating bucket {name}: HTTP {code}: {}",
                String::from_utf8_lossy(&body)
            ))),
        }
    }

    /// Requests the server has logged so far.
    pub fn requests(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .map(|t| t.lines().filter(|l| l.contains("HTTP/1.1\" ")).count())
            .unwrap_or(0)
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
