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

pub mod axis;
pub mod covered;
pub mod gaps;
pub mod heatmap;
pub mod labels;
pub mod latency;
pub mod metric;
pub mod param;
pub mod pareto;
pub mod reduce;
pub mod replay;
pub mod rules;
pub mod scale;
pub mod series;
pub mod slice;
pub mod style;
pub mod svg;
pub mod timeline;
pub mod tune;

pub use slice::SliceError;

/// Why a figure could not be drawn, encoded as PNG or written (a bug or a resource problem,
/// not the user's input).
#[derive(Debug, thiserror::Error)]
#[error("{doing} `{figure}`")]
pub struct PlotError {
    doing: &'static str,
    figure: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// The `PlotError` of `doing` figure `figure`, from its cause.
fn failed<'a, E: std::error::Error + Send + Sync + 'static>(
    doing: &'static str,
    figure: &'a str,
) -> impl FnOnce(E) -> PlotError + 'a {
    move |e| PlotError { doing, figure: figure.into(), source: Box::new(e) }
}

/// A drawing call plotters refused. Its error type is generic over the backend (SVG, bitmap),
/// so one figure drawn to both keeps the backend's message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for DrawError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawError(e.to_string())
    }
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

/// Every figure the directory's files support, in a fixed order, at the default slice (the
/// experiment's `[plot] baseline`; when that names no swept value, the base slice).
pub fn figures(r: &Results) -> Vec<Figure> {
    let held = slice::held(r, &[]).unwrap_or_else(|_| slice::base_slice(r));
    figures_held(r, &held)
}

/// Every figure at the slice `at` (KEY=VALUE pairs over the baseline); an unknown key or value
/// is an error naming it and the choices.
pub fn figures_at(r: &Results, at: &[(String, String)]) -> Result<Vec<Figure>, SliceError> {
    Ok(figures_held(r, &slice::held(r, at)?))
}

fn figures_held(r: &Results, held: &[String]) -> Vec<Figure> {
    let mut out = metric::figures(r, held);
    out.extend(param::figures(r, held));
    out.extend(heatmap::figures(r, held));
    out.extend(pareto::figures(r, held));
    out.extend(latency::figures(r, held));
    out.extend(timeline::figures(r));
    out.extend(tune::figures(r));
    out.extend(replay::figures(r));
    out.extend(covered::figures(r));
    out
}

pub(crate) type DrawResult<T = ()> = Result<T, DrawError>;

fn draw<DB: DrawingBackend>(f: &Figure, root: &DrawingArea<DB, Shift>) -> DrawResult {
    root.fill(&WHITE)?;
    match &f.spec {
        Spec::Metric(s) => metric::draw(root, &f.title, s),
        Spec::Percentiles(s) => latency::draw_percentiles(root, &f.title, s),
        Spec::Histogram(s) if s.log_x => gaps::draw(root, &f.title, s),
        Spec::Histogram(s) => latency::draw_histogram(root, &f.title, s),
        Spec::Heatmap(s) => heatmap::draw(root, &f.title, s),
        Spec::Pareto(s) => pareto::draw(root, &f.title, s),
        Spec::Timeline(s) => timeline::draw(root, &f.title, s),
        Spec::Covered(s) => covered::layout::draw(root, &f.title, s),
    }?;
    Ok(root.present()?)
}

/// The figure as an SVG document.
pub fn render_svg(f: &Figure) -> Result<String, PlotError> {
    svg_of(&f.name, |root| draw(f, root))
}

/// The figure as a PNG file (RGB, 8 bit), encoded here so the bytes are ours to keep stable.
pub fn render_png(f: &Figure) -> Result<Vec<u8>, PlotError> {
    png_of(&f.name, |root| draw(f, root))
}

/// The figure as an SVG document, written to `out`.
pub fn write_svg(f: &Figure, out: &mut dyn std::io::Write) -> Result<(), PlotError> {
    let svg = render_svg(f)?;
    out.write_all(svg.as_bytes()).map_err(failed("writing figure", &f.name))
}

