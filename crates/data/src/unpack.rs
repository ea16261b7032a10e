//! Archives into the files the pipelines read ([`Unpack`]): a zip member
//! as a file, a subtree as a directory, JSON members as one JSON Lines
//! file. Each output is built beside its destination (`<to>.unpack`) and
//! renamed into place, so an output that exists is complete; a crash leaves
//! only the scratch copy, which the next attempt removes.
//!
//! Member paths are checked with the zip crate's `enclosed_name`: a member
//! that would land outside the output (`../`, an absolute path) is refused
//! and nothing is renamed into place.

use crate::registry::{Take, Unpack};
use crate::DataError;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Makes `u.to` under `dir` from the verified archive at `archive`; `what`
/// names the dataset and archive in errors.
pub(crate) fn unpack(archive: &Path, u: &Unpack, dir: &Path, what: &str) -> Result<(), DataError> {
    let dest = dir.join(u.to);
    let scratch = PathBuf::from(format!("{}.unpack", dest.display()));
    let fail = |m: String| DataError::Archive(format!("{what}: {m}"));
    let io = |p: &Path, e: std::io::Error| fail(format!("{}: {e}", p.display()));
    remove(&scratch).map_err(|e| io(&scratch, e))?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    let file = std::fs::File::open(archive).map_err(|e| io(archive, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| fail(format!("not a readable zip archive: {e}")))?;
    let made = match u.take {
        Take::Member(name) => member(&mut zip, name, &scratch, &fail),
        Take::Tree(prefix) => tree(&mut zip, prefix, &scratch, &fail),
        Take::JsonLines(prefix) => json_lines(&mut zip, prefix, &scratch, &fail),
    };
    if let Err(e) = made {
        let _ = remove(&scratch);
        return Err(e);
    }
    std::fs::rename(&scratch, &dest).map_err(|e| io(&dest, e))?;
    tracing::info!("{what}: unpacked {}", dest.display());
    Ok(())
}

type Zip = zip::ZipArchive<std::io::BufReader<std::fs::File>>;

/// Removes a file or directory if it is there.
/// Makes the error of a failed step, naming the archive.
type Fail<'a> = &'a dyn Fn(String) -> DataError;

fn remove(p: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The archive's regular files under `prefix`, in name order, as
/// (index, path relative to the prefix). A name that is not a safe relative
/// path is refused; macOS resource forks (`__MACOSX/`) are not files of the
/// data and are passed over.
fn files_under(
    zip: &mut Zip,
    prefix: &str,
    fail: Fail<'_>,
) -> Result<Vec<(usize, String)>, DataError> {
    let mut out = Vec::new();
    for i in 0..zip.len() {
        let f = zip
            .by_index_raw(i)
            .map_err(|e| fail(format!("member {i}: {e}")))?;
        let name = f
            .name()
            .map_err(|e| fail(format!("member {i}: {e}")))?
            .to_string();
        if f.is_dir() || name.starts_with("__MACOSX/") {
            continue;
        }
        let Some(rel) = name.strip_prefix(prefix) else {
            continue;
        };
        if f.enclosed_name().is_none() || rel.split('/').any(|s| s.is_empty() || s == "..") {
            return Err(fail(format!(
                "member `{name}` is not a safe relative path; refused"
            )));
        }
        out.push((i, rel.to_string()));
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

fn member(zip: &mut Zip, name: &str, to: &Path, fail: Fail<'_>) -> Result<(), DataError> {
    let mut f = zip.by_name(name).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => fail(format!("the archive has no member `{name}`")),
        e => fail(format!("member `{name}`: {e}")),
    })?;
    copy(&mut f, to, name, fail)
}

fn tree(zip: &mut Zip, prefix: &str, to: &Path, fail: Fail<'_>) -> Result<(), DataError> {
    let files = files_under(zip, prefix, fail)?;
    if files.is_empty() {
        return Err(fail(format!("the archive has no files under `{prefix}`")));
    }
    std::fs::create_dir_all(to).map_err(|e| fail(format!("{}: {e}", to.display())))?;
    for (i, rel) in files {
        let dest = to.join(&rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail(format!("{}: {e}", parent.display())))?;
        }
        let mut f = zip
            .by_index(i)
            .map_err(|e| fail(format!("member `{prefix}{rel}`: {e}")))?;
        copy(&mut f, &dest, &format!("{prefix}{rel}"), fail)?;
    }
    Ok(())
}

/// Each member under `prefix` holds one JSON object, a JSON array of them,
/// or JSON Lines (gzipped when its name ends in `.gz`); every object becomes
/// one line, members in name order. A member that is none of these is an
/// error naming it: no record is dropped.
fn json_lines(zip: &mut Zip, prefix: &str, to: &Path, fail: Fail<'_>) -> Result<(), DataError> {
    let files = files_under(zip, prefix, fail)?;
    let out = std::fs::File::create(to).map_err(|e| fail(format!("{}: {e}", to.display())))?;
    let mut out = std::io::BufWriter::new(out);
    let mut records = 0usize;
    for (i, rel) in files {
        let name = format!("{prefix}{rel}");
        let mut bytes = Vec::new();
        let mut f = zip
            .by_index(i)
            .map_err(|e| fail(format!("member `{name}`: {e}")))?;
        let read = if rel.ends_with(".gz") {
            flate2::read::MultiGzDecoder::new(&mut f).read_to_end(&mut bytes)
        } else {
            f.read_to_end(&mut bytes)
        };
        read.map_err(|e| fail(format!("member `{name}`: {e}")))?;
        for value in json_objects(&bytes).map_err(|m| fail(format!("member `{name}`: {m}")))? {
            serde_json::to_writer(&mut out, &value)
                .map_err(std::io::Error::from)
                .and_then(|_| out.write_all(b"\n"))
                .map_err(|e| fail(format!("{}: {e}", to.display())))?;
            records += 1;
        }
    }
    if records == 0 {
        return Err(fail(format!(
            "the archive has no JSON records under `{prefix}`"
        )));
    }
    out.flush()
        .and_then(|_| out.get_ref().sync_all())
        .map_err(|e| fail(format!("{}: {e}", to.display())))
}

/// The JSON objects of one member: an object, an array of objects, or JSON
/// Lines of objects.
fn json_objects(bytes: &[u8]) -> Result<Vec<serde_json::Value>, String> {
    use serde_json::Value;
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v @ Value::Object(_)) => return Ok(vec![v]),
        Ok(Value::Array(items)) => {
            return items
                .into_iter()
                .enumerate()
                .map(|(k, v)| match v {
                    Value::Object(_) => Ok(v),
                    _ => Err(format!("item {k} is not a JSON object")),
                })
                .collect()
        }
        Ok(_) => return Err("not a JSON object".into()),
        Err(_) => {}
    }
    let mut out = Vec::new();
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v @ Value::Object(_)) => out.push(v),
            Ok(_) => return Err(format!("line {}: not a JSON object", n + 1)),
            Err(e) => return Err(format!("line {}: {e}", n + 1)),
        }
    }
    Ok(out)
}

fn copy(from: &mut impl Read, to: &Path, name: &str, fail: Fail<'_>) -> Result<(), DataError> {
    let mut out = std::fs::File::create(to).map_err(|e| fail(format!("{}: {e}", to.display())))?;
    std::io::copy(from, &mut out).map_err(|e| fail(format!("member `{name}`: {e}")))?;
    out.sync_all()
        .map_err(|e| fail(format!("{}: {e}", to.display())))
}
