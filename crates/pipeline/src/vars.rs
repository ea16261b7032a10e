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

/// The most bytes one variable's value may expand to. Values are paths,
/// model names and lists of languages; a value past this is a mistake (or
/// `a = "{{b}}{{b}}"` chains doubling at each step, which would otherwise
/// exhaust memory).
pub const MAX_VAR_BYTES: usize = 1 << 20;

/// Applies `--set NAME=VALUE` overrides (a list variable takes a
/// comma-separated list), then fills variables used inside variables.
///
/// A `--set` must name a variable the file declares under `[vars]` or uses
/// as `{{NAME}}` (`used`): a typo (`--set modle=…`) is an error naming the
/// closest names, not silently ignored. Variables that use each other in a
/// cycle are an error naming the cycle; a value that expands past
/// [`MAX_VAR_BYTES`] is an error naming the variable.
pub fn apply_sets(
    vars: &mut Vars,
    sets: &[String],
    used: &BTreeSet<String>,
    line_of: &dyn Fn(&str) -> usize,
    file: &str,
) -> Result<()> {
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| PipelineError::msg(format!("--set {s}: expected NAME=VALUE")))?;
        let k = k.trim().to_string();
        if !vars.contains_key(&k) && !used.contains(&k) {
            let known: BTreeSet<&str> = vars
                .keys()
                .map(String::as_str)
                .chain(used.iter().map(String::as_str))
                .collect();
            return Err(PipelineError::msg(format!(
                "--set {s}: {file} has no variable `{k}`{}",
                closest(&k, &known)
            )));
        }
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
    // A variable's value may use other variables (`writer_model = "{{model}}"`):
    // resolved depth first, each once.
    let names: Vec<String> = vars.keys().cloned().collect();
    let mut done: BTreeSet<String> = BTreeSet::new();
    for name in names {
        let mut path = Vec::new();
        resolve(&name, vars, &mut done, &mut path, line_of, file)?;
    }
    Ok(())
}

/// Fills variable `name` after the variables it uses (`path`: the chain of
/// variables being filled, for the cycle error).
fn resolve(
    name: &str,
    vars: &mut Vars,
    done: &mut BTreeSet<String>,
    path: &mut Vec<String>,
    line_of: &dyn Fn(&str) -> usize,
    file: &str,
) -> Result<()> {
    if done.contains(name) {
        return Ok(());
    }
    if let Some(start) = path.iter().position(|p| p == name) {
        let mut cycle: Vec<&str> = path[start..].iter().map(String::as_str).collect();
        cycle.push(name);
        return Err(PipelineError::msg(format!(
            "{file}:{}: variables use each other in a cycle: {}",
            line_of(&path[start]),
            cycle.join(" -> ")
        )));
    }
    let Some(VarValue::One(s)) = vars.get(name) else {
        done.insert(name.to_string());
        return Ok(());
    };
    if !s.contains("{{") {
        done.insert(name.to_string());
        return Ok(());
    }
    let s = s.clone();
    path.push(name.to_string());
    for used in var_names(&s) {
        if vars.contains_key(used) {
            resolve(used, vars, done, path, line_of, file)?;
        }
    }
    path.pop();
    let at = format!("{file}:{}: variable `{name}`", line_of(name));
    let filled = fill_vars(&s, vars, &at)?;
    if filled.len() > MAX_VAR_BYTES {
        return Err(PipelineError::msg(format!(
            "{at}: expands to {} bytes, more than the {MAX_VAR_BYTES} a variable may hold",
            filled.len()
        )));
    }
    vars.insert(name.to_string(), VarValue::One(filled));
    done.insert(name.to_string());
    Ok(())
}

/// `"; did you mean `x`?"` for the known name nearest to `name` (edit
/// distance at most a third of its length), else the known names.
fn closest(name: &str, known: &BTreeSet<&str>) -> String {
    let best = known
        .iter()
        .map(|k| (strsim::levenshtein(name, k), *k))
        .min();
    match best {
        Some((d, k)) if d <= name.chars().count().div_ceil(3).max(1) => {
            format!("; did you mean `{k}`?")
        }
        _ if known.is_empty() => " (it declares none)".to_string(),
        _ => format!(
            " (declared or used: {})",
            known.iter().copied().collect::<Vec<_>>().join(", ")
        ),
    }
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
        let used: BTreeSet<String> = ["model".to_string()].into();
        apply_sets(
            &mut v,
            &["model=qwen".into(), "langs=fr, es".into()],
            &used,
            &|_| 1,
            "p",
        )
        .unwrap();
        assert_eq!(v["writer"], VarValue::One("qwen".into()));
        assert_eq!(v["langs"], VarValue::List(vec!["fr".into(), "es".into()]));
        assert!(apply_sets(&mut v, &["novalue".into()], &used, &|_| 1, "p").is_err());
    }

    /// Hardening II, M5: 27 variables each `"{{next}}{{next}}"` aborted
    /// `run` on a 1 GiB allocation; now an error naming the variable.
    #[test]
    fn doubling_variables_stop_at_the_size_bound() {
        let mut v = Vars::new();
        for i in 0..27 {
            v.insert(
                format!("v{i:02}"),
                VarValue::One(format!("{{{{v{:02}}}}}{{{{v{:02}}}}}", i + 1, i + 1)),
            );
        }
        v.insert("v27".into(), VarValue::One("x".into()));
        let e = apply_sets(&mut v, &[], &BTreeSet::new(), &|_| 4, "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("p.toml:4: variable `v") && e.contains("more than"),
            "{e}"
        );
    }

    /// Hardening II, L2: a cycle was reported as a missing input.
    #[test]
    fn a_variable_cycle_is_named() {
        let mut v = Vars::new();
        v.insert("a".into(), VarValue::One("x/{{b}}".into()));
        v.insert("b".into(), VarValue::One("{{c}}".into()));
        v.insert("c".into(), VarValue::One("{{a}}".into()));
        let e = apply_sets(&mut v, &[], &BTreeSet::new(), &|_| 2, "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cycle: a -> b -> c -> a"), "{e}");
        let mut v = Vars::new();
        v.insert("a".into(), VarValue::One("{{a}}".into()));
        let e = apply_sets(&mut v, &[], &BTreeSet::new(), &|_| 2, "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("cycle: a -> a"), "{e}");
    }

    /// Hardening II, L3: `--set modle=typo` was accepted silently.
    #[test]
    fn a_set_of_an_unknown_variable_is_an_error_with_the_closest_name() {
        let mut v = vars();
        v.insert("model".into(), VarValue::One("m".into()));
        let used: BTreeSet<String> = ["base_url".to_string()].into();
        let e = apply_sets(&mut v, &["modle=typo".into()], &used, &|_| 1, "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no variable `modle`") && e.contains("did you mean `model`"),
            "{e}"
        );
        // A variable only used in the file (not declared) may be set.
        apply_sets(
            &mut v,
            &["base_url=http://x".into()],
            &used,
            &|_| 1,
            "p.toml",
        )
        .unwrap();
        assert_eq!(v["base_url"], VarValue::One("http://x".into()));
    }
}
