//! The crash-safe request journal.
//!
//! Every finished request (success or final failure) is appended to a JSON
//! Lines file as one line, written with a single `write` and flushed at
//! once, so a process killed at any moment (even `kill -9`) loses only the
//! requests still in flight. On open, every complete line is loaded; a torn
//! last line (the write the kill interrupted: no newline at its end) is cut
//! off. A damaged line in the middle is skipped and counted, never a reason
//! to drop the good entries after it.
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
    /// The request's hash (see `session::request_id`), the key entries are looked up by.
    pub request_id: String,
    /// The generation, when the request succeeded.
    pub generation: Option<Generation>,
    /// The final error, when it failed after all retries.
    pub error: Option<String>,
    /// Attempts the call took, retries included.
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
    /// Damaged complete lines skipped at open.
    corrupt: usize,
}

impl Journal {
    /// Open (or create) the journal at `path`, loading what it holds.
    pub fn open(path: &Path) -> std::io::Result<Journal> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut done = HashMap::new();
        let mut failed = HashMap::new();
        let mut corrupt = 0;
        if path.exists() {
            let mut reader = BufReader::new(File::open(path)?);
            let mut offset: u64 = 0;
            // (start of a torn tail to cut, the last line lacks its newline)
            let (mut cut_at, mut needs_newline) = (None, false);
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = reader.read_until(b'\n', &mut line)?;
                if n == 0 {
                    break;
                }
                let complete = line.last() == Some(&b'\n');
                let body = if complete {
                    &line[..line.len() - 1]
                } else {
                    &line[..]
                };
                match serde_json::from_slice::<JournalEntry>(body) {
                    Ok(e) => {
                        needs_newline = !complete;
                        if e.generation.is_some() {
                            failed.remove(&e.request_id);
                            done.insert(e.request_id.clone(), e);
                        } else if !done.contains_key(&e.request_id) {
                            failed.insert(e.request_id.clone(), e);
                        }
                    }
                    Err(_) if body.iter().all(u8::is_ascii_whitespace) => {}
                    Err(_) if !complete => cut_at = Some(offset),
                    Err(_) => corrupt += 1,
                }
                offset += n as u64;
            }
            if corrupt > 0 {
                tracing::warn!(
                    "{}: skipped {corrupt} damaged journal line(s); their requests will run again",
                    path.display()
                );
            }
            if let Some(at) = cut_at {
                tracing::warn!(
                    "{}: cutting a torn last line (a run was interrupted mid-write)",
                    path.display()
                );
                let f = OpenOptions::new().write(true).open(path)?;
                f.set_len(at)?;
                f.sync_all()?;
            } else if needs_newline {
                let mut f = OpenOptions::new().append(true).open(path)?;
                f.write_all(b"\n")?;
                f.sync_all()?;
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            done,
            failed,
            corrupt,
        })
    }

    /// Where the journal file lives.
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

    /// Damaged lines in the middle of the journal, skipped at open.
    pub fn corrupt_lines(&self) -> usize {
        self.corrupt
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
        self.file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, ok: bool) -> JournalEntry {
        JournalEntry {
            request_id: id.into(),
            generation: ok.then(|| Generation {
                text: format!("t-{id}"),
                finish_reason: "stop".into(),
                prompt_tokens: None,
                completion_tokens: None,
                token_ids: None,
                model: "m".into(),
            }),
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

    /// Regression (reliability #10): a damaged line in the middle used to
    /// discard every good entry after it and truncate the file.
    #[test]
    fn a_damaged_middle_line_is_skipped_not_a_reason_to_truncate() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        {
            let j = Journal::open(&p).unwrap();
            for i in 0..20 {
                j.append(&entry(&format!("r{i}"), true)).unwrap();
            }
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[10] = "{\"request_id\": \"r10\", garbage".into();
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let before = std::fs::metadata(&p).unwrap().len();
        let j = Journal::open(&p).unwrap();
        assert_eq!(j.done_count(), 19, "only the damaged line is lost");
        assert_eq!(j.corrupt_lines(), 1);
        assert!(j.done("r19").is_some() && j.done("r10").is_none());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), before, "nothing cut");
    }

    /// A complete entry missing only its newline is kept, and the next
    /// append starts on a line of its own.
    #[test]
    fn a_last_entry_without_newline_is_kept_and_closed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        std::fs::write(&p, serde_json::to_string(&entry("a", true)).unwrap()).unwrap();
        let j = Journal::open(&p).unwrap();
        assert!(j.done("a").is_some());
        j.append(&entry("b", true)).unwrap();
        drop(j);
        let j = Journal::open(&p).unwrap();
        assert_eq!((j.done_count(), j.corrupt_lines()), (2, 0));
    }
}