/// What `draw` paints, as an SVG document with its text as `<text>` elements (`svg`).
pub(crate) fn svg_of<F>(figure: &str, draw: F) -> Result<String, PlotError>
where
    F: FnOnce(&DrawingArea<svg::TextSvg<'_>, Shift>) -> DrawResult,
{
    style::register_fonts();
    let mut doc = String::new();
    {
        let backend = SVGBackend::with_string(&mut doc, (style::WIDTH, style::HEIGHT));
        let root = svg::TextSvg(backend).into_drawing_area();
        draw(&root).map_err(failed("drawing figure", figure))?;
    }
    Ok(doc)
}

/// What `draw` paints, as a PNG file.
pub(crate) fn png_of<F>(figure: &str, draw: F) -> Result<Vec<u8>, PlotError>
where
    F: FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> DrawResult,
{
    style::register_fonts();
    let (w, h) = (style::WIDTH, style::HEIGHT);
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(&root).map_err(failed("drawing figure", figure))?;
    }
    encode_png(&rgb, w, h).map_err(failed("encoding PNG of figure", figure))
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Default);
        let mut writer = enc.write_header()?;
        writer.write_image_data(rgb)?;
        writer.finish()?;
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

/// The label of the category drawn at `v`: `labels[i]` at `i` (the first on top when
/// `top_down`), none between two.
pub(crate) fn category(labels: &[String], v: f64, top_down: bool) -> String {
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= labels.len() {
        return String::new();
    }
    labels[if top_down { labels.len() - 1 - i as usize } else { i as usize }].clone()
}

/// The pixels left of an axis for its category labels (`labels`, as many characters as the
/// longest; e.g. `fork_other_model(model=claude-haiku-4.5)`).
pub(crate) fn label_area_px(labels: &[String]) -> u32 {
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (chars as f64 * 0.55 * style::TICK_PX as f64 / 1.24 + 75.0).clamp(130.0, 500.0) as u32
}

/// What a legend entry shows next to its label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mark {
    Line(RGBColor),
    /// A line with the series' marker on it.
    Series(RGBColor, style::Shape),
    Box(RGBColor),
    /// The series' marker alone (scatter plots).
    Point(RGBColor, style::Shape),
    Dot(RGBColor),
    Cross(RGBColor),
    Triangle(RGBColor),
    /// No mark: a line of explanatory text, in the mark's column and grey.
    Note,
}

/// Legend rows and their height in pixels.
const LEGEND_ROW_PX: i32 = 34;
const LEGEND_MAX_ROWS: usize = 18;
/// The widest legend column (pixels), mark included; longer labels wrap.
const LEGEND_MAX_PX: u32 = 430;
/// Pixels left of a legend label (the mark's column).
const LEGEND_TEXT_X: i32 = 50;

/// The pixel width of `text` drawn at `px` (plotters' size) in the embedded font.
pub(crate) fn text_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    px: u32,
    bold: bool,
) -> u32 {
    let style = if bold { FontStyle::Bold } else { FontStyle::Normal };
    let font = (style::FONT, px, style).into_font();
    area.estimate_text_size(text, &TextStyle::from(font)).map(|s| s.0).unwrap_or(0)
}

/// Break `text` into lines no wider than `max_px`, at spaces, commas, `(` and `=`; never
/// inside a short call such as `const(2000)` (`breakable`).
pub(crate) fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    px: u32,
    max_px: u32,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = text.to_string();
    while text_width(area, &rest, px, false) > max_px {
        let breaks = breakable(&rest);
        let fit = breaks.iter().rev().find(|&&i| text_width(area, &rest[..i], px, false) <= max_px);
        let Some(&cut) = fit.or(breaks.first()) else { break };
        lines.push(rest[..cut].trim_end().to_string());
        rest = rest[cut..].trim_start().to_string();
    }
    lines.push(rest);
    lines
}

