//! The studies' figures. Each is described once ([`Chart`]) and drawn by
//! the same plotters code into an SVG for the page (with an SVG `<title>`
//! tooltip on every mark: the value, its interval and n) and a PDF for a
//! paper (see [`crate::pdf`]).
//!
//! Style, for print: 13 px axis labels, light major gridlines only, the
//! legend beside the plot (never over the data), one colour per model in
//! every chart of a report ([`Colors`]), and intervals drawn only where
//! there are enough questions to make one mean something
//! ([`MIN_N_FOR_INTERVAL`]).

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use ragprobe_artifact::MetricRow;
use std::collections::{BTreeMap, BTreeSet};

mod figures;
pub use figures::all;
pub use figures::{group_key, label, model_name, series_by};

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];
const FONT: &str = "sans-serif";
/// Font sizes as plotters takes them; its SVG backend writes size / 1.24
/// px (and the PDF backend draws the same): labels 12.9 px, captions 16.1 px.
const LABEL: f64 = 16.0;
const CAPTION: f64 = 20.0;
const GRID: RGBColor = RGBColor(226, 229, 234);
const AXIS: RGBColor = RGBColor(110, 115, 125);
const INK: RGBColor = RGBColor(40, 44, 52);

/// Intervals are drawn only for values over at least this many questions:
/// a bootstrap interval over fewer says little. The tooltip gives n always.
pub const MIN_N_FOR_INTERVAL: i64 = 30;

/// One value: the point, its interval, and how many questions it is over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Val {
    /// The value (a percentage for the studies' metrics).
    pub y: f64,
    /// Its 95% interval, when computed.
    pub ci: Option<(f64, f64)>,
    /// Questions (or responses) it is over.
    pub n: i64,
}

impl Val {
    /// From a metric row, when it has a value.
    pub fn of(r: &MetricRow) -> Option<Val> {
        r.value.map(|y| Val {
            y,
            ci: r.ci_low.zip(r.ci_high),
            n: r.n,
        })
    }

    /// The interval worth drawing.
    fn whisker(&self) -> Option<(f64, f64)> {
        self.ci.filter(|_| self.n >= MIN_N_FOR_INTERVAL)
    }

    fn describe(&self) -> String {
        let ci = self
            .ci
            .map(|(lo, hi)| format!(" [95% CI {lo:.1}–{hi:.1}]"))
            .unwrap_or_default();
        format!("{:.1}{ci}, n = {}", self.y, self.n)
    }
}

/// A named line, set of bars or point, for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The legend entry.
    pub name: String,
    /// The model it is for: its colour.
    pub model: String,
    /// One value per x position (group, category); `None` where missing.
    pub values: Vec<Option<Val>>,
}

/// What a chart shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Bars: one group per label along x, one bar per series in each.
    Bars {
        /// Group labels.
        groups: Vec<String>,
    },
    /// Lines over categorical x positions.
    Lines {
        /// The x positions' labels.
        xs: Vec<String>,
        /// The x axis title.
        x_desc: String,
    },
    /// One point per series: `values[0]` across, `values[1]` up.
    Scatter {
        /// The x axis title.
        x_desc: String,
    },
    /// Differences with intervals, one row per series (`values[0]`),
    /// around a marked zero.
    Diffs,
}

/// One figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// File stem (`fig2_unanswerable`): `charts/<name>.svg` and `.pdf`.
    pub name: String,
    /// The caption.
    pub title: String,
    /// The y axis title (the x axis for [`Kind::Diffs`]).
    pub y_desc: String,
    /// What it shows.
    pub kind: Kind,
    /// Its data.
    pub series: Vec<Series>,
}

/// One colour per model, the same in every chart of a report: models in
/// sorted order take the palette in turn. A model's second, third, ...
/// series in one chart (other prompts or datasets) get its colour lighter
/// and another marker.
#[derive(Debug, Clone, Default)]
pub struct Colors {
    by_model: BTreeMap<String, usize>,
}

impl Colors {
    /// Colours for every model the charts show.
    pub fn for_charts(charts: &[Chart]) -> Colors {
        let models: BTreeSet<&str> = charts
            .iter()
            .flat_map(|c| c.series.iter().map(|s| s.model.as_str()))
            .collect();
        Colors {
            by_model: models
                .into_iter()
                .enumerate()
                .map(|(i, m)| (m.to_string(), i))
                .collect(),
        }
    }

    fn base(&self, model: &str) -> RGBColor {
        PALETTE[self.by_model.get(model).copied().unwrap_or(0) % PALETTE.len()]
    }
}

