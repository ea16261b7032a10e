//! Report stage: metrics (and scores) -> the studies' tables as Markdown,
//! CSV and LaTeX, SVG charts, and one self-contained HTML file with a
//! provenance block and a case browser. The same inputs give the same files
//! (no timestamps, sorted everything).

pub mod breakdowns;
pub mod browser;
pub mod charts;
mod compare;
pub mod pdf;

pub use compare::{compare, compare_metrics};
pub mod html;
pub mod tables;

use ragprobe_artifact::{kinds, read, ArtifactError, Kind, MetricRow, Metrics, ScoreRow, Store};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Errors of the report and compare stages.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading an artifact failed.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// The inputs cannot be reported as asked (e.g. two runs to compare share nothing).
    #[error("{0}")]
    Invalid(String),
    /// Creating or writing an output file failed.
    #[error("{path}: {error}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        error: std::io::Error,
    },
}

/// A study's part of the report, registered by the caller
/// (`ragprobe_studies`): its tables and its reading of a response in the
/// case browser.
///
/// The caller guarantees: [`StudyReport::tables`] are built from the
/// overall metric rows of every study in the report (a table with no rows
/// of its study is left out) and written after the stage's own tables, in
/// the order the studies are registered; [`StudyReport::verdict`] and
/// [`StudyReport::tags`] are asked of every browsed row, the studies in
/// registration order, before the stage's generic reading.
///
/// An implementation must: pick its tables' rows by its own `study` name;
/// read a row only from its fields (deterministic, no I/O); answer `None`
/// from [`StudyReport::verdict`] for a row that is not its own, so the
/// next study or the generic reading decides.
pub trait StudyReport: Sync {
    /// The study's tables, in the order they appear.
    fn tables(&self) -> &'static [tables::TableSpec] {
        &[]
    }
    /// What `row`'s response means for the study, in words, and whether
    /// that is right (`None` inside: no verdict); `None`: not the study's row.
    fn verdict(&self, row: &ScoreRow) -> Option<(String, Option<bool>)> {
        let _ = row;
        None
    }
    /// The study's charts of the overall metric rows (none when its rows
    /// are absent), in the order the report shows them.
    fn charts(&self, rows: &[MetricRow]) -> Vec<charts::Chart> {
        let _ = rows;
        Vec::new()
    }
    /// The study's judgement says the response is right, where the
    /// shared `accuracy` may not (e.g. every answer part matched).
    fn correct(&self, row: &ScoreRow) -> bool {
        let _ = row;
        false
    }
    /// The study's judgement says the response abstains, where the shared
    /// `says_unanswerable` may not (e.g. "insufficient information").
    fn abstained(&self, row: &ScoreRow) -> bool {
        let _ = row;
        false
    }
    /// Outcome tags the study adds to `row` (its transitions and failure
    /// modes), appended to `tags`; `base_correct`: the same question's
    /// `base` response (same model and prompt) was right.
    fn tags(&self, row: &ScoreRow, base_correct: Option<bool>, tags: &mut Vec<String>) {
        let _ = (row, base_correct, tags);
    }
}

/// The registered studies' report parts.
pub type Studies<'a> = &'a [&'a dyn StudyReport];

/// Result of the report stages, failing with [`ReportError`] by default.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// The file in a report directory that lists the artifacts the report was
/// made from (`inputs`) and their whole lineage.
pub const ARTIFACTS_FILE: &str = "artifacts.json";

/// The input artifact ids a report directory records in [`ARTIFACTS_FILE`].
pub fn report_inputs(dir: &Path) -> Result<Vec<String>> {
    let path = dir.join(ARTIFACTS_FILE);
    let text = std::fs::read_to_string(&path).map_err(|error| ReportError::Io {
        path: path.clone(),
        error,
    })?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| ReportError::Invalid(format!("{}: {e}", path.display())))?;
    let ids: Option<Vec<String>> = v.get("inputs").and_then(|i| i.as_array()).and_then(|a| {
        a.iter()
            .map(|x| {
                x.as_str()
                    .filter(|s| ragprobe_artifact::is_full_id(s))
                    .map(str::to_string)
            })
            .collect()
    });
    ids.ok_or_else(|| {
        ReportError::Invalid(format!(
            "{}: `inputs` is not a list of artifact ids",
            path.display()
        ))
    })
}

