//! The calibration figures, one small panel per model: `ttft_fit`, measured against fitted time
//! to first token on log-log axes with the line `measured = fitted` (points above it are slower
//! than the fit: queueing, retries); `ttft_residuals`, the residuals (measured - fitted)
//! against the request's context length (all input tokens, log axis) with the median per
//! context bin, to show whether the TTFT grows with context beyond the fitted terms. Drawn with
//! the plot module's look (`plot::style`, `plot::frame`), to SVG and to PNG encoded by `plot`
//! for stable bytes.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::estimate::{Calibration, ModelFit};
use super::fit::{median, quantile};
use crate::plot::style::{self, num};
use crate::plot::{frame, DrawResult, PlotError};

/// Which figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Measured against fitted TTFT.
    Fit,
    /// Residuals against context length.
    Residuals,
}

impl Figure {
    /// The file name without extension.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Fit => "ttft_fit",
            Figure::Residuals => "ttft_residuals",
        }
    }
    fn title(self) -> &'static str {
        match self {
            Figure::Fit => "Measured vs fitted time to first token (log axes)",
            Figure::Residuals => {
                "Residual (measured - fitted TTFT) vs context length; line: median per bin"
            }
        }
    }
}

/// One colour per panel, in model order (the tab10 hues).
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

/// The figure as an SVG document.
pub fn svg(cal: &Calibration, figure: Figure) -> Result<String, PlotError> {
    crate::plot::svg_of(figure.name(), |root| draw(cal, figure, root))
}

/// The figure as a PNG file.
pub fn png(cal: &Calibration, figure: Figure) -> Result<Vec<u8>, PlotError> {
    crate::plot::png_of(figure.name(), |root| draw(cal, figure, root))
}

fn draw<DB: DrawingBackend>(
    cal: &Calibration,
    figure: Figure,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult {
    root.fill(&WHITE)?;
    let area = frame(root, figure.title(), &[])?;
    let n = cal.models.len().max(1);
    let cols = n.min(3);
    let rows = n.div_ceil(cols);
    let panels = area.split_evenly((rows, cols));
    let (lo, hi) = bounds(cal);
    let (x_range, y_range) = residual_bounds(cal);
    for (i, (m, panel)) in cal.models.iter().zip(&panels).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        match figure {
            Figure::Fit => draw_panel(panel, m, color, lo, hi)?,
            Figure::Residuals => draw_residuals(panel, m, color, x_range, y_range)?,
        }
    }
    Ok(root.present()?)
}

/// Common log-axis bounds over every point, padded by a factor of 1.3 (never below 10 ms).
fn bounds(cal: &Calibration) -> (f64, f64) {
    let pts =
        cal.models.iter().flat_map(|m| m.points.iter()).flat_map(|p| [p.fitted_s, p.row.ttft_s]);
    let (lo, hi) = pts
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    if hi <= 0.0 {
        return (0.1, 10.0);
    }
    ((lo / 1.3).max(0.01), (hi * 1.3).max(lo * 2.0))
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    m: &ModelFit,
    color: RGBColor,
    lo: f64,
    hi: f64,
) -> DrawResult {
    let caption = format!(
        "{} ({} req., median abs error {} s)",
        m.preset.unwrap_or(&m.model),
        m.requests,
        num(m.median_abs_error_s)
    );
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(caption, (style::FONT, 22).into_font().color(&style::INK))
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("fitted (s)")
        .y_desc("measured (s)")
        .axis_desc_style((style::FONT, 18))
        .label_style((style::FONT, 16))
        .x_labels(5)
        .y_labels(5)
        .x_label_formatter(&|v| num(*v))
        .y_label_formatter(&|v| num(*v))
        .light_line_style(TRANSPARENT)
        .bold_line_style(style::GRID)
        .axis_style(style::INK)
        .draw()?;
    chart.draw_series(LineSeries::new([(lo, lo), (hi, hi)], style::INK.stroke_width(2)))?;
    let pts =
        m.points.iter().map(|p| (p.fitted_s, p.row.ttft_s)).filter(|(f, y)| *f > 0.0 && *y > 0.0);
    chart.draw_series(pts.map(|(f, y)| Circle::new((f, y), 3, color.mix(0.6).filled())))?;
    Ok(())
}

