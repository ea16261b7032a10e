//! Streaming readers for input files: transparent gzip, byte progress, and
//! JSON records from JSON Lines or a top-level JSON array — one record in
//! memory at a time, each tagged with the line where it starts.

use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::IngestError;

/// Counts bytes read from the underlying file into a progress bar.
struct Counting<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

/// Show progress only for inputs large enough to take a moment.
const PROGRESS_MIN_BYTES: u64 = 8 << 20;

/// Open `path` for buffered reading, decompressing gzip (detected by its
/// magic bytes, not the file name). Progress is drawn on stderr for large
/// files when stderr is a terminal.
pub fn open(
    path: &Path,
    show_progress: bool,
) -> Result<(Box<dyn BufRead>, ProgressBar), IngestError> {
    let file_err = |e: std::io::Error| IngestError::File {
        file: path.display().to_string(),
        message: e.to_string(),
    };
    let file = File::open(path).map_err(file_err)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = if show_progress && len >= PROGRESS_MIN_BYTES {
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, eta {eta})")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar.set_message(
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut reader = BufReader::with_capacity(
        1 << 16,
        Counting {
            inner: file,
            bar: bar.clone(),
        },
    );
    let head = reader.fill_buf().map_err(file_err)?;
    let gz = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    let out: Box<dyn BufRead> = if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(reader),
        ))
    } else {
        Box::new(reader)
    };
    Ok((out, bar))
}

/// One JSON record and where it starts.
#[derive(Debug)]
pub struct RawRecord {
    /// 1-based line of the record's first byte.
    pub line: u64,
    /// The record's parsed JSON, without the fields kept in `lazy`.
    pub value: serde_json::Value,
    /// Top-level fields kept as raw JSON (see [`JsonRecords::lazy`]), to be
    /// walked element by element.
    pub lazy: Vec<(String, Box<serde_json::value::RawValue>)>,
}

enum Mode {
    Unknown,
    Lines,
    Array { done: bool },
}

/// Walk a raw JSON array one element at a time, without holding a value
/// tree of the whole list; `f` gets each element's index and value.
pub fn for_each_element(
    raw: &serde_json::value::RawValue,
    mut f: impl FnMut(usize, serde_json::Value) -> Result<(), String>,
) -> Result<(), String> {
    use serde::de::{Deserializer, SeqAccess, Visitor};
    struct Each<'f, F>(&'f mut F);
    impl<'de, F: FnMut(usize, serde_json::Value) -> Result<(), String>> Visitor<'de> for Each<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0;
            while let Some(v) = seq.next_element::<serde_json::Value>()? {
                (self.0)(i, v).map_err(serde::de::Error::custom)?;
                i += 1;
            }
            Ok(())
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de.deserialize_seq(Each(&mut f)).map_err(|e| {
        let m = e.to_string();
        // serde's "invalid type" for a non-list, or the callback's message.
        m.split(" at line ").next().unwrap_or(&m).to_string()
    })
}

/// Iterates the records of a JSON Lines file or a JSON array file. A
/// record-level problem (malformed JSON, invalid UTF-8) is an `Err` item and
/// iteration can go on; a structural one (unterminated array) ends it.
pub struct JsonRecords {
    file: String,
    reader: Box<dyn BufRead>,
    mode: Mode,
    line: u64,
    buf: Vec<u8>,
    fatal: bool,
    saw_any: bool,
    /// Records are the elements of this key's array in a top-level object
    /// (TriviaQA's `{"Data": [...]}`); the object's other keys are skipped.
    array_keys: Option<&'static [&'static str]>,
    /// Top-level fields left as raw JSON instead of a value tree.
    lazy_keys: &'static [&'static str],
}

impl JsonRecords {
    /// Read records from `reader`; `file` is used to name the file in errors.
    pub fn new(file: &Path, reader: Box<dyn BufRead>) -> Self {
        JsonRecords {
            file: file.display().to_string(),
            reader,
            mode: Mode::Unknown,
            line: 1,
            buf: Vec::new(),
            fatal: false,
            saw_any: false,
            array_keys: None,
            lazy_keys: &[],
        }
    }

