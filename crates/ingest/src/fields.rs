//! Typed access to the fields of a JSON record, with errors that name the field.

use serde_json::{Map, Value};

use crate::error::FieldError;

/// The JSON type of a value, for error messages.
pub fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A JSON object being taken apart; fields read are removed, so what is left
/// at the end is the record's extra fields (kept as `meta`).
pub struct Obj {
    /// The fields not taken yet.
    pub map: Map<String, Value>,
    /// Where the object sits in its record (`""` at the top; `ctxs[3]`),
    /// prefixed to field names in errors.
    pub path: String,
}

impl Obj {
    /// The object `value`, found at `path` of its record; anything else is
    /// a field error.
    pub fn new(value: Value, path: &str) -> Result<Obj, FieldError> {
        match value {
            Value::Object(map) => Ok(Obj {
                map,
                path: path.to_string(),
            }),
            other => Err(FieldError::new(
                if path.is_empty() { "<record>" } else { path },
                format!("must be a JSON object, found {}", type_of(&other)),
            )),
        }
    }

    /// The name of field `key` in errors: its path in the record.
    pub fn field_name(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Look at a field without taking it.
    pub fn peek(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Take a field (a JSON null is absent).
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// Take the first present key among `keys`.
    pub fn take_any(&mut self, keys: &[&str]) -> Option<(String, Value)> {
        for k in keys {
            if let Some(v) = self.take(k) {
                return Some((k.to_string(), v));
            }
        }
        None
    }

    /// A required non-empty string.
    pub fn req_str(&mut self, key: &str) -> Result<String, FieldError> {
        let name = self.field_name(key);
        match self.take(key) {
            None => Err(FieldError::missing(name)),
            Some(v) => nonempty_string(v, &name),
        }
    }

    /// A required string that may be empty (passage text: title-only
    /// documents are real data).
    pub fn req_text(&mut self, key: &str) -> Result<String, FieldError> {
        let name = self.field_name(key);
        match self.take(key) {
            None => Err(FieldError::missing(name)),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(FieldError::new(
                name,
                format!("must be a string, found {}", type_of(&other)),
            )),
        }
    }

    /// An optional string (numbers are accepted and printed).
    pub fn opt_str(&mut self, key: &str) -> Result<Option<String>, FieldError> {
        let name = self.field_name(key);
        self.take(key).map(|v| scalar_string(v, &name)).transpose()
    }

    /// An optional id: a string or an integer.
    pub fn opt_id(&mut self, keys: &[&str]) -> Result<Option<String>, FieldError> {
        match self.take_any(keys) {
            None => Ok(None),
            Some((k, v)) => {
                let name = self.field_name(&k);
                scalar_string(v, &name).map(Some)
            }
        }
    }

    /// A required list of strings.
    pub fn req_str_list(&mut self, key: &str) -> Result<Vec<String>, FieldError> {
        let name = self.field_name(key);
        match self.take(key) {
            None => Err(FieldError::missing(name)),
            Some(v) => str_list(v, &name),
        }
    }

    /// An optional list of strings.
    pub fn opt_str_list(&mut self, key: &str) -> Result<Option<Vec<String>>, FieldError> {
        let name = self.field_name(key);
        self.take(key).map(|v| str_list(v, &name)).transpose()
    }

    /// An optional float; numeric strings are accepted (Self-RAG writes scores as strings).
    pub fn opt_f64(&mut self, key: &str) -> Result<Option<f64>, FieldError> {
        let name = self.field_name(key);
        let v = match self.take(key) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => Some(s.trim().parse::<f64>().map_err(|_| {
                FieldError::new(
                    name.clone(),
                    format!("must be a number, found the string {s:?}"),
                )
            })?),
            Some(other) => {
                return Err(FieldError::new(
                    name,
                    format!("must be a number, found {}", type_of(&other)),
                ))
            }
        };
        // "NaN", "inf" and numbers past f64's range are not scores.
        match v {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(FieldError::new(
                name,
                "must be a finite number (NaN and infinities are refused)",
            )),
        }
    }

    /// An optional boolean (0/1 and "true"/"false" accepted).
    pub fn opt_bool(&mut self, keys: &[&str]) -> Result<Option<bool>, FieldError> {
        match self.take_any(keys) {
            None => Ok(None),
            Some((k, v)) => {
                let name = self.field_name(&k);
                match v {
                    Value::Bool(b) => Ok(Some(b)),
                    Value::Number(n) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => {
                        Ok(Some(n.as_i64() == Some(1)))
                    }
                    Value::String(s)
                        if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") =>
                    {
                        Ok(Some(s.eq_ignore_ascii_case("true")))
                    }
                    other => Err(FieldError::new(
                        name,
                        format!("must be a boolean, found {}", type_of(&other)),
                    )),
                }
            }
        }
    }

    /// An optional list of objects (missing = empty).
    pub fn opt_obj_list(&mut self, key: &str) -> Result<Vec<Obj>, FieldError> {
        let name = self.field_name(key);
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(v) => obj_list(v, &name),
        }
    }

    /// The fields nobody read, as canonical JSON (sorted keys), or None.
    pub fn rest(self) -> Option<String> {
        if self.map.is_empty() {
            None
        } else {
            Some(ragprobe_artifact::canonical_json(&Value::Object(self.map)))
        }
    }
}

fn nonempty_string(v: Value, name: &str) -> Result<String, FieldError> {
    match v {
        Value::String(s) if s.trim().is_empty() => Err(FieldError::new(name, "is empty")),
        Value::String(s) => Ok(s),
        other => Err(FieldError::new(
            name,
            format!("must be a string, found {}", type_of(&other)),
        )),
    }
}

fn scalar_string(v: Value, name: &str) -> Result<String, FieldError> {
    match v {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(FieldError::new(
            name,
            format!("must be a string or a number, found {}", type_of(&other)),
        )),
    }
}

/// A list of strings.
pub fn str_list(v: Value, name: &str) -> Result<Vec<String>, FieldError> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(FieldError::new(
                    format!("{name}[{i}]"),
                    format!("must be a string, found {}", type_of(&other)),
                )),
            })
            .collect(),
        other => Err(FieldError::new(
            name,
            format!("must be a list of strings, found {}", type_of(&other)),
        )),
    }
}

fn obj_list(v: Value, name: &str) -> Result<Vec<Obj>, FieldError> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| Obj::new(item, &format!("{name}[{i}]")))
            .collect(),
        other => Err(FieldError::new(
            name,
            format!("must be a list of objects, found {}", type_of(&other)),
        )),
    }
}
