//! Reading a predictions file (JSON Lines, CSV/TSV, Parquet) into
//! records, one line's error naming the file, line and field.

use super::*;

/// One record of a predictions file: its line (row number for Parquet)
/// and its fields.
pub(crate) type Record = (u64, serde_json::Map<String, Value>);

/// An error at one line of the predictions file.
pub(crate) type BadLine<'a> = dyn Fn(u64, String) -> ScoreError + Sync + 'a;

/// The predictions of a file whose bytes are `bytes`.
pub(super) fn read_file<'a>(
    path: &Path,
    bytes: &'a [u8],
    cols: &PredictionColumns,
    arenas: &'a mut Arenas,
) -> Result<Vec<Prediction<'a>>> {
    let file = path.display().to_string();
    let bad = |line: u64, m: String| ScoreError::Invalid(format!("{file}:{line}: {m}"));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let rows = if name.ends_with(".parquet") {
        let arena = one_arena(arenas);
        owned_rows(parquet_records(path, &bad)?, cols, &bad, arena)?
    } else if name.ends_with(".csv") || name.ends_with(".tsv") {
        let delim = if name.ends_with(".tsv") { b'\t' } else { b',' };
        let arena = one_arena(arenas);
        owned_rows(csv_records(path, delim, &bad)?, cols, &bad, arena)?
    } else {
        jsonl_predictions(bytes, cols, &bad, arenas)?
    };
    if rows.is_empty() {
        return Err(ScoreError::Invalid(format!("{file}: no predictions")));
    }
    Ok(rows)
}

/// A single arena in `arenas`.
pub(super) fn one_arena(arenas: &mut Arenas) -> &Bump {
    arenas.push(Bump::new());
    &arenas[arenas.len() - 1]
}

/// The predictions of whole records (CSV, Parquet).
pub(super) fn owned_rows<'a>(
    records: Vec<Record>,
    cols: &PredictionColumns,
    bad: &BadLine,
    arena: &'a Bump,
) -> Result<Vec<Prediction<'a>>> {
    records
        .into_iter()
        .map(|(line, m)| {
            let get = |c: &str| m.get(c).and_then(field_text).map(Cow::Owned);
            prediction(
                line,
                [
                    get(&cols.id),
                    get(&cols.prediction),
                    cols.model.as_deref().and_then(get),
                ],
                cols,
                bad,
                arena,
            )
        })
        .collect()
}

/// Check the three fields of one record: the id and prediction must be
/// there, and the model when a model column is named (else `external`).
pub(super) fn prediction<'a>(
    line: u64,
    [id, text, model]: [Option<Cow<'a, str>>; 3],
    cols: &PredictionColumns,
    bad: &BadLine,
    arena: &'a Bump,
) -> Result<Prediction<'a>> {
    let keep = |c: Cow<'a, str>| -> &'a str {
        match c {
            Cow::Borrowed(s) => s,
            Cow::Owned(s) => arena.alloc_str(&s),
        }
    };
    let id = id.ok_or_else(|| {
        bad(
            line,
            format!("field `{}` (the id column) is missing", cols.id),
        )
    })?;
    let text = text.ok_or_else(|| {
        bad(
            line,
            format!(
                "field `{}` (the prediction column) is missing",
                cols.prediction
            ),
        )
    })?;
    let model = match &cols.model {
        Some(c) => {
            model.ok_or_else(|| bad(line, format!("field `{c}` (the model column) is missing")))?
        }
        None => Cow::Borrowed("external"),
    };
    Ok(Prediction {
        line,
        id: keep(id),
        text: keep(text),
        model: keep(model),
    })
}

