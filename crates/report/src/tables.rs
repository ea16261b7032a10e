//! The studies' tables: a pivot of metric rows (models as rows, datasets as
//! column groups), written as Markdown, CSV and LaTeX (booktabs).

use ragprobe_artifact::MetricRow;
use std::collections::BTreeMap;

/// Which metrics a table shows and how it lays them out.
pub struct TableSpec {
    /// Table id: the file name of its Markdown, CSV and LaTeX files and the HTML anchor.
    pub id: &'static str,
    /// Table caption.
    pub title: &'static str,
    /// Only metric rows of this study (`metrics.study`).
    pub study: &'static str,
    /// (metric name or prefix ending in '@', column header).
    pub metrics: &'static [(&'static str, &'static str)],
    /// Only these conditions (empty = all).
    pub conditions: &'static [&'static str],
    /// Put the condition in the column header.
    pub condition_in_column: bool,
    /// Show 95% intervals in cells.
    pub intervals: bool,
}

/// The stage's own tables (the studies' come from their
/// [`crate::StudyReport::tables`]), in the order they appear.
pub const SPECS: &[TableSpec] = &[TableSpec {
    id: "compare",
    title: "Comparison — paired difference B − A on shared questions, 95% bootstrap interval",
    study: "compare",
    metrics: &[("a", "A"), ("b", "B"), ("diff", "B − A")],
    conditions: &[],
    condition_in_column: false,
    intervals: true,
}, TableSpec {
    id: "matcher_agreement",
    title: "Matcher agreement — the string matcher's accuracy against imported verdicts (score --verdicts) on the same rows, the share where they differ, Cohen's kappa",
    study: "matcher",
    metrics: &[("string_accuracy", "Acc (string)"), ("verdict_accuracy", "Acc (verdicts)"), ("disagreement", "Differ"), ("kappa", "κ")],
    conditions: &[],
    condition_in_column: true,
    intervals: true,
}];

/// One filled table: header labels and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The table id (from its [`TableSpec`]).
    pub id: String,
    /// The table caption.
    pub title: String,
    /// Header of the row-label column (`model` in the study tables).
    pub row_header: String,
    /// Column group (dataset) of each value column.
    pub groups: Vec<String>,
    /// Header of each value column: the metric's label, the condition, or both.
    pub columns: Vec<String>,
    /// One row per model (and prompt): its label and one cell per value column.
    pub rows: Vec<(String, Vec<String>)>,
    /// Long form for CSV: (row, group, column, value, ci_low, ci_high, n).
    pub long: Vec<(
        String,
        String,
        String,
        Option<f64>,
        Option<f64>,
        Option<f64>,
        i64,
    )>,
    /// Facts about the populations behind the numbers (from the metrics'
    /// details): Table 7's C share, the matcher that defines K, questions
    /// left out of a fixed population.
    pub notes: Vec<String>,
    /// Per row, per value column: the case-browser filter (`#cases?…`)
    /// that lists the responses the value counts, where the report has
    /// one (the HTML links the cell to it); empty rows = no links.
    pub links: Vec<Vec<Option<String>>>,
}

/// The population notes of the picked metric rows, deduplicated, in order.
fn notes(
    spec: &TableSpec,
    picked: &[(&MetricRow, usize, usize)],
    label: &dyn Fn(&MetricRow) -> String,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |n: String| {
        if !out.contains(&n) {
            out.push(n);
        }
    };
    for (r, mi, _) in picked {
        let Some(d) = r
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        else {
            continue;
        };
        if let (Some(share), Some(c), Some(nc)) =
            (d["c_share"].as_f64(), d["c"].as_f64(), d["nc"].as_f64())
        {
            let split = d["conflict_share"]
                .as_f64()
                .map(|p| format!(", seeded split P = {p}"))
                .unwrap_or_default();
            push(format!(
                "{} · {}: C share {share:.3} (|C| = {c}, |NC| = {nc}{split})",
                label(r),
                r.dataset
            ));
        }
        if let Some(m) = d["k_matcher"].as_str() {
            push(format!(
                "{}: {m} match (for K and for the reference)",
                spec.metrics[*mi].1
            ));
        }
        // A judge's counts (score --judge): how much it was asked, and what
        // asking it everything would have taken.
        let made = &d["made_by"];
        if let (Some(judged), Some(of)) = (made["judged"].as_u64(), made["judgeable"].as_u64()) {
            let n = |k: &str| made[k].as_u64().unwrap_or(0);
            push(format!(
                "{} ({}): {judged} of {of} responses judged ({}), {} unparsed, {} failed; {} prompt + {} completion tokens; judging all: ~{} prompt tokens",
                d["verdicts"].as_str().unwrap_or("judge"),
                r.model,
                made["on"].as_str().unwrap_or(""),
                n("unparsed"),
                n("failed"),
                n("prompt_tokens"),
                n("completion_tokens"),
                n("all_prompt_tokens_estimate"),
            ));
        }
        if let Some(m) = d["matcher"].as_str() {
            push(format!(
                "{}: under the {m} where a response has one, the string matcher elsewhere (score --matcher judge)",
                spec.metrics[*mi].1
            ));
        }
        if let Some(x) = d["excluded"].as_u64().filter(|x| *x > 0) {
            let model = r.model.split("@sha256:").next().unwrap_or(&r.model);
            push(format!("{model} · {}: {x} question(s) outside the fixed population (not every position and arm answered under both policies)", r.dataset));
        }
    }
    out
}