    /// Keep these top-level fields of each record as raw JSON: a list of a
    /// million passages then costs its bytes, not a value tree many times
    /// their size, and is walked one element at a time.
    pub fn lazy(mut self, keys: &'static [&'static str]) -> Self {
        self.lazy_keys = keys;
        self
    }

    /// Records from the array under one of `keys` in a top-level JSON object.
    pub fn in_object_array(
        file: &Path,
        reader: Box<dyn BufRead>,
        keys: &'static [&'static str],
    ) -> Self {
        let mut r = JsonRecords::new(file, reader);
        r.array_keys = Some(keys);
        r
    }

    /// Walk a top-level object's keys up to the array under one of `keys`.
    fn enter_object_array(&mut self, keys: &[&str]) -> Result<(), IngestError> {
        let _ = self.byte(); // '{'
        loop {
            match self.skip_ws().map_err(|e| self.io_err(e))? {
                Some(b'"') => {}
                Some(b'}') | None => {
                    return Err(self.file_err(format!(
                        "no `{}` array in the top-level object",
                        keys.join("` or `")
                    )))
                }
                Some(b',') => {
                    let _ = self.byte();
                    continue;
                }
                Some(c) => {
                    return Err(self.file_err(format!(
                        "line {}: expected a key, found `{}`",
                        self.line, c as char
                    )))
                }
            }
            self.scan_element()?; // the key, as a JSON string
            let key: String = serde_json::from_slice(&self.buf)
                .map_err(|e| self.file_err(format!("line {}: bad key: {e}", self.line)))?;
            if self.skip_ws().map_err(|e| self.io_err(e))? != Some(b':') {
                return Err(self.file_err(format!(
                    "line {}: expected `:` after key `{key}`",
                    self.line
                )));
            }
            let _ = self.byte();
            let next = self.skip_ws().map_err(|e| self.io_err(e))?;
            if keys.contains(&key.as_str()) && next == Some(b'[') {
                let _ = self.byte();
                self.mode = Mode::Array { done: false };
                return Ok(());
            }
            self.scan_element()?; // skip the value
        }
    }

    fn record_err(&self, line: u64, message: impl Into<String>) -> IngestError {
        IngestError::Record {
            file: self.file.clone(),
            line,
            message: message.into(),
        }
    }

    fn file_err(&mut self, message: impl Into<String>) -> IngestError {
        self.fatal = true;
        IngestError::File {
            file: self.file.clone(),
            message: message.into(),
        }
    }

    fn io_err(&mut self, e: std::io::Error) -> IngestError {
        self.file_err(format!("read error: {e}"))
    }

    /// Next byte, tracking line numbers.
    fn byte(&mut self) -> std::io::Result<Option<u8>> {
        let buf = self.reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        let b = buf[0];
        self.reader.consume(1);
        if b == b'\n' {
            self.line += 1;
        }
        Ok(Some(b))
    }

    fn peek(&mut self) -> std::io::Result<Option<u8>> {
        Ok(self.reader.fill_buf()?.first().copied())
    }

    fn skip_ws(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            match self.peek()? {
                Some(b) if b.is_ascii_whitespace() => {
                    self.byte()?;
                }
                other => return Ok(other),
            }
        }
    }

    fn parse(&self, line: u64, bytes: &[u8]) -> Result<RawRecord, IngestError> {
        if let Err(e) = std::str::from_utf8(bytes) {
            let upto = &bytes[..e.valid_up_to()];
            let extra_lines = upto.iter().filter(|&&b| b == b'\n').count() as u64;
            let col = upto.len()
                - upto
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map(|p| p + 1)
                    .unwrap_or(0)
                + 1;
            return Err(
                self.record_err(line + extra_lines, format!("invalid UTF-8 at column {col}"))
            );
        }
        let malformed = |e: serde_json::Error| {
            self.record_err(
                line + e.line().saturating_sub(1) as u64,
                format!("malformed JSON: {e}"),
            )
        };
        if !self.lazy_keys.is_empty()
            && bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        {
            let raw: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
                serde_json::from_slice(bytes).map_err(malformed)?;
            let mut map = serde_json::Map::new();
            let mut lazy = Vec::new();
            for (k, v) in raw {
                if self.lazy_keys.contains(&k.as_str()) {
                    lazy.push((k, v));
                } else {
                    map.insert(k, serde_json::from_str(v.get()).map_err(malformed)?);
                }
            }
            return Ok(RawRecord {
                line,
                value: serde_json::Value::Object(map),
                lazy,
            });
        }
        match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(value) => Ok(RawRecord {
                line,
                value,
                lazy: Vec::new(),
            }),
            Err(e) => Err(malformed(e)),
        }
    }

    fn next_line_record(&mut self) -> Option<Result<RawRecord, IngestError>> {
        loop {
            self.buf.clear();
            let start = self.line;
            match self.reader.read_until(b'\n', &mut self.buf) {
                Err(e) => return Some(Err(self.io_err(e))),
                Ok(0) => return None,
                Ok(_) => {}
            }
            self.line += 1;
            if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                self.buf.pop();
            }
            let bytes = std::mem::take(&mut self.buf);
            let r = self.parse(start, &bytes);
            self.buf = bytes;
            return Some(r);
        }
    }

    /// Read one element of the top-level array into `self.buf`, following
    /// strings and nesting, and stop before the `,` or `]` that ends it.
    fn scan_element(&mut self) -> Result<(), IngestError> {
        self.buf.clear();
        let (mut depth, mut in_str, mut esc) = (0i64, false, false);
        loop {
            let b = match self.peek().map_err(|e| self.io_err(e))? {
                Some(b) => b,
                None => {
                    return Err(self.file_err(format!(
                        "line {}: the JSON array is not closed (missing `]`)",
                        self.line
                    )))
                }
            };
            if !in_str
                && depth == 0
                && (b == b',' || b == b']' || b == b'}' || (b == b':' && !self.buf.is_empty()))
            {
                if self.buf.is_empty() {
                    // Nothing between separators (`[}]`, `[,`, a stray `}`):
                    // a structural error, fatal even under --on-error skip,
                    // since no record boundary can be found after it.
                    return Err(self.file_err(format!(
                        "line {}: unexpected `{}` where a record should start",
                        self.line, b as char
                    )));
                }
                return Ok(());
            }
            self.byte().map_err(|e| self.io_err(e))?;
            self.buf.push(b);
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                }
            } else {
                match b {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => depth -= 1,
                    _ => {}
                }
                if depth < 0 {
                    return Err(
                        self.file_err(format!("line {}: unbalanced `{}`", self.line, b as char))
                    );
                }
            }
        }
    }

    fn next_array_record(&mut self) -> Option<Result<RawRecord, IngestError>> {
        loop {
            let first = match self.skip_ws() {
                Err(e) => return Some(Err(self.io_err(e))),
                Ok(b) => b,
            };
            match first {
                None => {
                    return Some(Err(self.file_err(format!(
                        "line {}: the JSON array is not closed (missing `]`)",
                        self.line
                    ))))
                }
                Some(b']') => {
                    let _ = self.byte();
                    self.mode = Mode::Array { done: true };
                    if self.array_keys.is_some() {
                        return None; // the rest of the object is not records
                    }
                    return match self.skip_ws() {
                        Ok(None) => None,
                        Ok(Some(_)) => Some(Err(self.file_err(format!(
                            "line {}: unexpected data after the closing `]`",
                            self.line
                        )))),
                        Err(e) => Some(Err(self.io_err(e))),
                    };
                }
                Some(b',') if self.saw_any => {
                    let _ = self.byte();
                    continue;
                }
                Some(_) => {}
            }
            let start = self.line;
            if let Err(e) = self.scan_element() {
                return Some(Err(e));
            }
            self.saw_any = true;
            let bytes = std::mem::take(&mut self.buf);
            let r = self.parse(start, &bytes);
            self.buf = bytes;
            return Some(r);
        }
    }
}

