//! Prompt templates as data (TOML; format: `crates/studies/PROMPTS.md`).
//! The templates themselves are the studies' (`crates/studies/src/<study>/prompts/`),
//! handed to the loader as a [`Catalog`]; a template may also be a file.
//!
//! A template has an id and a version (both enter every request hash), the
//! chat messages with `{{placeholder}}`s, and how one document is rendered
//! into `{{documents}}`. Placeholders: question, documents, answer,
//! sentence, entities, foil, options; inside `document`: index (1-based),
//! title, text. An unknown placeholder is an error when the template loads.

use ragprobe_artifact::CaseRow;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use crate::llm::ChatMessage;

/// A template that cannot be loaded or is not valid; names the file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("template {0}")]
pub struct TemplateError(pub String);

type Result<T, E = TemplateError> = std::result::Result<T, E>;

/// Placeholders a message may use.
pub const PLACEHOLDERS: &[&str] = &[
    "question",
    "documents",
    "answer",
    "sentence",
    "entities",
    "foil",
    "options",
    // A judge's: every gold alias (` | `-joined) and the response judged.
    "answers",
    "response",
];
/// Placeholders the per-document format may use.
pub const DOC_PLACEHOLDERS: &[&str] = &["index", "title", "text"];

/// One chat message of a template, before its placeholders are filled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The message text with `{{placeholder}}`s.
    pub content: String,
}

/// A prompt template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    /// Template id (the file name without `.toml`); enters every request hash.
    pub id: String,
    /// Version, bumped when the wording changes; enters every request hash.
    pub version: u32,
    /// The study the wording comes from, as the template declares it
    /// (`000`, `001`, `002`, `rgb`, `faitheval`).
    #[serde(default)]
    pub study: String,
    /// The section or table of the study the wording comes from.
    #[serde(default)]
    pub source: String,
    /// True when the wording is copied from the study text (bar the fixes in `notes`).
    #[serde(default)]
    pub verbatim: bool,
    /// What the prompt asks for (`answer`, `closed-book`, `relevance`, ...).
    #[serde(default)]
    pub purpose: String,
    /// What the template does in its study (a role its [`Catalog`] knows); the score stage
    /// pairs runs and picks metric families from it, never from the id.
    #[serde(default)]
    pub role: String,
    /// Wording variant within a role (`v0`, `v1`, `v2` of the RAG-Stress
    /// policies, `mcq`, ...): Strict and Soft of one variant are twins.
    #[serde(default)]
    pub variant: String,
    /// What the template is, in a sentence.
    #[serde(default)]
    pub description: String,
    /// Artefact fixes, reconstructions and ambiguities in the wording.
    #[serde(default)]
    pub notes: String,
    /// How one document renders into `{{documents}}` (`{{index}}`, `{{title}}`, `{{text}}`).
    #[serde(default)]
    pub document: String,
    /// Text between rendered documents.
    #[serde(default)]
    pub document_separator: String,
    /// The chat messages, in order.
    pub messages: Vec<TemplateMessage>,
}

fn placeholders(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        match after.find("}}") {
            Some(j) => {
                out.push(after[..j].trim());
                rest = &after[j + 2..];
            }
            None => break,
        }
    }
    out
}