/// Residual panels' axes, common to all: context tokens (log, padded by 1.3) and residual
/// seconds from the smallest residual to 1.2x the largest model's 99th percentile (points above
/// are drawn on the top edge as triangles).
fn residual_bounds(cal: &Calibration) -> ((f64, f64), (f64, f64)) {
    let contexts = cal.models.iter().flat_map(|m| m.points.iter()).map(|p| p.row.context());
    let (clo, chi) = contexts
        .filter(|c| *c > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(l, h), c| (l.min(c), h.max(c)));
    let x = if chi > 0.0 { (clo / 1.3, (chi * 1.3).max(clo * 2.0)) } else { (1.0, 10.0) };
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for m in &cal.models {
        let mut r: Vec<f64> = m.points.iter().map(|p| p.row.ttft_s - p.fitted_s).collect();
        r.sort_by(f64::total_cmp);
        if let (Some(first), false) = (r.first(), r.is_empty()) {
            lo = lo.min(*first);
            hi = hi.max(quantile(&r, 0.99));
        }
    }
    (x, (lo * 1.1 - 0.1, (hi * 1.2).max(0.5)))
}

/// Medians of the residuals in 8 equal bins of log context (bins with at least 5 points), at
/// each bin's median context.
fn binned_medians(m: &ModelFit, (x_lo, x_hi): (f64, f64)) -> Vec<(f64, f64)> {
    const BINS: usize = 8;
    let mut bins: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); BINS];
    let width = (x_hi / x_lo).ln() / BINS as f64;
    for p in m.points.iter().filter(|p| p.row.context() > 0.0) {
        let c = p.row.context();
        let b = (((c / x_lo).ln() / width) as usize).min(BINS - 1);
        bins[b].0.push(c);
        bins[b].1.push(p.row.ttft_s - p.fitted_s);
    }
    bins.into_iter()
        .filter(|(c, _)| c.len() >= 5)
        .map(|(mut c, mut r)| (median(&mut c), median(&mut r)))
        .collect()
}

/// A token count for an axis: `500`, `20k`, `1.5M`.
fn tokens(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", num(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", num(v / 1e3))
    } else {
        num(v)
    }
}

fn draw_residuals<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    m: &ModelFit,
    color: RGBColor,
    (x_lo, x_hi): (f64, f64),
    (y_lo, y_hi): (f64, f64),
) -> DrawResult {
    let caption = format!("{} ({} req.)", m.preset.unwrap_or(&m.model), m.requests);
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(caption, (style::FONT, 22).into_font().color(&style::INK))
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)?;
    chart
        .configure_mesh()
        .x_desc("context (input tokens)")
        .y_desc("residual (s)")
        .axis_desc_style((style::FONT, 18))
        .label_style((style::FONT, 16))
        .x_labels(4)
        .y_labels(6)
        .x_label_formatter(&|v| tokens(*v))
        .y_label_formatter(&|v| num(*v))
        .light_line_style(TRANSPARENT)
        .bold_line_style(style::GRID)
        .axis_style(style::INK)
        .draw()?;
    chart.draw_series(LineSeries::new([(x_lo, 0.0), (x_hi, 0.0)], style::INK.stroke_width(1)))?;
    let pts: Vec<(f64, f64)> = m
        .points
        .iter()
        .filter(|p| p.row.context() > 0.0)
        .map(|p| (p.row.context(), p.row.ttft_s - p.fitted_s))
        .collect();
    let inside = pts.iter().filter(|(_, r)| *r <= y_hi);
    chart.draw_series(inside.map(|&(c, r)| Circle::new((c, r), 3, color.mix(0.5).filled())))?;
    let above = pts.iter().filter(|(_, r)| *r > y_hi);
    chart.draw_series(
        above.map(|&(c, _)| TriangleMarker::new((c, y_hi), 5, color.mix(0.8).filled())),
    )?;
    let medians = binned_medians(m, (x_lo, x_hi));
    chart.draw_series(LineSeries::new(medians, style::INK.stroke_width(3)))?;
    Ok(())
}
