//! Figures from result files: which figures a results directory supports, their captions
//! (computed from the data), and drawing them to SVG and PNG with plotters.
//!
//! It reads `report::results::Results` and nothing else: no engine, no re-simulation.
//! Every figure is a `Spec` of plain data built first, then drawn by one function generic
//! over the plotters backend, so the SVG and the PNG show the same thing. Output bytes are
//! a function of the input only (ordered iteration, fixed float formats, own PNG encoding).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::results::Results;

pub mod heatmap;
pub mod latency;
pub mod metric;
pub mod param;
pub mod pareto;
pub mod replay;
pub mod style;
pub mod timeline;
pub mod tune;

/// Why a figure could not be drawn (a bug or a resource problem, not the user's input).
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("drawing figure `{figure}`: {msg}")]
    Draw { figure: String, msg: String },
    #[error("encoding PNG of figure `{figure}`: {msg}")]
    Png { figure: String, msg: String },
}

/// One figure: a file stem, its title, a sentence saying what it shows, and its data.
#[derive(Debug, Clone)]
pub struct Figure {
    pub name: String,
    pub title: String,
    pub caption: String,
    pub spec: Spec,
}

/// The data of a figure, by kind.
#[derive(Debug, Clone)]
pub enum Spec {
    Metric(metric::MetricSpec),
    Percentiles(latency::LatencySpec),
    Histogram(latency::LatencySpec),
    Heatmap(heatmap::HeatSpec),
    Pareto(pareto::ParetoSpec),
    Timeline(timeline::TimelineSpec),
}

impl Spec {
    /// The kind's short name (used in file names and by tests).
    pub fn kind(&self) -> &'static str {
        match self {
            Spec::Metric(_) => "metric",
            Spec::Percentiles(_) => "percentiles",
            Spec::Histogram(_) => "histogram",
            Spec::Heatmap(_) => "heatmap",
            Spec::Pareto(_) => "pareto",
            Spec::Timeline(_) => "timeline",
        }
    }
}

/// Every figure the directory's files support, in a fixed order.
pub fn figures(r: &Results) -> Vec<Figure> {
    let mut out = metric::figures(r);
    out.extend(param::figures(r));
    out.extend(heatmap::figures(r));
    out.extend(pareto::figures(r));
    out.extend(latency::figures(r));
    out.extend(timeline::figures(r));
    out.extend(tune::figures(r));
    out.extend(replay::figures(r));
    out
}

type DrawResult = Result<(), String>;

/// Map any plotters error to a message (plotters' errors are generic over the backend).
pub(crate) fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn draw<DB: DrawingBackend>(f: &Figure, root: &DrawingArea<DB, Shift>) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    match &f.spec {
        Spec::Metric(s) => metric::draw(root, &f.title, s),
        Spec::Percentiles(s) => latency::draw_percentiles(root, &f.title, s),
        Spec::Histogram(s) => latency::draw_histogram(root, &f.title, s),
        Spec::Heatmap(s) => heatmap::draw(root, &f.title, s),
        Spec::Pareto(s) => pareto::draw(root, &f.title, s),
        Spec::Timeline(s) => timeline::draw(root, &f.title, s),
    }?;
    root.present().map_err(err)
}

/// The figure as an SVG document.
pub fn render_svg(f: &Figure) -> Result<String, PlotError> {
    style::register_fonts();
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (style::WIDTH, style::HEIGHT)).into_drawing_area();
        draw(f, &root).map_err(|msg| PlotError::Draw { figure: f.name.clone(), msg })?;
    }
    Ok(svg)
}

/// The figure as a PNG file (RGB, 8 bit), encoded here so the bytes are ours to keep stable.
pub fn render_png(f: &Figure) -> Result<Vec<u8>, PlotError> {
    style::register_fonts();
    let (w, h) = (style::WIDTH, style::HEIGHT);
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(f, &root).map_err(|msg| PlotError::Draw { figure: f.name.clone(), msg })?;
    }
    encode_png(&rgb, w, h).map_err(|msg| PlotError::Png { figure: f.name.clone(), msg })
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Default);
        let mut writer = enc.write_header().map_err(err)?;
        writer.write_image_data(rgb).map_err(err)?;
        writer.finish().map_err(err)?;
    }
    Ok(out)
}

/// Shared chart chrome: the mesh with axis titles, tick labels and a light grid.
pub(crate) fn mesh_style<'a, 'b, DB, X, Y>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    DB: DrawingBackend,
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let mut m = chart.configure_mesh();
    m.axis_desc_style((style::FONT, style::AXIS_TITLE_PX))
        .label_style((style::FONT, style::TICK_PX))
        .light_line_style(TRANSPARENT)
        .bold_line_style(style::GRID)
        .axis_style(style::INK);
    m
}

/// A chart builder with the figure's title and the usual margins.
pub(crate) fn builder<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, (style::FONT, style::title_px(title), FontStyle::Bold))
        .margin(24)
        .x_label_area_size(80)
        .y_label_area_size(120);
    b
}

/// A series legend in the chart's corner.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(pos)
        .label_font((style::FONT, style::LEGEND_PX))
        .background_style(WHITE.mix(0.85))
        .border_style(style::INK)
        .margin(12)
        .draw()
        .map_err(err)
}

/// Room above the data for a legend of `entries` lines (the legend sits in the top corner).
pub(crate) fn headroom(y0: f64, y1: f64, entries: usize) -> f64 {
    y1 + (y1 - y0) * (0.02 + 0.075 * entries as f64)
}

/// Nice bounds for a value range, with 5% padding (never empty).
pub(crate) fn padded(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let (mut lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    if from_zero && lo > 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-12 {
        let d = if hi.abs() > 1e-12 { hi.abs() * 0.1 } else { 1.0 };
        return (lo - d, hi + d);
    }
    let pad = (hi - lo) * 0.05;
    (if from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
}