/// The predictions of a JSONL file (one JSON object a line; blank lines
/// skipped), parsed on all cores in pieces of about a megabyte that end at
/// a line end. Only the id, prediction and model fields are kept; a field
/// that is a string without escapes is borrowed from `bytes`.
pub(super) fn jsonl_predictions<'a>(
    bytes: &'a [u8],
    cols: &PredictionColumns,
    bad: &BadLine,
    arenas: &'a mut Arenas,
) -> Result<Vec<Prediction<'a>>> {
    const PIECE: usize = 1 << 20;
    // (first line number, bytes, lines) of each piece; its lines are the
    // parts between newlines (the last one empty when it ends with one).
    let mut pieces: Vec<(u64, &[u8], usize)> = Vec::new();
    let (mut start, mut line) = (0usize, 1u64);
    while start < bytes.len() {
        let end = match memchr::memchr(b'\n', &bytes[(start + PIECE).min(bytes.len())..]) {
            Some(i) => (start + PIECE).min(bytes.len()) + i + 1,
            None => bytes.len(),
        };
        let newlines = memchr::memchr_iter(b'\n', &bytes[start..end]).count();
        pieces.push((line, &bytes[start..end], newlines + 1));
        line += newlines as u64;
        start = end;
    }
    let names = [
        Some(cols.id.as_str()),
        Some(cols.prediction.as_str()),
        cols.model.as_deref(),
    ];
    // Each piece fills the slots of its own lines (a blank line's slot
    // keeps line 0), so the predictions are parsed straight into one
    // vector and the blanks dropped in place: a vector per piece joined
    // afterwards, or a collect into a new vector, held every prediction
    // twice.
    let blank = || Prediction {
        line: 0,
        id: "",
        text: "",
        model: "",
    };
    let mut slots: Vec<Prediction<'a>> = Vec::new();
    slots.resize_with(pieces.iter().map(|p| p.2).sum(), blank);
    let mut jobs = Vec::with_capacity(pieces.len());
    let mut rest = &mut slots[..];
    arenas.resize_with(pieces.len(), Bump::new);
    for (&(first, piece, lines), arena) in pieces.iter().zip(arenas.iter_mut()) {
        let (mine, others) = rest.split_at_mut(lines);
        jobs.push((first, piece, mine, arena));
        rest = others;
    }
    let parsed: Vec<Result<()>> = jobs
        .into_par_iter()
        .map(|(first, piece, out, arena)| {
            let arena: &Bump = arena;
            for ((i, raw), slot) in piece.split(|b| *b == b'\n').enumerate().zip(out) {
                let line = first + i as u64;
                let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                let text =
                    std::str::from_utf8(raw).map_err(|e| bad(line, format!("not UTF-8: {e}")))?;
                if text.trim().is_empty() {
                    continue;
                }
                let fields = parse_fields(text, &names).map_err(|m| bad(line, m))?;
                *slot = prediction(line, fields, cols, bad, arena)?;
            }
            Ok(())
        })
        .collect();
    // The first bad line in file order.
    parsed.into_iter().collect::<Result<()>>()?;
    slots.retain(|p| p.line != 0);
    Ok(slots)
}

/// The fields `names` of one JSON object line, as text ([`field_text`]).
pub(super) fn parse_fields<'a>(
    line: &'a str,
    names: &[Option<&str>; 3],
) -> Result<[Option<Cow<'a, str>>; 3], String> {
    if !line.trim_start().starts_with('{') {
        return Err(match serde_json::from_str::<de::IgnoredAny>(line) {
            Ok(_) => "not a JSON object".into(),
            Err(e) => format!("malformed JSON: {e}"),
        });
    }
    let mut d = serde_json::Deserializer::from_str(line);
    let fields = de::DeserializeSeed::deserialize(Fields(names), &mut d)
        .and_then(|f| d.end().map(|_| f))
        .map_err(|e| format!("malformed JSON: {e}"))?;
    Ok(fields)
}

