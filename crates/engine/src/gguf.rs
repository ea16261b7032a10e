//! Reading (and, for tests, writing) a GGUF file's header.
//!
//! [`read_content`] parses the header in one bounded pass: every declared
//! length is checked against the bytes the file still holds before
//! anything is allocated (a crafted file cannot ask for a multi-terabyte
//! `vec!`), every known tensor's data against the file's end, and
//! `general.alignment` against zero and non-powers of two. Hand-rolled
//! rather than a crate: the header is ~150 lines of format, and the crates
//! that parse it (candle's `gguf_file`) trust the file and bring a tensor
//! library with them.
//!
//! Layout (GGUF v1–v3, little-endian): magic `GGUF`, version u32, tensor
//! count and key-value count (u32 in v1, u64 after), the key-value pairs
//! (key string, type u32, value), the tensor infos (name string, n_dims
//! u32, dims u64 each (u32 in v1), type u32, offset u64), then the data,
//! aligned to `general.alignment` (default 32).

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::{EngineError, Result};

/// GGML's most dimensions a tensor has.
const MAX_DIMS: u32 = 4;
/// Default `general.alignment`.
const DEFAULT_ALIGNMENT: u64 = 32;
/// Deepest nesting of arrays read (GGUF files use one level).
const MAX_DEPTH: u32 = 4;
/// Most entries reserved ahead of reading them: counts are checked against
/// the bytes left, but an entry in memory is larger than its smallest
/// encoding, so a declared count alone never sizes an allocation.
const RESERVE_MAX: usize = 1 << 16;

/// A metadata value, as the file stores it (no conversion between types).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Type 0.
    U8(u8),
    /// Type 1.
    I8(i8),
    /// Type 2.
    U16(u16),
    /// Type 3.
    I16(i16),
    /// Type 4.
    U32(u32),
    /// Type 5.
    I32(i32),
    /// Type 10.
    U64(u64),
    /// Type 11.
    I64(i64),
    /// Type 6.
    F32(f32),
    /// Type 12.
    F64(f64),
    /// Type 7: one byte, 0 or 1.
    Bool(bool),
    /// Type 8: length-prefixed UTF-8 (invalid bytes replaced, trailing NULs dropped).
    String(String),
    /// Type 9: an element type, a count, the elements.
    Array(Vec<Value>),
}

impl Value {
    /// The value's GGUF type id.
    fn type_id(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::String(_) => 8,
            Value::Array(_) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }

    fn mismatch(&self, want: &str) -> EngineError {
        let mut shown = format!("{self:?}");
        if shown.len() > 60 {
            let cut = (0..=60)
                .rev()
                .find(|i| shown.is_char_boundary(*i))
                .unwrap_or(0);
            shown.truncate(cut);
            shown.push('…');
        }
        EngineError::Load(format!("expected {want}, found {shown}"))
    }

    /// The string, when the value is one.
    pub fn as_str(&self) -> Result<&str> {
        match self {
            Value::String(s) => Ok(s),
            v => Err(v.mismatch("a string")),
        }
    }

    /// The elements, when the value is an array.
    pub fn as_array(&self) -> Result<&[Value]> {
        match self {
            Value::Array(a) => Ok(a),
            v => Err(v.mismatch("an array")),
        }
    }

    /// The number, when the value is a u32 (no conversion).
    pub fn to_u32(&self) -> Result<u32> {
        match self {
            Value::U32(x) => Ok(*x),
            v => Err(v.mismatch("a u32")),
        }
    }

    /// The number, when the value is an i32 (no conversion).
    pub fn to_i32(&self) -> Result<i32> {
        match self {
            Value::I32(x) => Ok(*x),
            v => Err(v.mismatch("an i32")),
        }
    }

    /// The number, when the value is an f32 (no conversion).
    pub fn to_f32(&self) -> Result<f32> {
        match self {
            Value::F32(x) => Ok(*x),
            v => Err(v.mismatch("an f32")),
        }
    }

    /// The flag, when the value is a bool.
    pub fn to_bool(&self) -> Result<bool> {
        match self {
            Value::Bool(x) => Ok(*x),
            v => Err(v.mismatch("a bool")),
        }
    }

    fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        match self {
            Value::U8(x) => w.write_all(&[*x]),
            Value::I8(x) => w.write_all(&x.to_le_bytes()),
            Value::U16(x) => w.write_all(&x.to_le_bytes()),
            Value::I16(x) => w.write_all(&x.to_le_bytes()),
            Value::U32(x) => w.write_all(&x.to_le_bytes()),
            Value::I32(x) => w.write_all(&x.to_le_bytes()),
            Value::U64(x) => w.write_all(&x.to_le_bytes()),
            Value::I64(x) => w.write_all(&x.to_le_bytes()),
            Value::F32(x) => w.write_all(&x.to_le_bytes()),
            Value::F64(x) => w.write_all(&x.to_le_bytes()),
            Value::Bool(x) => w.write_all(&[*x as u8]),
            Value::String(s) => write_string(w, s),
            Value::Array(a) => {
                // An empty array's element type is not known; GGUF tools write u32.
                let et = a.first().map_or(4, Value::type_id);
                w.write_all(&et.to_le_bytes())?;
                w.write_all(&(a.len() as u64).to_le_bytes())?;
                a.iter().try_for_each(|x| x.write(w))
            }
        }
    }
}

fn write_string(w: &mut impl Write, s: &str) -> std::io::Result<()> {
    w.write_all(&(s.len() as u64).to_le_bytes())?;
    w.write_all(s.as_bytes())
}

/// One tensor's entry in the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Dimensions, outermost first (rows, then columns: the reverse of the
    /// file's order, which lists the contiguous dimension first).
    pub dims: Vec<u64>,
    /// The GGML type id (0 F32, 1 F16, 8 Q8_0, 12 Q4_K, …).
    pub ggml_type: u32,
    /// Offset of the data from [`Content::tensor_data_offset`].
    pub offset: u64,
}

impl TensorInfo {
    /// The number of values (the product of the dimensions; it cannot
    /// overflow: [`read_content`] refuses files where it would).
    pub fn elem_count(&self) -> usize {
        self.dims.iter().product::<u64>() as usize
    }
}

/// A GGUF file's header.
#[derive(Debug, Clone)]
pub struct Content {
    /// The format version (1 to 3).
    pub version: u32,
    /// Metadata by key (a repeated key: the last value).
    pub metadata: HashMap<String, Value>,
    /// Tensor entries by name.
    pub tensor_infos: HashMap<String, TensorInfo>,
    /// Where the tensor data begins, in bytes from the start of the file.
    pub tensor_data_offset: u64,
}

/// Opens `path` and reads its GGUF header (see the module docs); errors are
/// one line saying what is wrong (the caller names the file).
pub fn read_content(path: &Path) -> Result<(std::fs::File, Content)> {
    let err = EngineError::Load;
    let mut file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let len = file.metadata().map_err(|e| err(e.to_string()))?.len();
    let ct = {
        let mut r = Bounded {
            inner: std::io::BufReader::with_capacity(1 << 16, &mut file),
            pos: 0,
            len,
        };
        read_header(&mut r).map_err(|m| err(format!("not a valid GGUF file: {m}")))?
    };
    file.seek(SeekFrom::Start(0))
        .map_err(|e| err(e.to_string()))?;
    Ok((file, ct))
}

/// A reader that knows how many bytes are left.
struct Bounded<R> {
    inner: R,
    pos: u64,
    len: u64,
}

type Check<T> = std::result::Result<T, String>;

impl<R: Read> Bounded<R> {
    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn bytes<const N: usize>(&mut self) -> Check<[u8; N]> {
        let mut b = [0u8; N];
        self.inner
            .read_exact(&mut b)
            .map_err(|_| format!("cut short at byte {}", self.pos))?;
        self.pos += N as u64;
        Ok(b)
    }

    fn u32(&mut self) -> Check<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> Check<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    /// A string's length (u32 in v1, u64 after), checked against the file.
    fn string_len(&mut self, v1: bool, what: &str) -> Check<u64> {
        let n = if v1 { self.u32()? as u64 } else { self.u64()? };
        if n > self.left() {
            return Err(format!(
                "{what}: a string of {n} bytes at byte {}, but only {} remain",
                self.pos,
                self.left()
            ));
        }
        Ok(n)
    }