fn metric_index(spec: &TableSpec, metric: &str) -> Option<usize> {
    spec.metrics.iter().position(|(m, _)| {
        if let Some(p) = m.strip_suffix('@') {
            metric.starts_with(&format!("{p}@"))
        } else {
            *m == metric
        }
    })
}

fn fmt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
}

/// Fill a spec from metric rows; None when no row matches.
pub fn build(spec: &TableSpec, rows: &[MetricRow]) -> Option<Table> {
    build_linked(spec, rows, &|_| None)
}

/// [`build`], each cell linked to the case-browser filter `link` gives
/// for its metric row (see [`Table::links`]).
pub fn build_linked(
    spec: &TableSpec,
    rows: &[MetricRow],
    link: &dyn Fn(&MetricRow) -> Option<String>,
) -> Option<Table> {
    let cond_index = |c: &str| {
        if spec.conditions.is_empty() {
            Some(0)
        } else {
            spec.conditions.iter().position(|x| *x == c)
        }
    };
    let picked: Vec<(&MetricRow, usize, usize)> = rows
        .iter()
        .filter(|r| r.study == spec.study)
        .filter_map(|r| Some((r, metric_index(spec, &r.metric)?, cond_index(&r.condition)?)))
        .collect();
    if picked.is_empty() {
        return None;
    }
    let mut cols: Vec<Col> = picked
        .iter()
        .map(|(r, mi, ci)| column_key(spec, r, *mi, *ci))
        .collect();
    cols.sort();
    cols.dedup();
    let mut cells: BTreeMap<String, BTreeMap<Col, &MetricRow>> = BTreeMap::new();
    for (r, mi, ci) in &picked {
        cells
            .entry(row_label(r))
            .or_default()
            .insert(column_key(spec, r, *mi, *ci), r);
    }
    let mut long = Vec::new();
    let links = cells
        .values()
        .map(|byc| {
            cols.iter()
                .map(|c| byc.get(c).and_then(|r| link(r)))
                .collect()
        })
        .collect();
    let rows_out = cells
        .iter()
        .map(|(label, byc)| {
            let vals = cols
                .iter()
                .map(|c| match byc.get(c) {
                    Some(r) => {
                        let h = header(spec, c);
                        long.push((
                            label.clone(),
                            c.0.clone(),
                            h,
                            r.value,
                            r.ci_low,
                            r.ci_high,
                            r.n,
                        ));
                        cell_text(spec, r)
                    }
                    None => "".into(),
                })
                .collect();
            (label.clone(), vals)
        })
        .collect();
    let notes = notes(spec, &picked, &row_label);
    Some(Table {
        id: spec.id.into(),
        title: spec.title.into(),
        row_header: "model".into(),
        groups: cols.iter().map(|c| c.0.clone()).collect(),
        columns: cols.iter().map(|c| header(spec, c)).collect(),
        rows: rows_out,
        long,
        notes,
        links,
    })
}

/// A column key: (dataset, metric index, condition index, condition); the
/// condition parts are empty unless the table puts conditions in columns.
type Col = (String, usize, usize, String);

