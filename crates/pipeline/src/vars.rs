//! Pipeline variables: `{{name}}` in any string value, scalars and lists.

use std::collections::{BTreeMap, BTreeSet};

use crate::{PipelineError, Result};

/// A variable's value.
#[derive(Debug, Clone, PartialEq)]
pub enum VarValue {
    /// A single value.
    One(String),
    /// A list variable: a list item that uses it becomes one item per value;
    /// in a single value it becomes the comma-separated list.
    List(Vec<String>),
}

/// Pipeline variables by name.
pub type Vars = BTreeMap<String, VarValue>;

/// The `{{name}}`s a string uses.
pub fn var_names(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else { break };
        out.push(after[..j].trim());
        rest = &after[j + 2..];
    }
    out
}

/// Fills the variables of `s`; a list variable becomes its comma-separated
/// values. `at` prefixes errors.
pub fn fill_vars(s: &str, vars: &Vars, at: &str) -> Result<String> {
    fill_with(s, vars, at, None)
}

fn fill_with(s: &str, vars: &Vars, at: &str, item: Option<(&str, &str)>) -> Result<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let j = after
            .find("}}")
            .ok_or_else(|| PipelineError::msg(format!("{at}: unclosed `{{{{` in {s:?}")))?;
        let name = after[..j].trim();
        match (item, vars.get(name)) {
            (Some((n, v)), _) if n == name => out.push_str(v),
            (_, Some(VarValue::One(v))) => out.push_str(v),
            (_, Some(VarValue::List(l))) => out.push_str(&l.join(",")),
            (_, None) => {
                return Err(PipelineError::msg(format!(
                "{at}: unknown variable `{name}` (define it under [vars] or pass --set {name}=...)"
            )))
            }
        }
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Fills one list item: an item that uses a list variable becomes one item
/// per value (at most one list variable per item).
pub fn fill_item(s: &str, vars: &Vars, at: &str) -> Result<Vec<String>> {
    let lists: BTreeSet<&str> = var_names(s)
        .into_iter()
        .filter(|n| matches!(vars.get(*n), Some(VarValue::List(_))))
        .collect();
    match lists.len() {
        0 => Ok(vec![fill_vars(s, vars, at)?]),
        1 => {
            let name = *lists.iter().next().expect("one");
            let Some(VarValue::List(values)) = vars.get(name) else {
                unreachable!("checked")
            };
            values
                .iter()
                .map(|v| fill_with(s, vars, at, Some((name, v))))
                .collect()
        }
        _ => Err(PipelineError::msg(format!(
            "{at}: {s:?} uses more than one list variable ({}); use one per item",
            lists.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Applies `--set NAME=VALUE` overrides (a list variable takes a
/// comma-separated list), then fills variables used inside variables.
pub fn apply_sets(
    vars: &mut Vars,
    sets: &[String],
    line_of: &dyn Fn(&str) -> usize,
    file: &str,
) -> Result<()> {
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| PipelineError::msg(format!("--set {s}: expected NAME=VALUE")))?;
        let k = k.trim().to_string();
        let value = match vars.get(&k) {
            Some(VarValue::List(_)) => VarValue::List(
                v.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect(),
            ),
            _ => VarValue::One(v.to_string()),
        };
        vars.insert(k, value);
    }
    // A variable's value may use other variables (`writer_model = "{{model}}"`).
    for _ in 0..8 {
        let snapshot = vars.clone();
        let mut changed = false;
        for (k, v) in vars.iter_mut() {
            if let VarValue::One(s) = v {
                if s.contains("{{") {
                    let at = format!("{file}:{}: variable `{k}`", line_of(k));
                    let filled = fill_vars(s, &snapshot, &at)?;
                    changed |= filled != *s;
                    *s = filled;
                }
            }
        }
        if !changed {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        let mut v = Vars::new();
        v.insert("d".into(), VarValue::One("data".into()));
        v.insert(
            "langs".into(),
            VarValue::List(vec!["en".into(), "de".into()]),
        );
        v
    }

    #[test]
    fn a_list_variable_expands_an_item_and_joins_in_a_value() {
        let v = vars();
        assert_eq!(
            fill_item("{{d}}/{{langs}}.jsonl", &v, "at").unwrap(),
            vec!["data/en.jsonl", "data/de.jsonl"]
        );
        assert_eq!(fill_vars("{{ langs }}", &v, "at").unwrap(), "en,de");
    }

    #[test]
    fn unknown_and_unclosed_variables_are_errors() {
        let v = vars();
        let e = fill_vars("{{nope}}", &v, "f:3").unwrap_err().to_string();
        assert!(
            e.contains("f:3") && e.contains("unknown variable `nope`"),
            "{e}"
        );
        assert!(fill_vars("{{d", &v, "f")
            .unwrap_err()
            .to_string()
            .contains("unclosed"));
        let mut two = v.clone();
        two.insert("m".into(), VarValue::List(vec!["a".into()]));
        assert!(fill_item("{{langs}}{{m}}", &two, "f").is_err());
    }

    #[test]
    fn sets_override_and_variables_fill_variables() {
        let mut v = vars();
        v.insert("writer".into(), VarValue::One("{{model}}".into()));
        apply_sets(
            &mut v,
            &["model=qwen".into(), "langs=fr, es".into()],
            &|_| 1,
            "p",
        )
        .unwrap();
        assert_eq!(v["writer"], VarValue::One("qwen".into()));
        assert_eq!(v["langs"], VarValue::List(vec!["fr".into(), "es".into()]));
        assert!(apply_sets(&mut v, &["novalue".into()], &|_| 1, "p").is_err());
    }
}
