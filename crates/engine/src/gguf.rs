//! Reading a GGUF file's header safely.
//!
//! candle's `gguf_file::Content::read` trusts the file: a declared string or
//! array length becomes an allocation of that size (a crafted file aborts
//! the process on a multi-terabyte `vec!`), and `general.alignment = 0`
//! divides by zero. [`read_content`] first walks the header itself, checking
//! every declared length against the bytes the file still holds, every
//! tensor's data against the file's end, and the alignment, and only then
//! hands the file to candle. Hand-rolled rather than a crate: it is the
//! bounds check of the one parser we use, and must follow its layout.
//!
//! Layout (GGUF v1–v3, little-endian): magic `GGUF`, version u32, tensor
//! count and key-value count (u32 in v1, u64 after), the key-value pairs
//! (key string, type u32, value), the tensor infos (name string, n_dims
//! u32, dims u64 each, type u32, offset u64), then the aligned data.

use candle_core::quantized::gguf_file;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::{EngineError, Result};

/// GGML's most dimensions a tensor has.
const MAX_DIMS: u32 = 4;
/// Default `general.alignment`.
const DEFAULT_ALIGNMENT: u64 = 32;

/// Opens `path` and reads its GGUF header after checking it (see the
/// module docs); errors are one line saying what is wrong (the caller names
/// the file).
pub fn read_content(path: &Path) -> Result<(std::fs::File, gguf_file::Content)> {
    let err = EngineError::Load;
    let mut file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
    let len = file.metadata().map_err(|e| err(e.to_string()))?.len();
    {
        let mut r = Bounded {
            inner: std::io::BufReader::new(&mut file),
            pos: 0,
            len,
        };
        check_header(&mut r).map_err(|m| err(format!("not a valid GGUF file: {m}")))?;
    }
    file.seek(SeekFrom::Start(0))
        .map_err(|e| err(e.to_string()))?;
    let ct =
        gguf_file::Content::read(&mut file).map_err(|e| err(format!("not a GGUF file: {e}")))?;
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

    /// Skips `n` bytes that the file must hold.
    fn skip(&mut self, n: u64, what: &str) -> Check<()> {
        if n > self.left() {
            return Err(format!(
                "{what} declares {n} bytes at byte {}, but only {} remain",
                self.pos,
                self.left()
            ));
        }
        std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink())
            .map_err(|e| e.to_string())?;
        self.pos += n;
        Ok(())
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
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    fn count(&mut self, v1: bool) -> Check<u64> {
        Ok(if v1 { self.u32()? as u64 } else { self.u64()? })
    }
}

/// Bytes of one fixed-size value of GGUF type `t`; `None` for strings and
/// arrays.
fn fixed_size(t: u32) -> Check<Option<u64>> {
    Ok(match t {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        8 | 9 => None,
        other => return Err(format!("unknown metadata value type {other}")),
    })
}