/// Where `text` may break: after a space, comma, `(` or `=`, except within parentheses that
/// hold 16 characters or fewer (a value such as `const(2000)` stays whole).
fn breakable(text: &str) -> Vec<usize> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut short_until = 0; // byte index up to which we are inside a short group
    let mut out = Vec::new();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c == '(' && i >= short_until {
            let mut depth = 0;
            let close = chars[k..].iter().position(|&(_, d)| {
                depth += match d {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            });
            if let Some(len) = close.filter(|&len| len <= 17) {
                short_until = chars[k + len].0;
                continue;
            }
        }
        let end = i + c.len_utf8();
        if matches!(c, ' ' | ',' | '(' | '=') && i >= short_until && end < text.len() {
            out.push(end);
        }
    }
    out
}

/// Draw the title across the figure (a long one in two lines: the head, then the slice it is
/// drawn at), and the legend (when given) in a column on the right, sized to its text and
/// wrapped so it never leaves the canvas; the area left for the chart. The legend never
/// covers data.
pub(crate) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    legend: &[(String, Mark)],
) -> DrawResult<DrawingArea<DB, Shift>> {
    frame_noted(root, title, None, legend)
}

/// `frame`, with `note` (e.g. what zipped axes hold) in grey lines under the title.
pub(crate) fn frame_noted<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    note: Option<&str>,
    legend: &[(String, Mark)],
) -> DrawResult<DrawingArea<DB, Shift>> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let max_w = style::WIDTH - 40;
    let center = Pos::new(HPos::Center, VPos::Top);
    let px = style::title_px(title);
    let mut lines = vec![(title.to_string(), px, true)];
    if text_width(root, title, px, true) > max_w {
        let cut = title.find(" (at ").or_else(|| title.find(" ("));
        lines = match cut {
            Some(i) => vec![
                (title[..i].to_string(), style::title_px(&title[..i]), true),
                (title[i + 1..].to_string(), style::AXIS_TITLE_PX, false),
            ],
            None => vec![(title.to_string(), 26, true)],
        };
        let mut extra = Vec::new();
        for (t, px, bold) in &lines {
            for l in wrap(root, t, *px, max_w) {
                extra.push((l, *px, *bold));
            }
        }
        lines = extra;
    }
    let mut y = 14;
    for (t, px, bold) in &lines {
        let style = if *bold { FontStyle::Bold } else { FontStyle::Normal };
        let font = (style::FONT, *px, style).into_font().color(&style::INK).pos(center);
        root.draw(&Text::new(t.clone(), ((style::WIDTH / 2) as i32, y), font))?;
        y += (*px as f64 * 1.05) as i32;
    }
    for l in note.map(|n| wrap(root, n, style::TICK_PX, max_w)).unwrap_or_default() {
        let font = style::text_style(style::TICK_PX, style::NOTE, (HPos::Center, VPos::Top));
        root.draw(&Text::new(l, ((style::WIDTH / 2) as i32, y), font))?;
        y += (style::TICK_PX as f64 * 1.05) as i32;
    }
    let body = root.margin(y as u32 + 6, 0, 0, 0);
    if legend.is_empty() {
        return Ok(body);
    }
    let rows = legend_rows(root, legend);
    let widest = rows.iter().map(|r| text_width(root, &r.0, style::LEGEND_PX, false)).max();
    let text = widest.unwrap_or(0);
    let width = (text + LEGEND_TEXT_X as u32 + 16).clamp(160, LEGEND_MAX_PX + 66);
    let (plot, side) = body.split_horizontally(body.dim_in_pixel().0.saturating_sub(width));
    draw_legend(&side, &rows)?;
    Ok(plot)
}

