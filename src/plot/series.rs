//! One line of a metric figure: its label, colour, marker shape and points (mean with its 95%
//! CI half-width at each x position). Plain data, shared by the figures that draw lines and
//! the rules that look at them (`rules`).

use plotters::style::RGBColor;

use super::style;

#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: RGBColor,
    pub shape: style::Shape,
    /// (x position, mean, ci95 half-width), ascending in x.
    pub points: Vec<(f64, f64, f64)>,
}