/// A mark's box in pixels and what its tooltip says.
struct Tip {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
    text: String,
}

type Drawn<DB> = Result<Vec<Tip>, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Each series' colour and variant (its rank among the chart's series of
/// the same model).
fn styles(chart: &Chart, colors: &Colors) -> Vec<(RGBColor, usize)> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    chart
        .series
        .iter()
        .map(|s| {
            let v = seen.entry(&s.model).or_insert(0);
            let variant = *v;
            *v += 1;
            let c = colors.base(&s.model);
            // Lighter for later variants: mixed with white.
            let t = (0.28 * variant as f64).min(0.7);
            let mix = |x: u8| (x as f64 + (255.0 - x as f64) * t) as u8;
            (RGBColor(mix(c.0), mix(c.1), mix(c.2)), variant)
        })
        .collect()
}

/// Text width estimate for layout before drawing (12.9 px sans-serif).
fn text_px(s: &str) -> u32 {
    (s.chars().count() as f64 * 7.2) as u32
}

/// Category labels at integer (or half-integer) positions; nothing between.
fn category_label(labels: &[String], x: f64, offset: f64) -> String {
    let i = (x - offset).round();
    if (x - offset - i).abs() < 1e-6 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

impl Chart {
    /// Height of the legend under the plot: one line per series.
    fn legend_height(&self) -> u32 {
        if matches!(self.kind, Kind::Diffs) || self.series.is_empty() {
            return 0;
        }
        12 + 20 * self.series.len() as u32
    }

    /// Width and height in pixels (points in the PDF). Most charts are one
    /// grid cell (560 px) wide; bars widen with their groups.
    pub fn size(&self) -> (u32, u32) {
        let legend = self.legend_height();
        match &self.kind {
            Kind::Bars { groups } => {
                let per_group = (24 + 20 * self.series.len() as u32)
                    .max(groups.iter().map(|g| text_px(g) + 16).max().unwrap_or(0));
                (
                    (90 + groups.len() as u32 * per_group).max(560),
                    340 + legend,
                )
            }
            Kind::Lines { .. } | Kind::Scatter { .. } => (560, 340 + legend),
            Kind::Diffs => {
                let label = self
                    .series
                    .iter()
                    .map(|s| text_px(&s.name))
                    .max()
                    .unwrap_or(0);
                (
                    (label + 430).clamp(560, 1100),
                    90 + 26 * self.series.len().max(1) as u32,
                )
            }
        }
    }

    /// The value axis range: 0–100 widened to every value and drawn interval.
    fn value_range(&self) -> (f64, f64) {
        let (mut lo, mut hi) = (0.0f64, 100.0f64);
        for v in self.series.iter().flat_map(|s| s.values.iter().flatten()) {
            let (a, b) = v.whisker().unwrap_or((v.y, v.y));
            lo = lo.min(a.min(v.y));
            hi = hi.max(b.max(v.y));
        }
        ((lo / 10.0).floor() * 10.0, (hi / 10.0).ceil() * 10.0)
    }

    /// The SVG, with a tooltip over every mark.
    pub fn svg(&self, colors: &Colors) -> String {
        let mut svg = String::new();
        let tips = {
            let root = SVGBackend::with_string(&mut svg, self.size()).into_drawing_area();
            let tips = self.draw(&root, colors).expect("drawing into a string");
            root.present().expect("drawing into a string");
            tips
        };
        let mut overlay = String::from("<g class=\"tips\">");
        for t in tips {
            overlay.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#000\" fill-opacity=\"0\"><title>{}</title></rect>",
                t.x0.min(t.x1),
                t.y0.min(t.y1),
                (t.x1 - t.x0).abs().max(6),
                (t.y1 - t.y0).abs().max(6),
                crate::html::escape(&t.text)
            ));
        }
        overlay.push_str("</g>\n</svg>");
        match svg.rfind("</svg>") {
            Some(i) => {
                svg.replace_range(i.., &overlay);
                svg.push('\n');
            }
            None => svg.push_str(&overlay),
        }
        svg
    }

    /// The PDF (one page of the chart's size, in points).
    pub fn pdf(&self, colors: &Colors) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let root =
                crate::pdf::PdfBackend::with_buffer(&mut out, self.size()).into_drawing_area();
            self.draw(&root, colors).expect("drawing into memory");
            root.present().expect("drawing into memory");
        }
        out
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        colors: &Colors,
    ) -> Drawn<DB> {
        root.fill(&WHITE)?;
        let (_, h) = self.size();
        let legend_h = self.legend_height();
        let (plot, legend) = root.split_vertically(h - legend_h);
        let styles = styles(self, colors);
        let tips = match &self.kind {
            Kind::Bars { groups } => self.bars(&plot, groups, &styles)?,
            Kind::Lines { xs, x_desc } => self.lines(&plot, xs, x_desc, &styles)?,
            Kind::Scatter { x_desc } => self.scatter(&plot, x_desc, &styles)?,
            Kind::Diffs => self.diffs(&plot)?,
        };
        if legend_h > 0 {
            self.legend(&legend, &styles)?;
        }
        Ok(tips)
    }

    /// Swatches and names under the plot, one per line (long names cut
    /// to the chart's width; the tooltips have them whole).
    fn legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        styles: &[(RGBColor, usize)],
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let font = (FONT, LABEL).into_font().color(&INK);
        let room = (area.dim_in_pixel().0.saturating_sub(90) as f64 / 7.2) as usize;
        for (i, (s, (c, variant))) in self.series.iter().zip(styles).enumerate() {
            let y = 8 + i as i32 * 20;
            let x = 62;
            match self.kind {
                Kind::Bars { .. } => {
                    area.draw(&Rectangle::new(
                        [(x + 4, y - 6), (x + 16, y + 6)],
                        c.filled(),
                    ))?;
                }
                _ => {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + 20, y)],
                        c.stroke_width(2),
                    ))?;
                    marker(area, (x + 10, y), *c, *variant)?;
                }
            }
            let name: String = if s.name.chars().count() > room {
                s.name
                    .chars()
                    .take(room.saturating_sub(1))
                    .collect::<String>()
                    + "…"
            } else {
                s.name.clone()
            };
            area.draw(&Text::new(
                name,
                (x + 28, y),
                font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }
        Ok(())
    }

    fn bars<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        groups: &[String],
        styles: &[(RGBColor, usize)],
    ) -> Drawn<DB> {
        let (lo, hi) = self.value_range();
        let n = groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, CAPTION).into_font().color(&INK))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(52)
            .build_cartesian_2d(0f64..n, lo..hi)?;
        print_style(chart.configure_mesh().disable_x_mesh())
            .x_labels(groups.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| category_label(groups, *x, 0.5))
            .y_desc(&self.y_desc)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        let k = self.series.len().max(1) as f64;
        let bw = 0.8 / k;
        let mut tips = Vec::new();
        for (si, (s, (c, _))) in self.series.iter().zip(styles).enumerate() {
            for (gi, v) in s.values.iter().enumerate() {
                let Some(v) = v else { continue };
                let x0 = gi as f64 + 0.1 + si as f64 * bw;
                let x1 = x0 + bw * 0.92;
                let base = 0f64.clamp(lo, hi);
                chart.draw_series([Rectangle::new([(x0, base), (x1, v.y)], c.filled())])?;
                if let Some((a, b)) = v.whisker() {
                    chart.draw_series([ErrorBar::new_vertical(
                        (x0 + x1) / 2.0,
                        a,
                        v.y,
                        b,
                        INK.stroke_width(1),
                        6,
                    )])?;
                }
                let (px0, py0) = chart.backend_coord(&(x0, v.y.max(base)));
                let (px1, py1) = chart.backend_coord(&(x1, v.y.min(base)));
                tips.push(Tip {
                    x0: px0,
                    y0: py0,
                    x1: px1,
                    y1: py1,
                    text: format!("{} · {}: {}", s.name, groups[gi], v.describe()),
                });
            }
        }
        Ok(tips)
    }

    fn lines<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        xs: &[String],
        x_desc: &str,
        styles: &[(RGBColor, usize)],
    ) -> Drawn<DB> {
        let (lo, hi) = self.value_range();
        let n = xs.len().max(1) as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, CAPTION).into_font().color(&INK))
            .margin(10)
            .x_label_area_size(46)
            .y_label_area_size(52)
            .build_cartesian_2d(-0.5f64..(n - 0.5), lo..hi)?;
        print_style(chart.configure_mesh().disable_x_mesh())
            .x_labels(xs.len().max(1) * 2 + 1)
            .x_label_formatter(&|x| category_label(xs, *x, 0.0))
            .x_desc(x_desc)
            .y_desc(&self.y_desc)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        let mut tips = Vec::new();
        let k = self.series.len().max(1) as f64;
        for (si, (s, (c, variant))) in self.series.iter().zip(styles).enumerate() {
            // Series side by side by a few pixels, so whiskers do not hide each other.
            let shift = (si as f64 - (k - 1.0) / 2.0) * 0.03;
            let pts: Vec<(f64, Val)> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i as f64 + shift, v)))
                .collect();
            chart.draw_series(LineSeries::new(
                pts.iter().map(|(x, v)| (*x, v.y)),
                c.stroke_width(2),
            ))?;
            for (x, v) in &pts {
                if let Some((a, b)) = v.whisker() {
                    chart.draw_series([ErrorBar::new_vertical(
                        *x,
                        a,
                        v.y,
                        b,
                        c.stroke_width(1),
                        8,
                    )])?;
                }
                let p = chart.backend_coord(&(*x, v.y));
                // The plot area starts at the backend's origin: its pixels are backend pixels.
                marker(area, p, *c, *variant)?;
                tips.push(Tip {
                    x0: p.0 - 6,
                    y0: p.1 - 6,
                    x1: p.0 + 6,
                    y1: p.1 + 6,
                    text: format!("{} · {}: {}", s.name, xs[x.round() as usize], v.describe()),
                });
            }
        }
        Ok(tips)
    }

    fn scatter<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x_desc: &str,
        styles: &[(RGBColor, usize)],
    ) -> Drawn<DB> {
        let (lo, hi) = self.value_range();
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, CAPTION).into_font().color(&INK))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(52)
            .build_cartesian_2d(lo..hi, lo..hi)?;
        print_style(&mut chart.configure_mesh())
            .x_desc(x_desc)
            .y_desc(&self.y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        let mut tips = Vec::new();
        for (s, (c, variant)) in self.series.iter().zip(styles) {
            let (Some(Some(x)), Some(Some(y))) = (s.values.first(), s.values.get(1)) else {
                continue;
            };
            if let Some((a, b)) = x.whisker() {
                chart.draw_series([ErrorBar::new_horizontal(
                    y.y,
                    a,
                    x.y,
                    b,
                    c.stroke_width(1),
                    8,
                )])?;
            }
            if let Some((a, b)) = y.whisker() {
                chart.draw_series([ErrorBar::new_vertical(
                    x.y,
                    a,
                    y.y,
                    b,
                    c.stroke_width(1),
                    8,
                )])?;
            }
            let p = chart.backend_coord(&(x.y, y.y));
            marker(area, p, *c, *variant)?;
            tips.push(Tip {
                x0: p.0 - 7,
                y0: p.1 - 7,
                x1: p.0 + 7,
                y1: p.1 + 7,
                text: format!("{}: x {}; y {}", s.name, x.describe(), y.describe()),
            });
        }
        Ok(tips)
    }

    fn diffs<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let rows = self.series.len().max(1);
        let reach = self
            .series
            .iter()
            .filter_map(|s| s.values.first().copied().flatten())
            .map(|v| {
                let (a, b) = v.whisker().unwrap_or((v.y, v.y));
                a.abs().max(b.abs()).max(v.y.abs())
            })
            .fold(1.0f64, f64::max);
        let reach = (reach * 1.15 / 5.0).ceil() * 5.0;
        let labels: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        let label_w = labels.iter().map(|l| text_px(l)).max().unwrap_or(0) + 16;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, CAPTION).into_font().color(&INK))
            .margin(10)
            .x_label_area_size(46)
            .y_label_area_size(label_w)
            .build_cartesian_2d(-reach..reach, -0.5f64..(rows as f64 - 0.5))?;
        let count = rows;
        print_style(chart.configure_mesh().disable_y_mesh())
            .x_desc(&self.y_desc)
            .x_label_formatter(&|x| format!("{x:+.0}"))
            .y_labels(rows * 2 + 1)
            .y_label_formatter(&|y| {
                // Top row first.
                let i = y.round();
                if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < count {
                    labels[count - 1 - i as usize].clone()
                } else {
                    String::new()
                }
            })
            .draw()?;
        chart.draw_series([PathElement::new(
            vec![(0.0, -0.5), (0.0, rows as f64 - 0.5)],
            INK.stroke_width(1),
        )])?;
        let c = PALETTE[0];
        let mut tips = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let Some(Some(v)) = s.values.first() else {
                continue;
            };
            let y = (rows - 1 - i) as f64;
            if let Some((a, b)) = v.whisker() {
                chart.draw_series([ErrorBar::new_horizontal(
                    y,
                    a,
                    v.y,
                    b,
                    c.stroke_width(2),
                    8,
                )])?;
            }
            chart.draw_series([Circle::new((v.y, y), 5, c.filled())])?;
            let p = chart.backend_coord(&(v.y, y));
            tips.push(Tip {
                x0: p.0 - 7,
                y0: p.1 - 7,
                x1: p.0 + 7,
                y1: p.1 + 7,
                text: format!("{}: {}", s.name, v.describe()),
            });
        }
        Ok(tips)
    }
}

