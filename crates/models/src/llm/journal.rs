//! The crash-safe request journal.
//!
//! Every finished request (success or final failure) is appended to a JSON
//! Lines file as one line, written with a single `write` and flushed at
//! once, so a process killed at any moment (even `kill -9`) loses only the
//! requests still in flight. On open, every complete line is loaded; a torn
//! last line (the write the kill interrupted) is ignored and cut off.
//! Successful entries make the request "done": rerunning skips it. Failed
//! entries are kept for the record, and retried by the next run.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Generation;

/// One finished request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub request_id: String,
    /// The generation, when the request succeeded.
    pub generation: Option<Generation>,
    /// The final error, when it failed after all retries.
    pub error: Option<String>,
    pub attempts: u32,
    /// Wall-clock milliseconds of the call (run log only; never hashed into artifacts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

/// An append-only journal of finished requests.
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    done: HashMap<String, JournalEntry>,
    failed: HashMap<String, JournalEntry>,
}

impl Journal {
    /// Open (or create) the journal at `path`, loading what it holds.
    pub fn open(path: &Path) -> std::io::Result<Journal> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut done = HashMap::new();
        let mut failed = HashMap::new();
        let mut good_len: u64 = 0;
        if path.exists() {
            let reader = BufReader::new(File::open(path)?);
            for line in reader.split(b'\n') {
                let line = line?;
                // Only complete lines count: a line is complete when it parses.
                match serde_json::from_slice::<JournalEntry>(&line) {
                    Ok(e) => {
                        good_len += line.len() as u64 + 1;
                        if e.generation.is_some() {
                            failed.remove(&e.request_id);
                            done.insert(e.request_id.clone(), e);
                        } else if !done.contains_key(&e.request_id) {
                            failed.insert(e.request_id.clone(), e);
                        }
                    }
                    Err(_) if line.iter().all(u8::is_ascii_whitespace) => good_len += line.len() as u64 + 1,
                    Err(_) => {
                        tracing::warn!("{}: ignoring a torn journal line (a run was interrupted mid-write)", path.display());
                        break;
                    }
                }
            }
            let len = std::fs::metadata(path)?.len();
            if good_len < len {
                let f = OpenOptions::new().write(true).open(path)?;
                f.set_len(good_len)?;
                f.sync_all()?;
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal { path: path.to_path_buf(), file: Mutex::new(file), done, failed })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The successful result of `request_id`, if an earlier run finished it.
    pub fn done(&self, request_id: &str) -> Option<&JournalEntry> {
        self.done.get(request_id)
    }

    /// The last recorded failure of `request_id` (from an earlier run).
    pub fn failed(&self, request_id: &str) -> Option<&JournalEntry> {
        self.failed.get(request_id)
    }

    /// Number of successful entries loaded at open.
    pub fn done_count(&self) -> usize {
        self.done.len()
    }

    /// Append one finished request: one write of one line, then flush.
    pub fn append(&self, entry: &JournalEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(&line)?;
        f.flush()
    }

    /// fsync the journal (call at the end of a run and periodically).
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, ok: bool) -> JournalEntry {
        JournalEntry {
            request_id: id.into(),
            generation: ok.then(|| Generation { text: format!("t-{id}"), finish_reason: "stop".into(), prompt_tokens: None, completion_tokens: None, token_ids: None, model: "m".into() }),
            error: (!ok).then(|| "boom".into()),
            attempts: 1,
            latency_ms: None,
        }
    }

    #[test]
    fn reopen_sees_done_and_failed_and_cuts_a_torn_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        {
            let j = Journal::open(&p).unwrap();
            j.append(&entry("a", true)).unwrap();
            j.append(&entry("b", false)).unwrap();
            j.append(&entry("c", true)).unwrap();
        }
        // A torn write at the end, as after kill -9 mid-line.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"request_id\":\"d\",\"genera").unwrap();
        drop(f);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.done_count(), 2);
        assert!(j.done("a").is_some() && j.done("c").is_some());
        assert!(j.done("b").is_none() && j.failed("b").is_some());
        assert!(j.done("d").is_none());
        // The torn tail was cut: appending continues on a clean line.
        j.append(&entry("b", true)).unwrap();
        drop(j);
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.done_count(), 3);
        assert!(j.failed("b").is_none());
    }
}