    fn string(&mut self, v1: bool, what: &str) -> Check<String> {
        let n = self.string_len(v1, what)?;
        let mut b = vec![0u8; n as usize];
        self.inner
            .read_exact(&mut b)
            .map_err(|_| format!("{what}: cut short"))?;
        self.pos += n;
        // As llama.cpp's and candle's readers: some writers leave a NUL at the end.
        while b.last() == Some(&0) {
            b.pop();
        }
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    fn count(&mut self, v1: bool) -> Check<u64> {
        Ok(if v1 { self.u32()? as u64 } else { self.u64()? })
    }
}

/// Reads one value of GGUF type `t` (`key` names it in errors).
fn value<R: Read>(r: &mut Bounded<R>, t: u32, v1: bool, key: &str, depth: u32) -> Check<Value> {
    Ok(match t {
        0 => Value::U8(r.bytes::<1>()?[0]),
        1 => Value::I8(r.bytes::<1>()?[0] as i8),
        2 => Value::U16(u16::from_le_bytes(r.bytes()?)),
        3 => Value::I16(i16::from_le_bytes(r.bytes()?)),
        4 => Value::U32(r.u32()?),
        5 => Value::I32(r.u32()? as i32),
        6 => Value::F32(f32::from_le_bytes(r.bytes()?)),
        7 => match r.bytes::<1>()?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            b => return Err(format!("`{key}`: a bool of byte {b}")),
        },
        8 => Value::String(r.string(v1, key)?),
        9 => {
            if depth >= MAX_DEPTH {
                return Err(format!("`{key}`: arrays nested too deep"));
            }
            let et = r.u32()?;
            let n = r.count(v1)?;
            // Each element takes at least one byte (a string or array at least 8).
            let least = match et {
                0 | 1 | 7 => 1,
                2 | 3 => 2,
                4..=6 => 4,
                8..=12 => 8,
                other => return Err(format!("`{key}`: unknown element type {other}")),
            };
            if n > r.left() / least {
                return Err(format!(
                    "`{key}`: an array of {n} elements at byte {}, but only {} bytes remain",
                    r.pos,
                    r.left()
                ));
            }
            // Reserved up to a bound: a Value is 32 bytes, an element as little as 1.
            let mut a = Vec::with_capacity((n as usize).min(RESERVE_MAX));
            for _ in 0..n {
                a.push(value(r, et, v1, key, depth + 1)?);
            }
            Value::Array(a)
        }
        10 => Value::U64(r.u64()?),
        11 => Value::I64(r.u64()? as i64),
        12 => Value::F64(f64::from_le_bytes(r.bytes()?)),
        other => return Err(format!("`{key}`: unknown metadata value type {other}")),
    })
}

/// (bytes per block, values per block) of a GGML tensor type, when known.
fn block(t: u32) -> Option<(u64, u64)> {
    Some(match t {
        0 => (4, 1),
        1 | 30 => (2, 1),
        2 => (18, 32),
        3 => (20, 32),
        6 => (22, 32),
        7 => (24, 32),
        8 => (34, 32),
        9 => (36, 32),
        10 => (84, 256),
        11 => (110, 256),
        12 => (144, 256),
        13 => (176, 256),
        14 => (210, 256),
        15 => (292, 256),
        _ => return None,
    })
}