/// Picks three named fields out of a JSON object; the last of repeated
/// keys wins, as with a JSON map.
pub(super) struct Fields<'n>(&'n [Option<&'n str>; 3]);

impl<'de> de::DeserializeSeed<'de> for Fields<'_> {
    type Value = [Option<Cow<'de, str>>; 3];
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> de::Visitor<'de> for Fields<'_> {
    type Value = [Option<Cow<'de, str>>; 3];
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Self::Value = [None, None, None];
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            // One field may serve several roles (the id as the model).
            let roles = self.0.map(|n| n == Some(&*key));
            if roles.contains(&true) {
                let value = map.next_value::<Cell<'de>>()?.0;
                for (slot, _) in out.iter_mut().zip(roles).filter(|(_, r)| *r) {
                    *slot = value.clone();
                }
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

/// A JSON string, borrowed when it has no escapes.
pub(super) struct Text<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A field's value as text, like [`field_text`]: strings as they are
/// (borrowed when they can be), other values as JSON, None for null.
pub(super) struct Cell<'de>(Option<Cow<'de, str>>);

impl<'de> serde::Deserialize<'de> for Cell<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Cell<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Owned(v))))
            }
            fn visit_unit<E>(self) -> Result<Cell<'de>, E> {
                Ok(Cell(None))
            }
            fn visit_none<E>(self) -> Result<Cell<'de>, E> {
                Ok(Cell(None))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Owned(Value::from(v).to_string()))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Owned(Value::from(v).to_string()))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Cell<'de>, E> {
                Ok(Cell(Some(Cow::Owned(Value::from(v).to_string()))))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, a: A) -> Result<Cell<'de>, A::Error> {
                let v = Value::deserialize(de::value::SeqAccessDeserializer::new(a))?;
                Ok(Cell(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, a: A) -> Result<Cell<'de>, A::Error> {
                let v = Value::deserialize(de::value::MapAccessDeserializer::new(a))?;
                Ok(Cell(Some(Cow::Owned(v.to_string()))))
            }
        }
        d.deserialize_any(V)
    }
}

/// The records of a Parquet file, numbered from 1 across its batches.
pub(crate) fn parquet_records(path: &Path, bad: &BadLine) -> Result<Vec<Record>> {
    let mut records: Vec<Record> = Vec::new();
    let f = std::fs::File::open(path).map_err(|e| bad(0, e.to_string()))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.build())
        .map_err(|e| bad(0, e.to_string()))?;
    let mut n = 0;
    for batch in reader {
        let batch = batch.map_err(|e| bad(n, e.to_string()))?;
        let mut buf = Vec::new();
        let mut w = arrow::json::LineDelimitedWriter::new(&mut buf);
        w.write(&batch)
            .and_then(|_| w.finish())
            .map_err(|e| bad(n, e.to_string()))?;
        let _ = batch.column(0).len();
        for l in buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            n += 1;
            match serde_json::from_slice(l) {
                Ok(Value::Object(m)) => records.push((n, m)),
                _ => return Err(bad(n, "row is not a record".into())),
            }
        }
    }
    Ok(records)
}

/// The records of a CSV or TSV file (cells as strings, by header), at
/// their file lines.
pub(crate) fn csv_records(path: &Path, delim: u8, bad: &BadLine) -> Result<Vec<Record>> {
    let mut records: Vec<Record> = Vec::new();
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(delim)
        .from_path(path)
        .map_err(|e| bad(0, e.to_string()))?;
    let headers = rdr.headers().map_err(|e| bad(1, e.to_string()))?.clone();
    for r in rdr.records() {
        let r = r.map_err(|e| bad(e.position().map(|p| p.line()).unwrap_or(0), e.to_string()))?;
        let line = r.position().map(|p| p.line()).unwrap_or(0);
        records.push((
            line,
            headers
                .iter()
                .zip(r.iter())
                .map(|(h, v)| (h.to_string(), Value::String(v.to_string())))
                .collect(),
        ));
    }
    Ok(records)
}

/// A field's value as text: strings as they are, other values as JSON;
/// None for null.
pub(super) fn field_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}