/// Legend rows: each label wrapped to the column; continuation rows carry no mark.
fn legend_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    legend: &[(String, Mark)],
) -> Vec<(String, Option<Mark>)> {
    let mut rows = Vec::new();
    for (label, mark) in legend {
        let x = if matches!(mark, Mark::Note) { 8 } else { LEGEND_TEXT_X };
        for (k, line) in
            wrap(area, label, style::LEGEND_PX, LEGEND_MAX_PX - x as u32).into_iter().enumerate()
        {
            rows.push((line, (k == 0 || matches!(mark, Mark::Note)).then_some(*mark)));
        }
    }
    rows
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    legend: &[(String, Option<Mark>)],
) -> DrawResult {
    use plotters::style::text_anchor::{HPos, VPos};
    let font = style::text_style(style::LEGEND_PX, style::INK, (HPos::Left, VPos::Center));
    for (i, (label, mark)) in legend.iter().enumerate().take(LEGEND_MAX_ROWS) {
        let y = 30 + i as i32 * LEGEND_ROW_PX;
        let (x0, x1, xm) = (8, 40, 24);
        let line =
            |px: u32, c: RGBColor| PathElement::new(vec![(x0, y), (x1, y)], c.stroke_width(px));
        match mark.unwrap_or(Mark::Note) {
            Mark::Line(c) => area.draw(&line(style::LINE_PX + 1, c))?,
            Mark::Series(c, shape) => {
                area.draw(&line(style::LINE_PX, c))?;
                marker(area, (xm, y), shape, c, 7)?;
            }
            Mark::Point(c, shape) => marker(area, (xm, y), shape, c, 8)?,
            Mark::Box(c) => area.draw(&Rectangle::new([(x0, y - 10), (x1, y + 10)], c.filled()))?,
            Mark::Dot(c) => area.draw(&Circle::new((xm, y), 9, c.filled()))?,
            Mark::Cross(c) => area.draw(&Cross::new((xm, y), 8, c.stroke_width(3)))?,
            Mark::Triangle(c) => area.draw(&TriangleMarker::new((xm, y), 10, c.filled()))?,
            Mark::Note => {}
        }
        let text = if i + 1 == LEGEND_MAX_ROWS && legend.len() > LEGEND_MAX_ROWS {
            format!("… and {} more rows", legend.len() - i)
        } else {
            label.clone()
        };
        let (x, font) = match mark {
            Some(Mark::Note) => (x0, font.clone().color(&style::NOTE)),
            _ => (LEGEND_TEXT_X, font.clone()),
        };
        area.draw(&Text::new(text, (x, y), font))?;
    }
    Ok(())
}

/// Draw a series marker of `shape` at `at` (in the area's coordinates), `r` pixels in radius.
pub(crate) fn marker<DB: DrawingBackend, CT: plotters::coord::CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    shape: style::Shape,
    c: RGBColor,
    r: i32,
) -> DrawResult
where
    CT::From: Clone,
{
    use style::Shape;
    let e = EmptyElement::at(at);
    let line = c.stroke_width(3);
    let drawn = match shape {
        Shape::Circle => area.draw(&(e + Circle::new((0, 0), r, c.filled()))),
        Shape::Square => {
            area.draw(&(e + Rectangle::new([(1 - r, 1 - r), (r - 1, r - 1)], c.filled())))
        }
        Shape::Triangle => area.draw(&(e + TriangleMarker::new((0, 0), r + 1, c.filled()))),
        Shape::Diamond => {
            let d = r + 1;
            area.draw(&(e + Polygon::new(vec![(0, -d), (d, 0), (0, d), (-d, 0)], c.filled())))
        }
        Shape::Cross => area.draw(&(e + Cross::new((0, 0), r, line))),
        Shape::Ring => area.draw(&(e + Circle::new((0, 0), r, line))),
        Shape::Star => area.draw(
            &(e + PathElement::new(vec![(-r, 0), (r, 0)], line)
                + PathElement::new(vec![(0, -r), (0, r)], line)
                + Cross::new((0, 0), r - 2, line)),
        ),
    };
    Ok(drawn?)
}

/// A chart builder on the area `frame` left, with the usual margins and label areas.
pub(crate) fn builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    // 40 px on the right: the last x tick label is centred on the axis end.
    b.margin(20).margin_top(10).margin_right(40).x_label_area_size(90).y_label_area_size(130);
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