fn fill(s: &str, vars: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find("}}") {
            Some(j) => {
                let name = after[..j].trim();
                out.push_str(vars.get(name).map(String::as_str).unwrap_or(""));
                rest = &after[j + 2..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The templates a loader finds by id, and the roles a template may
/// declare: the studies' own, registered in `ragprobe_studies`
/// (`prompt_catalog()`); this crate holds none. A role says what a
/// template does in its study; the score stage pairs runs and picks metric
/// families from it, never from the id.
///
/// The caller guarantees that every text parses with the catalog's roles
/// and that ids are unique (the studies' tests check both).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Catalog {
    /// (id, TOML text) of each template.
    pub templates: &'static [(&'static str, &'static str)],
    /// The roles templates may declare.
    pub roles: &'static [&'static str],
}

impl Catalog {
    fn knows_role(&self, role: &str) -> bool {
        self.roles.contains(&role)
    }

    /// (id, text) of every template.
    fn all(&self) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
        self.templates.iter()
    }
}

impl Template {
    /// Parse and validate a template's TOML text; `origin` names it in
    /// errors; its role (when it declares one) must be one `catalog` knows.
    pub fn parse(text: &str, origin: &str, catalog: &Catalog) -> Result<Template> {
        let t: Template =
            toml::from_str(text).map_err(|e| TemplateError(format!("{origin}: {e}")))?;
        if !t.role.is_empty() && !catalog.knows_role(&t.role) {
            return Err(TemplateError(format!(
                "{origin}: role `{}` is not known (known: {})",
                t.role,
                catalog.roles.join(", ")
            )));
        }
        if t.messages.is_empty() {
            return Err(TemplateError(format!(
                "{origin}: template `{}` has no [[messages]]",
                t.id
            )));
        }
        for (i, m) in t.messages.iter().enumerate() {
            if !matches!(m.role.as_str(), "system" | "user" | "assistant") {
                return Err(TemplateError(format!(
                    "{origin}: messages[{i}].role `{}` must be system, user or assistant",
                    m.role
                )));
            }
            if let Some(p) = placeholders(&m.content)
                .into_iter()
                .find(|p| !PLACEHOLDERS.contains(p))
            {
                return Err(TemplateError(format!(
                    "{origin}: messages[{i}] uses unknown placeholder {{{{{p}}}}} (known: {})",
                    PLACEHOLDERS.join(", ")
                )));
            }
        }
        if let Some(p) = placeholders(&t.document)
            .into_iter()
            .find(|p| !DOC_PLACEHOLDERS.contains(p))
        {
            return Err(TemplateError(format!(
                "{origin}: `document` uses unknown placeholder {{{{{p}}}}} (known: {})",
                DOC_PLACEHOLDERS.join(", ")
            )));
        }
        Ok(t)
    }

    /// Every template of `catalog`, in its order.
    pub fn all(catalog: &Catalog) -> Vec<Template> {
        catalog
            .all()
            .map(|(id, text)| {
                Template::parse(text, &format!("built-in template {id}"), catalog)
                    .expect("built-in templates are valid")
            })
            .collect()
    }

    /// A template by id (`<dir>/<id>.toml` when `dir` is given and has
    /// it, else `catalog`'s), or by path to a `.toml` file.
    pub fn load(spec: &str, dir: Option<&Path>, catalog: &Catalog) -> Result<Template> {
        let as_path = Path::new(spec);
        if spec.ends_with(".toml") || as_path.is_file() {
            let text = std::fs::read_to_string(as_path)
                .map_err(|e| TemplateError(format!("{spec}: {e}")))?;
            return Template::parse(&text, spec, catalog);
        }
        if let Some(d) = dir {
            let p = d.join(format!("{spec}.toml"));
            if p.is_file() {
                let text = std::fs::read_to_string(&p)
                    .map_err(|e| TemplateError(format!("{}: {e}", p.display())))?;
                return Template::parse(&text, &p.display().to_string(), catalog);
            }
        }
        match catalog.all().find(|(id, _)| *id == spec) {
            Some((id, text)) => Template::parse(text, &format!("built-in template {id}"), catalog),
            None => Err(TemplateError(format!(
                "no template `{spec}`; known: {}",
                catalog
                    .all()
                    .map(|(id, _)| *id)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Render with explicit variables (documents already rendered).
    pub fn render_vars(&self, vars: &BTreeMap<&str, String>) -> Vec<ChatMessage> {
        self.messages
            .iter()
            .map(|m| {
                ChatMessage::new(
                    &m.role,
                    fill(&m.content, vars).trim_start_matches('\n').to_string(),
                )
            })
            .collect()
    }

    /// Render documents in the given order with the per-document format.
    pub fn render_documents<'a>(
        &self,
        docs: impl IntoIterator<Item = (Option<&'a str>, &'a str)>,
    ) -> String {
        docs.into_iter()
            .enumerate()
            .map(|(i, (title, text))| {
                let v: BTreeMap<&str, String> = [
                    ("index", (i + 1).to_string()),
                    ("title", title.unwrap_or("").to_string()),
                    ("text", text.to_string()),
                ]
                .into_iter()
                .collect();
                fill(&self.document, &v)
            })
            .collect::<Vec<_>>()
            .join(&self.document_separator)
    }

    /// The messages for one case: its question, its documents in order, its
    /// first gold answer and its foil.
    pub fn render_case(&self, case: &CaseRow) -> Vec<ChatMessage> {
        let documents = self.render_documents(
            case.docs
                .iter()
                .map(|d| (d.title.as_deref(), d.text.as_str())),
        );
        let vars: BTreeMap<&str, String> = [
            ("question", case.question.clone()),
            ("documents", documents),
            ("answer", case.answers.first().cloned().unwrap_or_default()),
            ("foil", case.foil.clone().unwrap_or_default()),
            (
                "options",
                case.options
                    .as_ref()
                    .map(|o| {
                        o.iter()
                            .map(|(l, t)| format!("{l}. {t}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default(),
            ),
        ]
        .into_iter()
        .collect();
        self.render_vars(&vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ragprobe_artifact::CaseDoc;

    #[test]
    fn unknown_placeholders_are_refused() {
        let bad = "id = \"x\"\nversion = 1\n[[messages]]\nrole = \"user\"\ncontent = \"{{question}} {{nope}}\"\n";
        let e = Template::parse(bad, "x.toml", &Catalog::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml") && e.contains("{{nope}}"), "{e}");
        let bad = "id = \"x\"\nversion = 1\nrole = \"judge\"\n[[messages]]\nrole = \"user\"\ncontent = \"hi\"\n";
        let e = Template::parse(bad, "x.toml", &Catalog::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml") && e.contains("role `judge`"), "{e}");
    }

    #[test]
    fn documents_render_in_case_order() {
        const T: &str = "id = \"t\"\nversion = 1\ndocument = \"[{{index}}] {{title}}: {{text}}\"\ndocument_separator = \"\\n\\n\"\n[[messages]]\nrole = \"user\"\ncontent = \"{{documents}}\\n\\nQUESTION:\\n{{question}}\"\n";
        let catalog = Catalog {
            templates: &[("t", T)],
            roles: &[],
        };
        let t = Template::load("t", None, &catalog).unwrap();
        let case = CaseRow {
            question: "Q?".into(),
            docs: vec![
                CaseDoc {
                    doc_id: "b".into(),
                    title: Some("B".into()),
                    text: "second".into(),
                    source: ragprobe_artifact::DocSource::Judged,
                    has_answer: None,
                },
                CaseDoc {
                    doc_id: "a".into(),
                    title: Some("A".into()),
                    text: "first".into(),
                    source: ragprobe_artifact::DocSource::Judged,
                    has_answer: None,
                },
            ],
            ..Default::default()
        };
        let m = t.render_case(&case);
        let u = &m.last().unwrap().content;
        assert!(u.contains("[1] B: second\n\n[2] A: first"), "{u}");
        assert!(u.contains("QUESTION:\nQ?"), "{u}");
    }
}
