//! What the studies add to a perturb run beyond the stage's own options:
//! their named options ([`StudyOptions`], read by their scenarios) and
//! their question samples ([`QuestionSample`], drawn before any case is
//! built). The stage records the options in the recipe and applies the
//! samples; it knows neither's meaning.

use crate::{PerturbError, Result};
use ragprobe_artifact::QuestionRow;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The recipe parameters the stage itself writes: no study option may take
/// one of these names.
pub(crate) const STAGE_PARAMS: &[&str] = &[
    "scenarios",
    "k",
    "seed",
    "relabel_unanswerable",
    "distractors",
    "limit",
    "sample",
    "foil",
    "writer",
];

/// A study's options of a perturb run, by name (`noise_rates`,
/// `..._sample`, ...): set by the caller (the CLI's flags, through the
/// study's own typed options), read back by the study's scenarios and
/// samples, and recorded in the recipe under their names, so every value
/// that shapes a case is in the ids.
///
/// A value is recorded as it was set: two runs with the same values have
/// the same recipe, whichever study set them. A study that leaves an
/// option out when it has its default keeps the ids of runs before the
/// option existed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StudyOptions {
    values: Map<String, Value>,
}

impl StudyOptions {
    /// Set `name` to `value` (replacing an earlier value).
    pub fn set(&mut self, name: &str, value: impl serde::Serialize) {
        let v = serde_json::to_value(value).expect("an option value serialises to JSON");
        self.values.insert(name.to_string(), v);
    }

    /// Remove `name` (its default applies where it is read).
    pub fn unset(&mut self, name: &str) {
        self.values.remove(name);
    }

    /// The value of `name`, None when it is not set or null; an
    /// [`PerturbError::Invalid`] naming the option when it has another type.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        match self.values.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| PerturbError::Invalid(format!("option `{name}`: {e}"))),
        }
    }

    /// Every value set, by name, as the recipe records them.
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// Refuse a name the stage's recipe already uses.
    pub(crate) fn check(&self) -> Result<()> {
        match self
            .values
            .keys()
            .find(|k| STAGE_PARAMS.contains(&k.as_str()))
        {
            Some(k) => Err(PerturbError::Invalid(format!(
                "study option `{k}` has the name of one of the stage's own options"
            ))),
            None => Ok(()),
        }
    }
}

/// A sample of the questions, drawn after `--limit` and `--sample` and
/// before any case is built: a study's protocol for which queries it
/// evaluates (a reference's query sampler). Registered by the caller
/// (`ragprobe_studies`), asked for by one of the study's options.
///
/// The caller guarantees: [`QuestionSample::draw`] is called once per
/// run, with the run's [`StudyOptions`] and the questions selected so far,
/// in their input order; samples are applied in registration order, each
/// to what the previous one kept.
///
/// An implementation must: return `selected` unchanged when the options do
/// not ask for it; otherwise return a sub-sequence of `selected` in its
/// order (never a question twice, never one not given); be deterministic
/// (its own seeded generator: same options and questions, same sample);
/// refuse an option value it cannot draw from with
/// [`PerturbError::Invalid`] naming the option, before drawing.
pub trait QuestionSample: Sync {
    /// The questions kept of `selected`.
    fn draw<'q>(
        &self,
        opts: &StudyOptions,
        selected: Vec<&'q QuestionRow>,
    ) -> Result<Vec<&'q QuestionRow>>;
}

impl std::fmt::Debug for dyn QuestionSample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuestionSample")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_back_typed_and_refuse_a_stage_name() {
        let mut o = StudyOptions::default();
        o.set("noise_rates", [0.0, 0.4]);
        o.set("none", Option::<u32>::None);
        assert_eq!(
            o.get::<Vec<f64>>("noise_rates").unwrap(),
            Some(vec![0.0, 0.4])
        );
        assert_eq!(o.get::<u32>("none").unwrap(), None, "null reads as unset");
        assert_eq!(o.get::<u32>("absent").unwrap(), None);
        let e = o.get::<String>("noise_rates").unwrap_err().to_string();
        assert!(e.starts_with("option `noise_rates`:"), "{e}");
        assert!(o.check().is_ok());
        o.set("seed", 3);
        let e = o.check().unwrap_err().to_string();
        assert!(e.contains("`seed`"), "{e}");
    }
}