/// Skips one value of type `t`; returns it as an integer when it is one
/// (for `general.alignment`).
fn value<R: Read>(
    r: &mut Bounded<R>,
    t: u32,
    v1: bool,
    key: &str,
    depth: u32,
) -> Check<Option<i128>> {
    match t {
        0 => Ok(Some(r.bytes::<1>()?[0] as i128)),
        1 => Ok(Some(r.bytes::<1>()?[0] as i8 as i128)),
        2 => Ok(Some(u16::from_le_bytes(r.bytes()?) as i128)),
        3 => Ok(Some(i16::from_le_bytes(r.bytes()?) as i128)),
        4 => Ok(Some(r.u32()? as i128)),
        5 => Ok(Some(r.u32()? as i32 as i128)),
        10 => Ok(Some(r.u64()? as i128)),
        11 => Ok(Some(r.u64()? as i64 as i128)),
        8 => {
            let n = r.string_len(v1, key)?;
            r.skip(n, key)?;
            Ok(None)
        }
        9 => {
            if depth > 4 {
                return Err(format!("`{key}`: arrays nested too deep"));
            }
            let et = r.u32()?;
            let n = r.count(v1)?;
            match fixed_size(et)? {
                Some(size) => {
                    let bytes = n
                        .checked_mul(size)
                        .ok_or_else(|| format!("`{key}`: {n} elements"))?;
                    r.skip(bytes, &format!("`{key}`"))?;
                }
                None => {
                    // Each string or array takes at least 8 bytes.
                    if n > r.left() / 8 + 1 {
                        return Err(format!(
                            "`{key}`: an array of {n} elements at byte {}, but only {} bytes remain",
                            r.pos,
                            r.left()
                        ));
                    }
                    for _ in 0..n {
                        value(r, et, v1, key, depth + 1)?;
                    }
                }
            }
            Ok(None)
        }
        other => {
            let size = fixed_size(other)?.unwrap_or(0);
            r.skip(size, key)?;
            Ok(None)
        }
    }
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

fn check_header<R: Read>(r: &mut Bounded<R>) -> Check<()> {
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
    let mut alignment = DEFAULT_ALIGNMENT;
    for _ in 0..kvs {
        let key = r.string(v1, "a metadata key")?;
        let t = r.u32()?;
        let v = value(r, t, v1, &key, 0)?;
        // As candle reads it: a non-negative 8/16/32-bit integer, else the default.
        if key == "general.alignment" && t <= 5 {
            match v {
                Some(a) if a < 0 => {}
                Some(a) if a > 0 && (a as u64).is_power_of_two() && a <= 1 << 20 => {
                    alignment = a as u64
                }
                _ => {
                    return Err(format!(
                        "`general.alignment` is {v:?}: it must be a power of two"
                    ))
                }
            }
        }
    }
    let mut infos = Vec::new();
    for _ in 0..tensors {
        let name = r.string(v1, "a tensor name")?;
        let n_dims = r.u32()?;
        if n_dims > MAX_DIMS {
            return Err(format!(
                "tensor `{name}` has {n_dims} dimensions (at most {MAX_DIMS})"
            ));
        }
        let mut values = 1u64;
        for _ in 0..n_dims {
            let d = if v1 { r.u32()? as u64 } else { r.u64()? };
            values = values
                .checked_mul(d)
                .ok_or_else(|| format!("tensor `{name}`: its dimensions overflow"))?;
        }
        let t = r.u32()?;
        let offset = r.u64()?;
        infos.push((name, values, t, offset));
    }
    let data = r.pos.div_ceil(alignment) * alignment;
    for (name, values, t, offset) in infos {
        let Some((bytes, per)) = block(t) else {
            continue;
        };
        let size = values.div_ceil(per).checked_mul(bytes);
        let end = size.and_then(|s| data.checked_add(offset)?.checked_add(s));
        match end {
            Some(end) if end <= r.len => {}
            _ => {
                return Err(format!(
                    "tensor `{name}` ({values} values of type {t} at offset {offset}) ends past the file's {} bytes",
                    r.len
                ))
            }
        }
    }
    Ok(())
}

/// An integer metadata value `key` (any integer type), named in errors.
pub fn metadata_usize(ct: &gguf_file::Content, key: &str) -> Result<Option<usize>> {
    use gguf_file::Value as V;
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

/// Writes a tiny llama-architecture model to `path`, for tests that need a
/// real GGUF file: width 8, 2 heads, 1 block, feed-forward 16, a 6-token
/// vocabulary, F32 weights of a fixed pattern. Each `(key, value)` of
/// `over` replaces that metadata entry (`None` removes it), so a test can
/// write the malformed files a loader must refuse.
pub fn write_tiny_llama(path: &Path, over: &[(&str, Option<gguf_file::Value>)]) -> Result<()> {
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{DType, Device, Tensor};
    use gguf_file::Value;
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
    let matrix = |rows: usize, cols: usize| -> Result<QTensor> {
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| ((i % 7) as f32 - 3.0) / 10.0)
            .collect();
        let t = Tensor::from_vec(values, (rows, cols), &Device::Cpu)?;
        Ok(QTensor::quantize(&t, GgmlDType::F32)?)
    };
    let ones = |n: usize| -> Result<QTensor> {
        let t = Tensor::ones(n, DType::F32, &Device::Cpu)?;
        Ok(QTensor::quantize(&t, GgmlDType::F32)?)
    };
    let tensors: Vec<(&str, QTensor)> = vec![
        ("token_embd.weight", matrix(VOCAB, DIM)?),
        ("output_norm.weight", ones(DIM)?),
        ("blk.0.attn_norm.weight", ones(DIM)?),
        ("blk.0.ffn_norm.weight", ones(DIM)?),
        ("blk.0.attn_q.weight", matrix(DIM, DIM)?),
        ("blk.0.attn_k.weight", matrix(DIM, DIM)?),
        ("blk.0.attn_v.weight", matrix(DIM, DIM)?),
        ("blk.0.attn_output.weight", matrix(DIM, DIM)?),
        ("blk.0.ffn_gate.weight", matrix(FF, DIM)?),
        ("blk.0.ffn_up.weight", matrix(FF, DIM)?),
        ("blk.0.ffn_down.weight", matrix(DIM, FF)?),
    ];
    let m: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (*k, v)).collect();
    let err = |e: std::io::Error| EngineError::Load(format!("{}: {e}", path.display()));
    let mut f = std::fs::File::create(path).map_err(err)?;
    gguf_file::write(&mut f, &m, &t)?;
    f.sync_all().map_err(err)
}
