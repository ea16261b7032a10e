//! Writing a result: CSV, JSON Lines, Parquet, a table for the terminal.

use crate::*;

/// Output formats for a result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, with a header (flat columns only).
    Csv,
    /// A JSON array of row objects.
    Json,
    /// Parquet (zstd).
    Parquet,
}

/// Writes `df` to `path` (`-` = standard output for CSV and JSON),
/// atomically: a temp file beside it, fsynced, then renamed.
pub fn write(df: &mut DataFrame, format: Format, path: &Path) -> Result<()> {
    if format == Format::Csv {
        if let Some(c) = df.columns().iter().find(|c| c.dtype().is_nested()) {
            return Err(QueryError::Output(format!(
                "column `{}` is {}: CSV holds flat columns only; select its fields, or write --json or --parquet",
                c.name(),
                c.dtype()
            )));
        }
    }
    let out_err = |e: PolarsError| QueryError::Output(polars_message(&e).0);
    if path == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        match format {
            Format::Csv => CsvWriter::new(&mut stdout).finish(df).map_err(out_err)?,
            Format::Json => {
                write_json(df, &mut stdout).map_err(|e| QueryError::Output(e.to_string()))?
            }
            Format::Parquet => {
                return Err(QueryError::Output(
                    "Parquet goes to a file, not standard output".into(),
                ))
            }
        }
        return Ok(());
    }
    let io = |e: std::io::Error| QueryError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut out = Unnamed::create(path).map_err(io)?;
    {
        let f = out.file();
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut *f);
        match format {
            Format::Csv => CsvWriter::new(&mut w).finish(df).map_err(out_err)?,
            Format::Json => write_json(df, &mut w).map_err(io)?,
            Format::Parquet => {
                parquet_bytes(df, &mut w, ParquetCompression::Zstd(None))?;
            }
        }
        w.flush().map_err(io)?;
    }
    out.finish().map_err(io)
}

/// A result file being written: it appears at its path, whole, only when
/// finished. On Linux it is an unnamed file in the target's directory
/// (`O_TMPFILE`), linked into place at the end, so a process killed while
/// writing leaves nothing behind (a named temporary would stay, as large
/// as what was written). Elsewhere, or on a file system without
/// `O_TMPFILE`, a named temporary file beside the target, removed on
/// error and renamed into place.
pub(crate) enum Unnamed {
    #[cfg(target_os = "linux")]
    Anonymous {
        file: std::fs::File,
        dir: PathBuf,
        path: PathBuf,
    },
    Named {
        tmp: tempfile::NamedTempFile,
        path: PathBuf,
    },
}