/// The column of row `r` (metric `mi`, condition `ci`).
fn column_key(spec: &TableSpec, r: &MetricRow, mi: usize, ci: usize) -> Col {
    if spec.condition_in_column {
        (r.dataset.clone(), mi, ci, r.condition.clone())
    } else {
        (r.dataset.clone(), mi, 0, String::new())
    }
}

/// A table row's label: the model's name (its file hash is in the
/// provenance) and the prompt.
fn row_label(r: &MetricRow) -> String {
    let model = r.model.split("@sha256:").next().unwrap_or(&r.model);
    if r.prompt.is_empty() {
        model.to_string()
    } else {
        format!("{model} · {}", r.prompt)
    }
}

/// A column's header: the metric, the condition, or both.
fn header(spec: &TableSpec, c: &Col) -> String {
    let m = spec.metrics[c.1].1;
    if spec.condition_in_column && !c.3.is_empty() {
        if spec.metrics.len() > 1 {
            format!("{m} {}", c.3)
        } else {
            c.3.clone()
        }
    } else {
        m.to_string()
    }
}

/// A cell: the value, with its interval where the table shows intervals.
fn cell_text(spec: &TableSpec, r: &MetricRow) -> String {
    match (spec.intervals, r.ci_low, r.ci_high) {
        (true, Some(l), Some(h)) => {
            format!("{} [{}, {}]", fmt(r.value), fmt(Some(l)), fmt(Some(h)))
        }
        _ => fmt(r.value),
    }
}

/// Column groups as (label, span) runs.
fn spans(groups: &[String]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for g in groups {
        match out.last_mut() {
            Some((l, n)) if l == g => *n += 1,
            _ => out.push((g.clone(), 1)),
        }
    }
    out
}

impl Table {
    /// GitHub Markdown; the column group (dataset) prefixes each header.
    pub fn markdown(&self) -> String {
        let mut s = format!("### {}\n\n| {} |", self.title, self.row_header);
        for (g, c) in self.groups.iter().zip(&self.columns) {
            s.push_str(&format!(" {g}: {c} |"));
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(self.columns.len()));
        s.push('\n');
        for (label, vals) in &self.rows {
            s.push_str(&format!("| {label} |"));
            for v in vals {
                s.push_str(&format!(" {v} |"));
            }
            s.push('\n');
        }
        if !self.notes.is_empty() {
            s.push('\n');
            for n in &self.notes {
                s.push_str(&format!("- {n}\n"));
            }
        }
        s
    }

