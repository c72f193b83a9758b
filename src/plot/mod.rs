//! Figures from result files: which figures a results directory supports, their captions
//! (computed from the data), and drawing them to SVG and PNG with plotters.
//!
//! It reads `results::Results` (and, for the covered-prefix figure, the latency presets
//! table) and nothing else: no engine, no re-simulation.
//! Every figure is a `Spec` of plain data built first, then drawn by one function generic
//! over the plotters backend, so the SVG and the PNG show the same thing. Output bytes are
//! a function of the input only (ordered iteration, fixed float formats, own PNG encoding).

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::results::Results;

pub mod covered;
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
    Covered(covered::CoveredSpec),
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
            Spec::Covered(_) => "covered",
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
    out.extend(covered::figures(r));
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
        Spec::Covered(s) => covered::draw(root, &f.title, s),
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

pub(crate) fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
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

/// What a legend entry shows next to its label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mark {
    Line(RGBColor),
    Box(RGBColor),
    Dot(RGBColor),
    Cross(RGBColor),
    Triangle(RGBColor),
    /// No mark: a line of explanatory text, in the mark's column and grey.
    Note,
}

/// Legend rows and their height in pixels.
const LEGEND_ROW_PX: i32 = 34;
const LEGEND_MAX_ROWS: usize = 18;

/// Draw the title across the figure, and the legend (when given) in a column on the right;
/// the area left for the chart. The legend never covers data.
pub(crate) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    legend: &[(String, Mark)],
) -> Result<DrawingArea<DB, Shift>, String> {
    let font = (style::FONT, style::title_px(title), FontStyle::Bold).into_font();
    let body = root.margin(14, 0, 0, 0).titled(title, font).map_err(err)?;
    if legend.is_empty() {
        return Ok(body);
    }
    let chars = legend.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0);
    // ~0.62 em per char at the drawn size (LEGEND_PX / 1.24; DejaVu digits are 0.64 em), plus the mark.
    let width = (chars as f64 * 0.62 * style::LEGEND_PX as f64 / 1.24 + 80.0).clamp(160.0, 520.0);
    let (plot, side) = body.split_horizontally(body.dim_in_pixel().0.saturating_sub(width as u32));
    draw_legend(&side, legend)?;
    Ok(plot)
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    legend: &[(String, Mark)],
) -> DrawResult {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let font = (style::FONT, style::LEGEND_PX)
        .into_font()
        .color(&style::INK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (label, mark)) in legend.iter().enumerate().take(LEGEND_MAX_ROWS) {
        let y = 40 + i as i32 * LEGEND_ROW_PX;
        let (x0, x1, xm) = (8, 40, 24);
        let r = match *mark {
            Mark::Line(c) => area.draw(&PathElement::new(
                vec![(x0, y), (x1, y)],
                c.stroke_width(style::LINE_PX + 1),
            )),
            Mark::Box(c) => area.draw(&Rectangle::new([(x0, y - 10), (x1, y + 10)], c.filled())),
            Mark::Dot(c) => area.draw(&Circle::new((xm, y), 9, c.filled())),
            Mark::Cross(c) => area.draw(&Cross::new((xm, y), 8, c.stroke_width(3))),
            Mark::Triangle(c) => area.draw(&TriangleMarker::new((xm, y), 10, c.filled())),
            Mark::Note => Ok(()),
        };
        r.map_err(err)?;
        let text = if i + 1 == LEGEND_MAX_ROWS && legend.len() > LEGEND_MAX_ROWS {
            format!("… and {} more", legend.len() - i)
        } else {
            label.clone()
        };
        let (x, font) = match mark {
            Mark::Note => (x0, font.clone().color(&style::NOTE)),
            _ => (x1 + 10, font.clone()),
        };
        area.draw(&Text::new(text, (x, y), font)).map_err(err)?;
    }
    Ok(())
}

/// A chart builder on the area `frame` left, with the usual margins and label areas.
pub(crate) fn builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin(20).margin_top(10).x_label_area_size(90).y_label_area_size(130);
    b
}

/// Nice bounds for a value range, with 5% padding (never empty; see `axis_range`).
pub(crate) fn padded(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let (mut lo, hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    if from_zero && lo > 0.0 {
        lo = 0.0;
    }
    if hi - lo < 1e-12 {
        let d = if hi.abs() > 1e-12 { hi.abs() * 0.1 } else { 1.0 };
        return axis_range(lo - d, hi + d);
    }
    let pad = (hi - lo) * 0.05;
    axis_range(if from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
}

/// A range plotters can put ticks on: both ends finite and within `MAX_RESULT_ABS`, and wider
/// than a billionth of their magnitude. Outside these, plotters' tick search never ends (an
/// infinite width) or steps by less than a float's resolution. The readers refuse such values
/// already; this is the last guard, and leaves every ordinary range as it is.
pub(crate) fn axis_range(lo: f64, hi: f64) -> (f64, f64) {
    let max = crate::limits::MAX_RESULT_ABS;
    let clamp = |x: f64| if x.is_finite() { x.clamp(-max, max) } else { 0.0 };
    let (lo, hi) = (clamp(lo), clamp(hi));
    let (lo, hi) = if hi < lo { (hi, lo) } else { (lo, hi) };
    let min_width = 1e-9 * lo.abs().max(hi.abs()).max(1.0);
    if hi - lo < min_width {
        let mid = lo / 2.0 + hi / 2.0;
        return (mid - min_width, mid + min_width);
    }
    (lo, hi)
}