impl Unnamed {
    pub(crate) fn create(path: &Path) -> std::io::Result<Unnamed> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let anonymous = std::fs::OpenOptions::new()
                .write(true)
                .mode(0o644)
                .custom_flags(libc::O_TMPFILE)
                .open(&dir);
            match anonymous {
                Ok(file) => {
                    return Ok(Unnamed::Anonymous {
                        file,
                        dir,
                        path: path.to_path_buf(),
                    })
                }
                // Not supported here: fall back to a named file.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Unnamed::Named {
            tmp: tempfile::NamedTempFile::new_in(&dir)?,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn file(&mut self) -> &mut std::fs::File {
        match self {
            #[cfg(target_os = "linux")]
            Unnamed::Anonymous { file, .. } => file,
            Unnamed::Named { tmp, .. } => tmp.as_file_mut(),
        }
    }

    /// Syncs the file and gives it its name (replacing what was there).
    pub(crate) fn finish(self) -> std::io::Result<()> {
        match self {
            #[cfg(target_os = "linux")]
            Unnamed::Anonymous { file, dir, path } => {
                use std::os::fd::AsRawFd;
                use std::os::unix::ffi::OsStrExt;
                file.sync_all()?;
                // linkat cannot replace a file: link under a fresh name in
                // the same directory, then rename over the target.
                let name = dir.join(format!(
                    ".{}.{}.part",
                    path.file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default(),
                    std::process::id()
                ));
                let _ = std::fs::remove_file(&name);
                let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
                let to = std::ffi::CString::new(name.as_os_str().as_bytes())?;
                // SAFETY: two NUL-terminated paths; the descriptor is open.
                let rc = unsafe {
                    libc::linkat(
                        libc::AT_FDCWD,
                        from.as_ptr(),
                        libc::AT_FDCWD,
                        to.as_ptr(),
                        libc::AT_SYMLINK_FOLLOW,
                    )
                };
                if rc != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                std::fs::rename(&name, &path).inspect_err(|_| {
                    let _ = std::fs::remove_file(&name);
                })
            }
            Unnamed::Named { tmp, path } => {
                tmp.as_file().sync_all()?;
                tmp.persist(&path).map(|_| ()).map_err(|e| e.error)
            }
        }
    }
}

/// A cell as JSON: numbers, strings, booleans and null as themselves,
/// lists as arrays, structs as objects, anything else (dates, decimals) as
/// its text. Non-finite floats become null.
pub(crate) fn json_of(v: AnyValue<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    let float = |x: f64| serde_json::Number::from_f64(x).map_or(J::Null, J::Number);
    match v {
        AnyValue::Null => J::Null,
        AnyValue::Boolean(b) => J::Bool(b),
        AnyValue::String(s) => J::String(s.to_string()),
        AnyValue::StringOwned(s) => J::String(s.to_string()),
        AnyValue::UInt8(x) => x.into(),
        AnyValue::UInt16(x) => x.into(),
        AnyValue::UInt32(x) => x.into(),
        AnyValue::UInt64(x) => x.into(),
        AnyValue::Int8(x) => x.into(),
        AnyValue::Int16(x) => x.into(),
        AnyValue::Int32(x) => x.into(),
        AnyValue::Int64(x) => x.into(),
        AnyValue::Float32(x) => float(x as f64),
        AnyValue::Float64(x) => float(x),
        AnyValue::List(s) => J::Array(s.iter().map(json_of).collect()),
        AnyValue::Struct(_, _, fields) => {
            let names: Vec<String> = fields.iter().map(|f| f.name().to_string()).collect();
            J::Object(
                names
                    .into_iter()
                    .zip(v._iter_struct_av().map(json_of))
                    .collect(),
            )
        }
        AnyValue::StructOwned(b) => J::Object(
            b.1.iter()
                .map(|f| f.name().to_string())
                .zip(b.0.into_iter().map(json_of))
                .collect(),
        ),
        other => J::String(other.to_string()),
    }
}

/// `df` as a JSON array of row objects (columns in order), one row a line.
pub(crate) fn write_json<W: Write>(df: &DataFrame, mut w: W) -> std::io::Result<()> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    w.write_all(b"[")?;
    for i in 0..df.height() {
        let mut row = serde_json::Map::new();
        for (name, col) in names.iter().zip(df.columns()) {
            let v = col
                .as_materialized_series()
                .get(i)
                .map_or(serde_json::Value::Null, json_of);
            row.insert(name.clone(), v);
        }
        // Keys in column order, not sorted: written by hand.
        let fields: Vec<String> = names
            .iter()
            .map(|n| format!("{}:{}", serde_json::Value::String(n.clone()), row[n]))
            .collect();
        let sep = if i == 0 { "\n" } else { ",\n" };
        write!(w, "{sep}{{{}}}", fields.join(","))?;
    }
    w.write_all(b"\n]\n")
}

/// `df` as Parquet with fixed settings (no parallel writer).
pub(crate) fn parquet_bytes<W: Write>(
    df: &mut DataFrame,
    w: W,
    compression: ParquetCompression,
) -> Result<()> {
    ParquetWriter::new(w)
        .with_compression(compression)
        .set_parallel(false)
        .finish(df)
        .map(|_| ())
        .map_err(|e| QueryError::Output(polars_message(&e).0))
}