/// What a report run wrote.
#[derive(Debug, Clone, Default)]
pub struct ReportFiles {
    /// The HTML report (`index.html`).
    pub index: PathBuf,
    /// Every file written, in the order written.
    pub files: Vec<PathBuf>,
    /// The tables as terminal text.
    pub text: String,
}

fn write(path: &Path, content: &str, files: &mut Vec<PathBuf>) -> Result<()> {
    write_bytes(path, content.as_bytes(), files)
}

fn write_bytes(path: &Path, content: &[u8], files: &mut Vec<PathBuf>) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).map_err(|error| ReportError::Io {
        path: tmp.clone(),
        error,
    })?;
    std::fs::rename(&tmp, path).map_err(|error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    files.push(path.to_path_buf());
    Ok(())
}

/// Every artifact upstream of `ids` (through manifest inputs), sorted by kind then id.
fn lineage(store: &Store, ids: &[String]) -> Vec<(String, ragprobe_artifact::Manifest)> {
    let mut seen: BTreeMap<String, ragprobe_artifact::Manifest> = BTreeMap::new();
    let mut stack: Vec<String> = ids.to_vec();
    while let Some(id) = stack.pop() {
        if seen.contains_key(&id) {
            continue;
        }
        if let Ok(m) = store.manifest(&id) {
            stack.extend(m.recipe.inputs.iter().cloned());
            seen.insert(id, m);
        }
    }
    let mut v: Vec<(String, ragprobe_artifact::Manifest)> = seen.into_iter().collect();
    v.sort_by(|a, b| (a.1.kind.as_str(), &a.0).cmp(&(b.1.kind.as_str(), &b.0)));
    v
}

fn provenance(lineage: &[(String, ragprobe_artifact::Manifest)]) -> String {
    let e = html::escape;
    let mut s = format!("<p class=\"muted\">ragprobe {}; every artifact the report depends on, with the stage, parameters and resources that made it.</p>", ragprobe_artifact::RAGPROBE_VERSION);
    s.push_str("<table><thead><tr><th>kind</th><th>artifact id</th><th>rows</th><th>stage</th><th>parameters</th><th>resources / model</th></tr></thead><tbody>");
    for (id, m) in lineage {
        let model = m
            .details
            .get("model")
            .and_then(|v| v.as_str())
            .map(|s| format!(" model: {s}"))
            .unwrap_or_default();
        let settings = m
            .details
            .get("settings")
            .map(|v| format!(" settings: {v}"))
            .unwrap_or_default();
        let res: Vec<String> = m
            .recipe
            .resources
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        s.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td>{} v{}</td><td><code>{}</code></td><td><code>{}{}{}</code></td></tr>",
            e(&m.kind),
            e(id),
            m.rows,
            e(&m.recipe.stage),
            m.recipe.stage_version,
            e(&m.recipe.params.to_string()),
            e(&res.join("; ")),
            e(&model),
            e(&settings)
        ));
    }
    s.push_str("</tbody></table>");
    s
}

/// Columns of the long-form metric CSVs.
const METRIC_CSV_HEADER: &str =
    "study,dataset,model,prompt,condition,metric,value,n,ci_low,ci_high";

/// A CSV field, quoted when it holds a comma or a quote.
fn csv_field(x: &str) -> String {
    if x.contains([',', '"']) {
        format!("\"{}\"", x.replace('"', "\"\""))
    } else {
        x.to_string()
    }
}

/// One metric as a [`METRIC_CSV_HEADER`] line (values to 4 decimals).
fn metric_csv_line(r: &MetricRow) -> String {
    let o = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    let q = csv_field;
    format!(
        "{},{},{},{},{},{},{},{},{},{}",
        q(&r.study),
        q(&r.dataset),
        q(&r.model),
        q(&r.prompt),
        q(&r.condition),
        q(&r.metric),
        o(r.value),
        r.n,
        o(r.ci_low),
        o(r.ci_high)
    )
}

