//! The calibration figure: measured against fitted time to first token, one small log-log
//! panel per model with the line `measured = fitted`; points above it are slower than the
//! fit (queueing, retries), below faster. Drawn with the plot module's look (`plot::style`,
//! `plot::frame`), to SVG and to PNG encoded by `plot` for stable bytes.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::estimate::{Calibration, ModelFit};
use crate::plot::style::{self, num};
use crate::plot::{frame, DrawResult, PlotError};

const TITLE: &str = "Measured vs fitted time to first token (log axes)";
const NAME: &str = "ttft_fit";

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
pub fn svg(cal: &Calibration) -> Result<String, PlotError> {
    crate::plot::svg_of(NAME, |root| draw(cal, root))
}

/// The figure as a PNG file.
pub fn png(cal: &Calibration) -> Result<Vec<u8>, PlotError> {
    crate::plot::png_of(NAME, |root| draw(cal, root))
}

fn draw<DB: DrawingBackend>(cal: &Calibration, root: &DrawingArea<DB, Shift>) -> DrawResult {
    root.fill(&WHITE)?;
    let area = frame(root, TITLE, &[])?;
    let n = cal.models.len().max(1);
    let cols = n.min(3);
    let rows = n.div_ceil(cols);
    let (lo, hi) = bounds(cal);
    let panels = area.split_evenly((rows, cols));
    for (i, (m, panel)) in cal.models.iter().zip(&panels).enumerate() {
        draw_panel(panel, m, PALETTE[i % PALETTE.len()], lo, hi)?;
    }
    Ok(root.present()?)
}

/// Common log-axis bounds over every point, padded by a factor of 1.3 (never below 10 ms).
fn bounds(cal: &Calibration) -> (f64, f64) {
    let pts = cal.models.iter().flat_map(|m| m.points.iter()).flat_map(|&(f, y)| [f, y]);
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
        "{} ({} req., MAE {} s)",
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
    let pts = m.points.iter().filter(|(f, y)| *f > 0.0 && *y > 0.0);
    chart.draw_series(pts.map(|&(f, y)| Circle::new((f, y), 3, color.mix(0.6).filled())))?;
    Ok(())
}