fn read_header<R: Read>(r: &mut Bounded<R>) -> Check<Content> {
    if &r.bytes::<4>()? != b"GGUF" {
        return Err("no GGUF magic".into());
    }
    let version = r.u32()?;
    if !(1..=3).contains(&version) {
        return Err(format!("unknown version {version}"));
    }
    let v1 = version == 1;
    let tensors = r.count(v1)?;
    let kvs = r.count(v1)?;
    // A key-value pair takes at least 12 bytes, a tensor info at least 24.
    if kvs > r.left() / 12 || tensors > r.left() / 24 {
        return Err(format!(
            "declares {kvs} metadata entries and {tensors} tensors, more than its {} bytes can hold",
            r.len
        ));
    }
    let mut metadata = HashMap::with_capacity((kvs as usize).min(RESERVE_MAX));
    for _ in 0..kvs {
        let key = r.string(v1, "a metadata key")?;
        let t = r.u32()?;
        let v = value(r, t, v1, &key, 0)?;
        metadata.insert(key, v);
    }
    // As llama.cpp: a non-negative integer of up to 32 bits, else the default.
    let alignment = match metadata.get("general.alignment") {
        Some(Value::U8(a)) => Some(*a as i64),
        Some(Value::I8(a)) => Some(*a as i64),
        Some(Value::U16(a)) => Some(*a as i64),
        Some(Value::I16(a)) => Some(*a as i64),
        Some(Value::U32(a)) => Some(*a as i64),
        Some(Value::I32(a)) => Some(*a as i64),
        _ => None,
    };
    let alignment = match alignment {
        None => DEFAULT_ALIGNMENT,
        Some(a) if a < 0 => DEFAULT_ALIGNMENT,
        Some(a) if a > 0 && (a as u64).is_power_of_two() && a <= 1 << 20 => a as u64,
        Some(a) => {
            return Err(format!(
                "`general.alignment` is {a}: it must be a power of two"
            ))
        }
    };
    let mut tensor_infos = HashMap::with_capacity((tensors as usize).min(RESERVE_MAX));
    for _ in 0..tensors {
        let name = r.string(v1, "a tensor name")?;
        let n_dims = r.u32()?;
        if n_dims > MAX_DIMS {
            return Err(format!(
                "tensor `{name}` has {n_dims} dimensions (at most {MAX_DIMS})"
            ));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(if v1 { r.u32()? as u64 } else { r.u64()? });
        }
        dims.iter()
            .try_fold(1u64, |n, d| n.checked_mul(*d))
            .filter(|n| usize::try_from(*n).is_ok())
            .ok_or_else(|| format!("tensor `{name}`: its dimensions overflow"))?;
        dims.reverse();
        let ggml_type = r.u32()?;
        let offset = r.u64()?;
        tensor_infos.insert(
            name,
            TensorInfo {
                dims,
                ggml_type,
                offset,
            },
        );
    }
    let tensor_data_offset = r.pos.div_ceil(alignment) * alignment;
    for (name, info) in &tensor_infos {
        let Some((bytes, per)) = block(info.ggml_type) else {
            continue;
        };
        let values = info.elem_count() as u64;
        let size = values.div_ceil(per).checked_mul(bytes);
        let end = size.and_then(|s| tensor_data_offset.checked_add(info.offset)?.checked_add(s));
        match end {
            Some(end) if end <= r.len => {}
            _ => {
                return Err(format!(
                    "tensor `{name}` ({values} values of type {} at offset {}) ends past the file's {} bytes",
                    info.ggml_type, info.offset, r.len
                ))
            }
        }
    }
    Ok(Content {
        version,
        metadata,
        tensor_infos,
        tensor_data_offset,
    })
}

/// An integer metadata value `key` (any integer type), named in errors.
pub fn metadata_usize(ct: &Content, key: &str) -> Result<Option<usize>> {
    use Value as V;
    let Some(v) = ct.metadata.get(key) else {
        return Ok(None);
    };
    let n: Option<u64> = match v {
        V::U8(x) => Some(*x as u64),
        V::U16(x) => Some(*x as u64),
        V::U32(x) => Some(*x as u64),
        V::U64(x) => Some(*x),
        V::I8(x) => u64::try_from(*x).ok(),
        V::I16(x) => u64::try_from(*x).ok(),
        V::I32(x) => u64::try_from(*x).ok(),
        V::I64(x) => u64::try_from(*x).ok(),
        _ => None,
    };
    match n
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n <= u32::MAX as usize)
    {
        Some(n) => Ok(Some(n)),
        None => Err(EngineError::Load(format!(
            "GGUF metadata `{key}` is {v:?}: expected an integer up to {}",
            u32::MAX
        ))),
    }
}