/// The axes of every chart: major gridlines only, light; print-size labels.
fn print_style<'m, 'a, 'b, DB: DrawingBackend>(
    m: &'m mut MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB>,
) -> &'m mut MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    m.light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .axis_style(AXIS)
        .label_style((FONT, LABEL).into_font().color(&INK))
        .axis_desc_style((FONT, LABEL).into_font().color(&INK))
}

/// A series' marker: a filled circle, then a hollow one, a triangle, a square.
fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: (i32, i32),
    c: RGBColor,
    variant: usize,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (x, y) = p;
    match variant % 4 {
        0 => area.draw(&Circle::new(p, 4, c.filled())),
        1 => area.draw(&Circle::new(p, 4, c.stroke_width(2))),
        2 => area.draw(&Polygon::new(
            vec![(x, y - 5), (x - 5, y + 4), (x + 5, y + 4)],
            c.filled(),
        )),
        _ => area.draw(&Rectangle::new(
            [(x - 4, y - 4), (x + 4, y + 4)],
            c.filled(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: &str, metric: &str, value: f64, n: i64, ci: Option<(f64, f64)>) -> MetricRow {
        MetricRow {
            study: "study-a".into(),
            dataset: "nq".into(),
            model: model.into(),
            prompt: "study-a-unans".into(),
            condition: "base".into(),
            metric: metric.into(),
            value: Some(value),
            n,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            ..Default::default()
        }
    }

    /// A bar chart of the rows of one metric, one bar per model (as the
    /// studies' bar figures are made).
    fn bars(rows: &[MetricRow], metric: &str, label: &str) -> Chart {
        let picked: Vec<&MetricRow> = rows.iter().filter(|r| r.metric == metric).collect();
        Chart {
            name: metric.into(),
            title: "t".into(),
            y_desc: "%".into(),
            kind: Kind::Bars {
                groups: vec![label.into()],
            },
            series: series_by(&picked, group_key, &[metric], |r, m| r.metric == *m),
        }
    }

    #[test]
    fn whiskers_need_enough_questions_and_every_mark_has_a_tooltip_with_n() {
        let rows = vec![
            row("m-small", "acc", 50.0, 10, Some((30.0, 70.0))),
            row("m-large", "acc", 60.0, 400, Some((55.0, 65.0))),
        ];
        let charts = vec![bars(&rows, "acc", "Acc")];
        let colors = Colors::for_charts(&charts);
        let svg = charts[0].svg(&colors);
        assert!(svg.contains("<title>m-large · study-a-unans (nq) · Acc: 60.0 [95% CI 55.0–65.0], n = 400</title>"), "{svg}");
        assert!(svg.contains("n = 10</title>"));
        // Two bars, one whisker: plotters draws an error bar as three lines.
        let s = &charts[0].series;
        assert!(s[0].values[0].unwrap().whisker().is_some());
        assert!(s[1].values[0].unwrap().whisker().is_none());
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn a_model_keeps_its_colour_across_charts() {
        let mut rows = vec![
            row("b-model", "acc", 50.0, 40, None),
            row("a-model", "acc", 60.0, 40, None),
        ];
        let mut rad = row("b-model", "rad", 10.0, 40, None);
        rad.condition = "add-random".into();
        rows.push(rad);
        let charts = vec![bars(&rows, "acc", "Acc"), bars(&rows, "rad", "RAD")];
        let colors = Colors::for_charts(&charts);
        // a-model sorts first: the first palette colour; b-model the second, in both charts.
        let fig2 = styles(&charts[0], &colors);
        let fig3 = styles(&charts[1], &colors);
        assert_eq!(charts[0].series[1].model, "b-model");
        assert_eq!(fig2[1].0, PALETTE[1]);
        assert_eq!(charts[1].series[0].model, "b-model");
        assert_eq!(fig3[0].0, PALETTE[1]);
    }

    #[test]
    fn axis_labels_are_at_least_12px_and_only_major_gridlines_are_drawn() {
        let rows = vec![row("m", "acc", 50.0, 40, None)];
        let c = &bars(&rows, "acc", "Acc");
        let svg = c.svg(&Colors::for_charts(std::slice::from_ref(c)));
        for size in svg.match_indices("font-size=\"").map(|(i, _)| {
            svg[i + 11..]
                .split('"')
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap()
        }) {
            assert!(size >= 12.0, "a {size}px label in {svg}");
        }
        let pdf = c.pdf(&Colors::default());
        assert!(pdf.starts_with(b"%PDF-"));
    }
}
