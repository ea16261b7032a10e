//! Two runs side by side: the paired differences B − A of accuracy (and
//! foil-only where the runs have foils) on the questions both runs share,
//! per (dataset, prompt, condition), with question-level bootstrap intervals.

use ragprobe_artifact::{kinds, read, MetricRow, ScoreRow, Scores, Store};
use ragprobe_score::{compare_rows, ScoreOptions};
use std::collections::BTreeSet;
use std::path::Path;

use crate::{render, ReportError, ReportFiles, Result};

/// The comparison's metric rows (study `compare`; per metric and condition
/// three rows: `a`, `b` and `diff` with its interval) for scores artifacts
/// `a` and `b`.
pub fn compare_metrics(
    ra: &[ScoreRow],
    rb: &[ScoreRow],
    opts: &ScoreOptions,
) -> Result<Vec<MetricRow>> {
    let groups = |rs: &[ScoreRow]| -> BTreeSet<(String, String, String)> {
        rs.iter()
            .map(|r| (r.dataset.clone(), r.prompt.clone(), r.condition.clone()))
            .collect()
    };
    let shared: Vec<(String, String, String)> =
        groups(ra).intersection(&groups(rb)).cloned().collect();
    if shared.is_empty() {
        return Err(ReportError::Invalid(
            "the two runs share no (dataset, prompt, condition)".into(),
        ));
    }
    let mut rows = Vec::new();
    for (d, p, c) in shared {
        let keep = |r: &&ScoreRow| r.dataset == d && r.prompt == p && r.condition == c;
        let sa: Vec<&ScoreRow> = ra.iter().filter(keep).collect();
        let sb: Vec<&ScoreRow> = rb.iter().filter(keep).collect();
        let metrics: &[&str] = if sa.iter().any(|r| r.flags.foil_only.is_some()) {
            &["acc", "foil_only"]
        } else {
            &["acc"]
        };
        for m in metrics {
            let cmp =
                compare_rows(&sa, &sb, m, opts).map_err(|e| ReportError::Invalid(e.to_string()))?;
            let label = format!("{m} · {c}");
            let mk = |metric: &str, v: Option<f64>, ci: Option<(f64, f64)>| MetricRow {
                study: "compare".into(),
                dataset: d.clone(),
                model: label.clone(),
                prompt: p.clone(),
                condition: c.clone(),
                metric: metric.into(),
                value: v,
                n: cmp.questions as i64,
                ci_low: ci.map(|x| x.0),
                ci_high: ci.map(|x| x.1),
                details: None,
                breakdown: None,
                breakdown_group: None,
            };
            rows.push(mk("a", cmp.a, None));
            rows.push(mk("b", cmp.b, None));
            rows.push(mk("diff", cmp.diff, cmp.ci));
        }
    }
    Ok(rows)
}

/// Resolve two scores artifacts, compare them and render the report.
pub fn compare(
    store: &Store,
    a: &str,
    b: &str,
    opts: &ScoreOptions,
    out: &Path,
    title: &str,
) -> Result<ReportFiles> {
    let (ida, idb) = (
        store.resolve_kind(a, kinds::SCORES)?,
        store.resolve_kind(b, kinds::SCORES)?,
    );
    let rows = compare_metrics(
        &read::<Scores>(store, &ida)?,
        &read::<Scores>(store, &idb)?,
        opts,
    )?;
    let title = format!("{title}: A = {} vs B = {}", &ida[..12], &idb[..12]);
    render(store, &rows, &[ida, idb], None, out, &title, &[])
}
