//! The domain's closed vocabularies: what a case expects, where a
//! document came from, how a model-written passage ended. Enums in code;
//! their Parquet columns stay utf8 with these exact spellings.

/// A closed set of string values stored in a utf8 column.
pub trait Vocabulary: Copy + Sized + 'static {
    /// Every value, in declaration order.
    const ALL: &'static [Self];
    /// The stored spelling.
    fn as_str(self) -> &'static str;
    /// The value a spelling names.
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == s)
    }
    /// The spellings, comma-separated (for errors).
    fn spellings() -> String {
        Self::ALL
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

macro_rules! vocabulary {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum $name { $($(#[$vm])* $var),+ }

        impl $name {
            /// The stored spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
            /// The value a spelling names.
            pub fn parse(s: &str) -> Option<Self> {
                <Self as Vocabulary>::parse(s)
            }
        }

        impl Vocabulary for $name {
            const ALL: &'static [Self] = &[$($name::$var),+];
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        /// Compares with a stored spelling (`source == "conflict"`).
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// What a robust model should do with a case (`cases.expected`).
    Expected {
        /// Give the gold answer.
        #[default]
        Answer = "answer",
        /// Say that the documents do not answer the question.
        Unanswerable = "unanswerable",
        /// Notice that the documents conflict.
        Conflict = "conflict",
        /// NoMIRACL relevant subset: say `yes` (a passage answers).
        Relevant = "relevant",
        /// NoMIRACL non-relevant subset: say `I don't know`.
        NonRelevant = "non_relevant",
    }
}

vocabulary! {
    /// Where a case's document came from (`cases.docs.source`).
    DocSource {
        /// The retriever's top-k, in rank order.
        #[default]
        Retrieved = "retrieved",
        /// A passage retrieved for another question (add-random).
        Random = "random",
        /// The (k+1)-th retrieved passage (add-topk).
        Topk = "topk",
        /// A passage supporting the foil (add-conflict).
        Conflict = "conflict",
        /// Evidence edited to support the foil (evidence-edit).
        Edited = "edited",
        /// The unedited evidence passage (evidence-edit).
        Clean = "clean",
        /// A GenADV passage (add-genadv).
        Adversarial = "adversarial",
        /// An RGB positive passage.
        Positive = "positive",
        /// An RGB negative passage.
        Negative = "negative",
        /// An RGB counterfactual (positive_wrong) passage.
        Counterfactual = "counterfactual",
        /// A NoMIRACL judged passage.
        Judged = "judged",
    }
}

impl DocSource {
    /// Documents the perturbation put there (highlighted in the report).
    pub fn is_inserted(self) -> bool {
        matches!(
            self,
            DocSource::Edited
                | DocSource::Conflict
                | DocSource::Adversarial
                | DocSource::Counterfactual
        )
    }
}

vocabulary! {
    /// How a model-written passage ended (`genadv.status`).
    GenAdvStatus {
        /// Kept: it passed every filter.
        Accepted = "accepted",
        /// Fewer than two entities to rewrite.
        Dropped = "dropped",
        /// A filter rejected it.
        Rejected = "rejected",
        /// A model call failed or gave nothing usable.
        #[default]
        Failed = "failed",
    }
}

/// Condition names shared across stages (`cases.condition`); the others
/// are built from a scenario and a parameter (`rgb-noise-0.4`).
pub mod condition {
    /// No documents: what the model knows on its own.
    pub const CLOSED_BOOK: &str = "closed-book";
    /// The retriever's top-k as they are.
    pub const BASE: &str = "base";
    /// Prefix of the evidence-edit conditions (`evidence-clean`, `evidence-edited`).
    pub const EVIDENCE_PREFIX: &str = "evidence-";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for e in Expected::ALL {
            assert_eq!(Expected::parse(e.as_str()), Some(*e));
        }
        for s in DocSource::ALL {
            assert_eq!(DocSource::parse(&s.to_string()), Some(*s));
        }
        assert_eq!(
            GenAdvStatus::parse("accepted"),
            Some(GenAdvStatus::Accepted)
        );
        assert_eq!(Expected::parse("maybe"), None);
        assert_eq!(Expected::NonRelevant.as_str(), "non_relevant");
    }
}