/// Write the report for `metrics` (one or more artifacts) and optionally a
/// `scores` artifact (for the case browser) into `out`.
pub fn report(
    store: &Store,
    metrics: &[String],
    scores: Option<&str>,
    out: &Path,
    title: &str,
    studies: Studies,
) -> Result<ReportFiles> {
    let mut ids = Vec::new();
    let mut rows: Vec<MetricRow> = Vec::new();
    for m in metrics {
        let id = store.resolve_kind(m, kinds::METRICS)?;
        rows.extend(read::<Metrics>(store, &id)?);
        ids.push(id);
    }
    let scores_id = scores
        .map(|s| store.resolve_kind(s, kinds::SCORES))
        .transpose()?;
    ids.extend(scores_id.iter().cloned());
    Metrics::sort(&mut rows);
    render(
        store,
        &rows,
        &ids,
        scores_id.as_deref(),
        out,
        title,
        studies,
    )
}

/// The verdict artifacts the `matcher` kappa rows name: the judgements a
/// `score --judge` run wrote (`made_by.judgements`) and the verdicts a
/// `score --verdicts FILE` run imported (`made_by.imported`), each once.
fn judgements(rows: &[MetricRow]) -> Vec<String> {
    let mut ids: Vec<String> = rows
        .iter()
        .filter(|r| r.study == "matcher" && r.metric == "kappa" && r.breakdown.is_none())
        .filter_map(|r| r.details.as_deref())
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .flat_map(|d| {
            ["judgements", "imported"]
                .iter()
                .filter_map(|k| d["made_by"][k].as_array())
                .flatten()
                .filter_map(|v| v.as_str().map(String::from))
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Render already-loaded metric rows (also used for comparisons).
pub fn render(
    store: &Store,
    rows: &[MetricRow],
    ids: &[String],
    scores_id: Option<&str>,
    out: &Path,
    title: &str,
    studies: Studies,
) -> Result<ReportFiles> {
    let tdir = out.join("tables");
    let cdir = out.join("charts");
    for d in [out, &tdir, &cdir] {
        std::fs::create_dir_all(d).map_err(|error| ReportError::Io {
            path: d.to_path_buf(),
            error,
        })?;
    }
    let mut files = Vec::new();
    // Breakdown rows (score --by) have their own tables; the studies'
    // tables and charts read the overall metrics only.
    let (grouped, overall): (Vec<MetricRow>, Vec<MetricRow>) =
        rows.iter().cloned().partition(|r| r.breakdown.is_some());
    let rows = overall.as_slice();
    // With a case browser holding a judge's tags, each disagreement share
    // links to the responses it counts.
    let judged = judgements(rows);
    let link = |r: &MetricRow| {
        (scores_id.is_some()
            && !judged.is_empty()
            && r.study == "matcher"
            && r.metric == "disagreement")
            .then(|| browser::filter_link(r, browser::JUDGE_DIFFERS))
    };
    let mut tabs = tables::all(rows, studies, &link);
    tabs.extend(breakdowns::tables(&grouped));
    let (md, text, tables_html) = write_tables(&tabs, &tdir, title, &mut files)?;
    write_metric_csvs(rows, &grouped, &tdir, &mut files)?;
    write(&out.join("tables.md"), &md, &mut files)?;
    // What the report was made from, for machines: `artifacts push --report`
    // sends this lineage to a remote.
    let lineage = lineage(store, ids);
    let listing = json!({
        "ragprobe_version": ragprobe_artifact::RAGPROBE_VERSION,
        "inputs": ids,
        "lineage": lineage.iter().map(|(id, m)| json!({"id": id, "kind": m.kind, "stage": m.recipe.stage})).collect::<Vec<_>>(),
    });
    let listing = serde_json::to_string_pretty(&listing).expect("json serialises") + "\n";
    write(&out.join(ARTIFACTS_FILE), &listing, &mut files)?;
    let figures = write_charts(rows, &grouped, &cdir, studies, &mut files)?;
    let (data, note) = match scores_id {
        Some(s) => {
            let b = browser::build(store, s, studies, &browser::judge_verdicts(store, &judged)?)?;
            let note = b.note.clone();
            (Some(b), note)
        }
        None => (
            None,
            "No scores artifact given (--scores), so no cases to browse.".to_string(),
        ),
    };
    let page = html::page(
        title,
        &subtitle(rows),
        &tables_html,
        &figures,
        data.as_ref(),
        &note,
        &provenance(&lineage),
    );
    let index = out.join("index.html");
    write(&index, &page, &mut files)?;
    Ok(ReportFiles { index, files, text })
}

/// Each table as Markdown, CSV and LaTeX under `tdir`; returns all of them
/// as one Markdown page (`tables.md`), as plain text and as HTML.
fn write_tables(
    tabs: &[tables::Table],
    tdir: &Path,
    title: &str,
    files: &mut Vec<PathBuf>,
) -> Result<(String, String, String)> {
    let mut md = format!("# {title}\n\n");
    let mut text = String::new();
    let mut tables_html = String::new();
    for t in tabs {
        write(&tdir.join(format!("{}.md", t.id)), &t.markdown(), files)?;
        write(&tdir.join(format!("{}.csv", t.id)), &t.csv(), files)?;
        write(&tdir.join(format!("{}.tex", t.id)), &t.latex(), files)?;
        md.push_str(&t.markdown());
        md.push('\n');
        text.push_str(&t.text());
        text.push('\n');
        tables_html.push_str(&t.html());
    }
    Ok((md, text, tables_html))
}

/// Every metric, long form (`all_metrics.csv`), for anything the study
/// tables do not show; the breakdown rows in `breakdown_metrics.csv`.
fn write_metric_csvs(
    rows: &[MetricRow],
    grouped: &[MetricRow],
    tdir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<()> {
    let all_csv: String = std::iter::once(METRIC_CSV_HEADER.to_string() + "\n")
        .chain(rows.iter().map(|r| metric_csv_line(r) + "\n"))
        .collect();
    write(&tdir.join("all_metrics.csv"), &all_csv, files)?;
    if !grouped.is_empty() {
        let csv: String =
            std::iter::once(format!("breakdown,breakdown_group,{METRIC_CSV_HEADER}\n"))
                .chain(grouped.iter().map(|r| {
                    let (b, g) = (r.breakdown.as_deref(), r.breakdown_group.as_deref());
                    format!(
                        "{},{},{}\n",
                        csv_field(b.unwrap_or("")),
                        csv_field(g.unwrap_or("")),
                        metric_csv_line(r)
                    )
                }))
                .collect();
        write(&tdir.join("breakdown_metrics.csv"), &csv, files)?;
    }
    Ok(())
}

/// Every chart as SVG and PDF under `cdir`, one colour per model across
/// all of them; returns the figures for the HTML page.
fn write_charts(
    rows: &[MetricRow],
    grouped: &[MetricRow],
    cdir: &Path,
    studies: Studies,
    files: &mut Vec<PathBuf>,
) -> Result<Vec<html::ChartFigure>> {
    let mut charts = charts::all(rows, studies);
    charts.extend(breakdowns::charts(grouped));
    let colors = charts::Colors::for_charts(&charts);
    let mut figures = Vec::new();
    for c in &charts {
        let svg = c.svg(&colors);
        write(&cdir.join(format!("{}.svg", c.name)), &svg, files)?;
        write_bytes(
            &cdir.join(format!("{}.pdf", c.name)),
            &c.pdf(&colors),
            files,
        )?;
        figures.push(html::ChartFigure {
            name: c.name.clone(),
            wide: c.size().0 > 560,
            svg,
        });
    }
    Ok(figures)
}

/// The page's subtitle: how many metrics, over which datasets and models.
fn subtitle(rows: &[MetricRow]) -> String {
    let datasets: BTreeSet<&str> = rows.iter().map(|r| r.dataset.as_str()).collect();
    let models: BTreeSet<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    format!(
        "{} metric(s) · datasets: {} · models: {}",
        rows.len(),
        datasets.into_iter().collect::<Vec<_>>().join(", "),
        models.into_iter().collect::<Vec<_>>().join(", ")
    )
}