/// One tensor to [`write`]: its dimensions (outermost first, as
/// [`TensorInfo::dims`]), GGML type id and encoded bytes.
pub struct TensorData<'a> {
    /// Dimensions, outermost first.
    pub dims: Vec<u64>,
    /// The GGML type id.
    pub ggml_type: u32,
    /// The encoded values (`dims`' product of them, in `ggml_type`'s blocks).
    pub bytes: &'a [u8],
}

/// Writes a GGUF v3 file: `metadata` in order, then `tensors`, each aligned
/// to 32 bytes (the default alignment). For tests and tools that make
/// small model files; the bytes are checked by nothing but the reader.
pub fn write(
    w: &mut impl Write,
    metadata: &[(&str, &Value)],
    tensors: &[(&str, TensorData<'_>)],
) -> std::io::Result<()> {
    let align = DEFAULT_ALIGNMENT as usize;
    let pad = |n: usize| (align - n % align) % align;
    let mut head = Vec::new();
    head.extend_from_slice(b"GGUF");
    head.extend_from_slice(&3u32.to_le_bytes());
    head.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    head.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (key, v) in metadata {
        write_string(&mut head, key)?;
        head.extend_from_slice(&v.type_id().to_le_bytes());
        v.write(&mut head)?;
    }
    let mut offset = 0usize;
    for (name, t) in tensors {
        write_string(&mut head, name)?;
        head.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        for d in t.dims.iter().rev() {
            head.extend_from_slice(&d.to_le_bytes());
        }
        head.extend_from_slice(&t.ggml_type.to_le_bytes());
        head.extend_from_slice(&(offset as u64).to_le_bytes());
        offset += t.bytes.len() + pad(t.bytes.len());
    }
    head.resize(head.len() + pad(head.len()), 0);
    w.write_all(&head)?;
    for (_, t) in tensors {
        w.write_all(t.bytes)?;
        w.write_all(&vec![0u8; pad(t.bytes.len())])?;
    }
    Ok(())
}

/// Writes a tiny llama-architecture model to `path`, for tests that need a
/// real GGUF file: width 8, 2 heads, 1 block, feed-forward 16, a 6-token
/// vocabulary, F32 weights of a fixed pattern. Each `(key, value)` of
/// `over` replaces that metadata entry (`None` removes it), so a test can
/// write the malformed files a loader must refuse.
pub fn write_tiny_llama(path: &Path, over: &[(&str, Option<Value>)]) -> Result<()> {
    const DIM: usize = 8;
    const FF: usize = 16;
    const VOCAB: usize = 6;
    let tokens = Value::Array((0..VOCAB).map(|i| Value::String(format!("t{i}"))).collect());
    let mut meta: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String("llama".into())),
        ("llama.embedding_length".into(), Value::U32(DIM as u32)),
        ("llama.attention.head_count".into(), Value::U32(2)),
        ("llama.block_count".into(), Value::U32(1)),
        ("llama.feed_forward_length".into(), Value::U32(FF as u32)),
        ("llama.context_length".into(), Value::U32(64)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            Value::F32(1e-5),
        ),
        ("tokenizer.ggml.tokens".into(), tokens),
    ];
    for (k, v) in over {
        meta.retain(|(key, _)| key != k);
        if let Some(v) = v {
            meta.push((k.to_string(), v.clone()));
        }
    }
    let f32_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let matrix = |rows: usize, cols: usize| {
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| ((i % 7) as f32 - 3.0) / 10.0)
            .collect();
        (vec![rows as u64, cols as u64], f32_bytes(&values))
    };
    let ones = |n: usize| (vec![n as u64], f32_bytes(&vec![1.0; n]));
    let tensors: Vec<(&str, (Vec<u64>, Vec<u8>))> = vec![
        ("token_embd.weight", matrix(VOCAB, DIM)),
        ("output_norm.weight", ones(DIM)),
        ("blk.0.attn_norm.weight", ones(DIM)),
        ("blk.0.ffn_norm.weight", ones(DIM)),
        ("blk.0.attn_q.weight", matrix(DIM, DIM)),
        ("blk.0.attn_k.weight", matrix(DIM, DIM)),
        ("blk.0.attn_v.weight", matrix(DIM, DIM)),
        ("blk.0.attn_output.weight", matrix(DIM, DIM)),
        ("blk.0.ffn_gate.weight", matrix(FF, DIM)),
        ("blk.0.ffn_up.weight", matrix(FF, DIM)),
        ("blk.0.ffn_down.weight", matrix(DIM, FF)),
    ];
    let m: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t: Vec<(&str, TensorData<'_>)> = tensors
        .iter()
        .map(|(k, (dims, bytes))| {
            let data = TensorData {
                dims: dims.clone(),
                ggml_type: 0,
                bytes,
            };
            (*k, data)
        })
        .collect();
    let err = |e: std::io::Error| EngineError::Load(format!("{}: {e}", path.display()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?);
    write(&mut f, &m, &t).map_err(err)?;
    f.into_inner()
        .map_err(|e| err(e.into_error()))?
        .sync_all()
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value type and a v3 tensor table survive a write and a read.
    #[test]
    fn write_then_read_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.gguf");
        let values = [
            Value::U8(7),
            Value::I8(-7),
            Value::U16(700),
            Value::I16(-700),
            Value::U32(70_000),
            Value::I32(-70_000),
            Value::U64(1 << 40),
            Value::I64(-(1 << 40)),
            Value::F32(0.5),
            Value::F64(-0.25),
            Value::Bool(true),
            Value::String("naïve".into()),
            Value::Array(vec![Value::String("a".into()), Value::String("".into())]),
            Value::Array(vec![Value::Array(vec![Value::I16(1), Value::I16(2)])]),
        ];
        let keys: Vec<String> = (0..values.len()).map(|i| format!("k{i}")).collect();
        let meta: Vec<(&str, &Value)> = keys.iter().map(|k| k.as_str()).zip(&values).collect();
        let data: Vec<u8> = (0..24u8).collect();
        let tensors = [
            (
                "a",
                TensorData {
                    dims: vec![2, 3],
                    ggml_type: 0,
                    bytes: &data,
                },
            ),
            (
                "b",
                TensorData {
                    dims: vec![5],
                    ggml_type: 1,
                    bytes: &data[..10],
                },
            ),
        ];
        write(&mut std::fs::File::create(&p).unwrap(), &meta, &tensors).unwrap();
        let (_, ct) = read_content(&p).unwrap();
        assert_eq!(ct.version, 3);
        for (k, v) in keys.iter().zip(&values) {
            assert_eq!(&ct.metadata[k], v, "{k}");
        }
        let a = &ct.tensor_infos["a"];
        assert_eq!((a.dims.clone(), a.ggml_type, a.offset), (vec![2, 3], 0, 0));
        assert_eq!(a.elem_count(), 6);
        let b = &ct.tensor_infos["b"];
        assert_eq!((b.dims.clone(), b.ggml_type, b.offset), (vec![5], 1, 32));
        let bytes = std::fs::read(&p).unwrap();
        let start = ct.tensor_data_offset as usize;
        assert_eq!(start % 32, 0);
        assert_eq!(&bytes[start..start + 24], &data[..]);
        assert_eq!(&bytes[start + 32..start + 42], &data[..10]);
    }

    /// A string with trailing NULs reads without them (as llama.cpp's
    /// reader); a bool byte other than 0 or 1 is refused.
    #[test]
    fn nul_terminated_strings_and_bad_bools() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.gguf");
        let s = Value::String("abc\0\0".into());
        write(&mut std::fs::File::create(&p).unwrap(), &[("s", &s)], &[]).unwrap();
        assert_eq!(
            read_content(&p).unwrap().1.metadata["s"],
            Value::String("abc".into())
        );
        let mut bytes = std::fs::read(&p).unwrap();
        // Retype the value as a bool of byte b'a'.
        let at = 4 + 4 + 8 + 8 + 8 + 1;
        bytes[at..at + 4].copy_from_slice(&7u32.to_le_bytes());
        bytes[at + 4] = b'a';
        std::fs::write(&p, &bytes).unwrap();
        let e = read_content(&p).unwrap_err().to_string();
        assert!(e.contains("a bool of byte 97"), "{e}");
    }
}