    /// Long-form CSV: one value per line.
    pub fn csv(&self) -> String {
        let q = |x: &str| {
            if x.contains([',', '"', '\n']) {
                format!("\"{}\"", x.replace('"', "\"\""))
            } else {
                x.to_string()
            }
        };
        let o = |v: &Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
        let mut s = String::from("table,row,dataset,column,value,ci_low,ci_high,n\n");
        for (row, group, col, v, lo, hi, n) in &self.long {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{}\n",
                self.id,
                q(row),
                q(group),
                q(col),
                o(v),
                o(lo),
                o(hi),
                n
            ));
        }
        s
    }

    /// LaTeX with booktabs: datasets as \multicolumn groups.
    pub fn latex(&self) -> String {
        let esc = |x: &str| {
            x.replace('\\', "\\textbackslash{}")
                .replace('&', "\\&")
                .replace('%', "\\%")
                .replace('_', "\\_")
                .replace('#', "\\#")
                .replace('→', "$\\rightarrow$")
                .replace('−', "$-$")
                .replace('Δ', "$\\Delta$")
                .replace('·', "/")
                .replace('…', "...")
                .replace('×', "$\\times$")
                .replace('—', "---")
                .replace('–', "--")
        };
        let mut s = format!(
            "% {}\n\\begin{{table}}[t]\n\\centering\n\\small\n\\caption{{{}}}\n\\label{{tab:{}}}\n",
            self.title,
            esc(&self.title),
            self.id
        );
        s.push_str(&format!(
            "\\begin{{tabular}}{{l{}}}\n\\toprule\n",
            "r".repeat(self.columns.len())
        ));
        let sp = spans(&self.groups);
        s.push(' ');
        for (g, n) in &sp {
            s.push_str(&format!(" & \\multicolumn{{{n}}}{{c}}{{{}}}", esc(g)));
        }
        s.push_str(" \\\\\n");
        let mut start = 2;
        let rules: Vec<String> = sp
            .iter()
            .map(|(_, n)| {
                let r = format!("\\cmidrule(lr){{{}-{}}}", start, start + n - 1);
                start += n;
                r
            })
            .collect();
        s.push_str(&format!("{}\n", rules.join(" ")));
        s.push_str("Model");
        for c in &self.columns {
            s.push_str(&format!(" & {}", esc(c)));
        }
        s.push_str(" \\\\\n\\midrule\n");
        for (label, vals) in &self.rows {
            s.push_str(&esc(label));
            for v in vals {
                s.push_str(&format!(" & {}", esc(v)));
            }
            s.push_str(" \\\\\n");
        }
        s.push_str("\\bottomrule\n\\end{tabular}\n\\end{table}\n");
        s
    }

    /// Plain text for the terminal.
    pub fn text(&self) -> String {
        let mut widths: Vec<usize> = std::iter::once(
            self.row_header.chars().count().max(
                self.rows
                    .iter()
                    .map(|r| r.0.chars().count())
                    .max()
                    .unwrap_or(0),
            ),
        )
        .chain(
            self.columns
                .iter()
                .zip(&self.groups)
                .map(|(c, g)| format!("{g}: {c}").chars().count()),
        )
        .collect();
        for (_, vals) in &self.rows {
            for (i, v) in vals.iter().enumerate() {
                widths[i + 1] = widths[i + 1].max(v.chars().count());
            }
        }
        let pad = |x: &str, w: usize, right: bool| {
            let n = w.saturating_sub(x.chars().count());
            if right {
                format!("{}{x}", " ".repeat(n))
            } else {
                format!("{x}{}", " ".repeat(n))
            }
        };
        let mut s = format!(
            "{}\n{}",
            self.title,
            pad(&self.row_header, widths[0], false)
        );
        for (i, (c, g)) in self.columns.iter().zip(&self.groups).enumerate() {
            s.push_str(&format!(
                "  {}",
                pad(&format!("{g}: {c}"), widths[i + 1], true)
            ));
        }
        s.push('\n');
        for (label, vals) in &self.rows {
            s.push_str(&pad(label, widths[0], false));
            for (i, v) in vals.iter().enumerate() {
                s.push_str(&format!("  {}", pad(v, widths[i + 1], true)));
            }
            s.push('\n');
        }
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        s
    }

    /// HTML table with grouped headers, the notes below it; text escaped.
    pub fn html(&self) -> String {
        let e = crate::html::escape;
        let mut s = format!(
            "<h3 id=\"{}\">{}</h3>\n<table><thead><tr><th rowspan=\"2\">{}</th>",
            self.id,
            e(&self.title),
            e(&self.row_header)
        );
        for (g, n) in spans(&self.groups) {
            s.push_str(&format!("<th colspan=\"{n}\">{}</th>", e(&g)));
        }
        s.push_str("</tr><tr>");
        for c in &self.columns {
            s.push_str(&format!("<th>{}</th>", e(c)));
        }
        s.push_str("</tr></thead><tbody>\n");
        for (i, (label, vals)) in self.rows.iter().enumerate() {
            s.push_str(&format!("<tr><td>{}</td>", e(label)));
            for (j, v) in vals.iter().enumerate() {
                match self.links.get(i).and_then(|l| l.get(j)).and_then(|l| l.as_deref()) {
                    Some(href) if !v.is_empty() => s.push_str(&format!(
                        "<td class=\"num\"><a href=\"{}\" title=\"these responses in the case browser\">{}</a></td>",
                        e(href),
                        e(v)
                    )),
                    _ => s.push_str(&format!("<td class=\"num\">{}</td>", e(v))),
                }
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody></table>\n");
        for n in &self.notes {
            s.push_str(&format!("<p class=\"note\">{}</p>\n", e(n)));
        }
        s
    }
}

/// Every table that has data: the stage's ([`SPECS`]), then the studies';
/// cells linked as [`build_linked`].
pub fn all(
    rows: &[MetricRow],
    studies: crate::Studies,
    link: &dyn Fn(&MetricRow) -> Option<String>,
) -> Vec<Table> {
    SPECS
        .iter()
        .chain(studies.iter().flat_map(|s| s.tables()))
        .filter_map(|s| build_linked(s, rows, link))
        .collect()
}
