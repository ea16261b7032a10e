//! Breakdown tables and charts (`score --by`): every metric side by side
//! across the groups of a column, and, where the groups are ordered (bins),
//! the accuracy against the group as a line chart (accuracy against
//! popularity bucket is the classic figure).

use std::collections::BTreeMap;

use ragprobe_artifact::MetricRow;

use crate::tables::Table;

/// The group's position in its breakdown (from the metric's details).
fn index(r: &MetricRow) -> usize {
    detail(r, "group_index")
        .and_then(|v| v.as_u64())
        .map_or(usize::MAX, |v| v as usize)
}

fn detail(r: &MetricRow, key: &str) -> Option<serde_json::Value> {
    let d: serde_json::Value = serde_json::from_str(r.details.as_deref()?).ok()?;
    d.get(key).cloned()
}

/// The breakdown rows by their `by`, with each breakdown's group labels
/// in order.
fn by_breakdown(rows: &[MetricRow]) -> BTreeMap<&str, (Vec<&MetricRow>, Vec<String>)> {
    let mut out: BTreeMap<&str, (Vec<&MetricRow>, Vec<String>)> = BTreeMap::new();
    for r in rows {
        if let (Some(by), Some(_)) = (r.breakdown.as_deref(), r.breakdown_group.as_deref()) {
            out.entry(by).or_default().0.push(r);
        }
    }
    for (rs, groups) in out.values_mut() {
        let mut g: Vec<(usize, String)> = rs
            .iter()
            .map(|r| (index(r), r.breakdown_group.clone().unwrap_or_default()))
            .collect();
        g.sort();
        g.dedup();
        *groups = g.into_iter().map(|(_, l)| l).collect();
    }
    out
}

fn cell(r: &MetricRow) -> String {
    match r.value {
        Some(v) => format!("{v:.1} (n={})", r.n),
        None => format!("– (n={})", r.n),
    }
}

/// One table per breakdown: a row per (study, dataset, model, prompt,
/// condition, metric), a column per group.
pub fn tables(rows: &[MetricRow]) -> Vec<Table> {
    let mut out = Vec::new();
    for (by, (rs, groups)) in by_breakdown(rows) {
        let mut lines: BTreeMap<[&str; 6], Vec<Option<&MetricRow>>> = BTreeMap::new();
        for r in &rs {
            let key = [
                r.study.as_str(),
                r.dataset.as_str(),
                r.model.as_str(),
                r.prompt.as_str(),
                r.condition.as_str(),
                r.metric.as_str(),
            ];
            let slot = groups
                .iter()
                .position(|g| Some(g.as_str()) == r.breakdown_group.as_deref())
                .expect("every group is listed");
            lines.entry(key).or_insert_with(|| vec![None; groups.len()])[slot] = Some(r);
        }
        let mut t = Table {
            id: file_stem(by),
            title: format!("Breakdown by {by} (score --by): each metric per group, with n"),
            row_header: "study · dataset · model · prompt · condition · metric".into(),
            groups: vec![by.to_string(); groups.len()],
            columns: groups.clone(),
            rows: Vec::new(),
            long: Vec::new(),
            notes: vec![
                "Question-level columns keep a question's conditions together; a case without a case-level value (a baseline) counts in every group.".into(),
            ],
            links: Vec::new(),
        };
        for (key, cells) in lines {
            let label = key
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" · ");
            let texts = cells
                .iter()
                .map(|c| c.map(cell).unwrap_or_default())
                .collect();
            for (g, c) in groups.iter().zip(&cells) {
                if let Some(r) = c {
                    t.long.push((
                        label.clone(),
                        by.to_string(),
                        g.clone(),
                        r.value,
                        r.ci_low,
                        r.ci_high,
                        r.n,
                    ));
                }
            }
            t.rows.push((label, texts));
        }
        out.push(t);
    }
    out
}

/// For each ordered breakdown with accuracy rows: accuracy (with 95%
/// intervals) against the group, one line per model, prompt, condition
/// and dataset.
pub fn charts(rows: &[MetricRow]) -> Vec<crate::charts::Chart> {
    use crate::charts::{series_by, Chart, Kind};
    let mut out = Vec::new();
    for (by, (rs, groups)) in by_breakdown(rows) {
        let ordered = rs
            .iter()
            .all(|r| detail(r, "ordered").and_then(|v| v.as_bool()) == Some(true));
        let acc: Vec<&MetricRow> = rs.iter().filter(|r| r.metric == "acc").copied().collect();
        if !ordered || acc.is_empty() {
            continue;
        }
        out.push(Chart {
            name: file_stem(by),
            title: format!("Accuracy by {by}"),
            y_desc: "Acc (%)".into(),
            series: series_by(&acc, line_name, &groups, |r, g| {
                r.breakdown_group.as_deref() == Some(g.as_str())
            }),
            kind: Kind::Lines {
                xs: groups.clone(),
                x_desc: by.to_string(),
            },
        });
    }
    out
}

/// `breakdown_<by>` with every non-alphanumeric character as `_`: the
/// breakdown's table id and chart file name.
fn file_stem(by: &str) -> String {
    let slug: String = by
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("breakdown_{slug}")
}

fn line_name(r: &MetricRow) -> String {
    format!(
        "{} · {} · {} ({})",
        crate::charts::model_name(r),
        r.prompt,
        r.condition,
        r.dataset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(group: &str, index: usize, value: f64, n: i64) -> MetricRow {
        MetricRow {
            study: "qa".into(),
            dataset: "popqa".into(),
            model: "m".into(),
            prompt: "p".into(),
            condition: "base".into(),
            metric: "acc".into(),
            value: Some(value),
            n,
            breakdown: Some("meta.s_pop".into()),
            breakdown_group: Some(group.into()),
            details: Some(format!(r#"{{"group_index": {index}, "ordered": true}}"#)),
            ..Default::default()
        }
    }

    #[test]
    fn a_breakdown_table_lists_groups_in_their_order_and_an_ordered_one_is_charted() {
        // Rows arrive out of order; the table follows group_index.
        let rows = vec![
            row("[100, inf)", 1, 80.0, 5),
            row("[-inf, 100)", 0, 20.0, 4),
        ];
        let t = tables(&rows);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].id, "breakdown_meta_s_pop");
        assert_eq!(t[0].columns, ["[-inf, 100)", "[100, inf)"]);
        assert_eq!(t[0].rows[0].1, ["20.0 (n=4)", "80.0 (n=5)"]);
        assert!(t[0]
            .markdown()
            .contains("| study · dataset · model · prompt · condition · metric |"));
        let c = charts(&rows);
        assert_eq!(c.len(), 1);
        assert!(c[0]
            .svg(&crate::charts::Colors::for_charts(&c))
            .contains("<svg"));
    }
}
