//! The schemas in code must equal the tables in `schemas/<kind>.md`.

use ragprobe_artifact::kinds::{self, type_name};
use std::path::PathBuf;

/// (column, type, nullable) rows of the Markdown table in a schema file.
fn doc_columns(text: &str) -> Vec<(String, String, bool)> {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.len() >= 3 && cells[0] != "column" && !cells[0].starts_with("---"))
        .map(|cells| {
            let nullable = match cells[2].as_str() {
                "yes" => true,
                "no" => false,
                other => panic!("nullable must be yes/no, found {other:?}"),
            };
            (cells[0].clone(), cells[1].clone(), nullable)
        })
        .collect()
}

#[test]
fn every_kind_matches_its_schema_file() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas");
    for kind in kinds::ALL {
        let path = dir.join(format!("{}.md", kind.name));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let version_line = format!("schema_version: {}", kind.schema_version);
        assert!(
            text.contains(&version_line),
            "{}: expected `{version_line}`",
            path.display()
        );
        let documented = doc_columns(&text);
        let schema = (kind.schema)();
        let in_code: Vec<(String, String, bool)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), type_name(f.data_type()), f.is_nullable()))
            .collect();
        assert_eq!(
            in_code,
            documented,
            "{}: schema in code and file differ",
            path.display()
        );
    }
}

#[test]
fn the_parser_sees_a_drift() {
    let doc =
        "| column | type | nullable | meaning |\n|---|---|---|---|\n| qid | utf8 | no | x |\n";
    assert_eq!(
        doc_columns(doc),
        vec![("qid".to_string(), "utf8".to_string(), false)]
    );
}