impl Iterator for JsonRecords {
    type Item = Result<RawRecord, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.fatal {
            return None;
        }
        loop {
            match self.mode {
                Mode::Unknown => match self.skip_ws() {
                    Err(e) => return Some(Err(self.io_err(e))),
                    Ok(None) => {
                        self.fatal = true;
                        return Some(Err(IngestError::File {
                            file: self.file.clone(),
                            message: "the file is empty (no records)".into(),
                        }));
                    }
                    Ok(Some(b'{')) if self.array_keys.is_some() => {
                        let keys = self.array_keys.expect("checked");
                        if let Err(e) = self.enter_object_array(keys) {
                            return Some(Err(e));
                        }
                    }
                    Ok(Some(b'[')) => {
                        let _ = self.byte();
                        self.mode = Mode::Array { done: false };
                    }
                    Ok(Some(_)) => self.mode = Mode::Lines,
                },
                Mode::Lines => return self.next_line_record(),
                Mode::Array { done: true } => return None,
                Mode::Array { done: false } => return self.next_array_record(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &[u8]) -> Vec<Result<RawRecord, IngestError>> {
        JsonRecords::new(
            Path::new("t.json"),
            Box::new(std::io::Cursor::new(text.to_vec())),
        )
        .collect()
    }

    /// Regression (reliability #2): `[}]`, a stray `}` or a leading `,`
    /// looped forever under `--on-error skip`; now a structural error ends
    /// the file.
    #[test]
    fn structural_damage_ends_the_file() {
        for text in [
            &b"[}]"[..],
            b"[,{\"a\":1}]",
            b"[{\"a\":1},}]",
            b"[{\"a\":1}}]",
        ] {
            let r = records(text);
            assert!(
                r.len() <= 3,
                "{}: {} items",
                String::from_utf8_lossy(text),
                r.len()
            );
            let last = r.last().unwrap().as_ref().unwrap_err();
            assert!(matches!(last, IngestError::File { .. }), "{last}");
            assert!(
                last.to_string().contains("t.json") && last.to_string().contains("line 1"),
                "{last}"
            );
        }
    }

    #[test]
    fn array_elements_carry_their_start_line() {
        let r = records(b"[\n  {\"a\": \"x,]\\\"\"},\n  {\"b\": [1,\n 2]}\n]\n");
        let r: Vec<_> = r.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].line, 2);
        assert_eq!(r[0].value["a"], "x,]\"");
        assert_eq!(r[1].line, 3);
    }

    #[test]
    fn jsonl_skips_blank_lines_and_reports_bad_ones() {
        let r = records(b"{\"a\":1}\n\n{\"a\":\n{\"a\":3}\n");
        assert_eq!(r.len(), 3);
        assert!(r[0].is_ok());
        match &r[1] {
            Err(IngestError::Record { line, message, .. }) => {
                assert_eq!(*line, 3);
                assert!(message.contains("malformed JSON"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r[2].as_ref().unwrap().line, 4);
    }

    #[test]
    fn unclosed_array_is_a_file_error() {
        let r = records(b"[{\"a\":1},\n{\"a\":2}");
        assert!(matches!(r.last(), Some(Err(IngestError::File { .. }))));
    }

    #[test]
    fn empty_file_is_an_error() {
        let r = records(b"  \n ");
        assert!(
            matches!(&r[..], [Err(IngestError::File { message, .. })] if message.contains("empty"))
        );
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let r = records(b"{\"a\":\"ok\"}\n{\"a\":\"\xff\"}\n");
        match &r[1] {
            Err(IngestError::Record { line, message, .. }) => {
                assert_eq!(*line, 2);
                assert!(message.contains("invalid UTF-8 at column 7"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
