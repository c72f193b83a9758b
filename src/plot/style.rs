//! The one look of every figure: size, fonts (embedded DejaVu Sans), palette, number formats.
//!
//! One strategy family has one hue everywhere (eager red, wait_first blue, stagger orange,
//! sequential purple, prewarm green); variants of a family are shades of that hue, in the
//! order the results list them. It knows nothing of what a figure shows.

use std::sync::Once;

use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, IntoFont, RGBColor, TextStyle};

pub use crate::numfmt::num;

/// Slide size: 16:10 at 1200 px wide.
pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 750;
/// The family the embedded DejaVu Sans is registered as (plotters looks fonts up by it), and
/// the font stack an SVG names: DejaVu Sans where installed, else Verdana, whose widths are
/// close to it, else the viewer's sans-serif.
pub const FONT: &str = "DejaVu Sans, Verdana, sans-serif";
// Plotters draws text at 1/1.24 of the size it is given: these give ~29, 24, 20, 20 px.
pub const TITLE_PX: u32 = 36;
pub const AXIS_TITLE_PX: u32 = 30;
pub const TICK_PX: u32 = 25;
pub const LEGEND_PX: u32 = 25;
pub const LINE_PX: u32 = 3;
pub const GRID: RGBColor = RGBColor(225, 225, 225);
pub const INK: RGBColor = RGBColor(40, 40, 40);
/// Explanatory text (legend notes).
pub const NOTE: RGBColor = RGBColor(95, 95, 95);
/// The other series behind a small multiple's own.
pub const CONTEXT: RGBColor = RGBColor(200, 200, 200);
/// A second marker line (tune's recommendation).
pub const HIGHLIGHT: RGBColor = RGBColor(120, 0, 160);
/// The documented default of the hold cap (docs/model.md: 5000 ms).
pub const DEFAULT_HOLD_CAP_S: f64 = 5.0;

/// The title size that fits `title` on one line (DejaVu Sans Bold is ~0.62 em per char,
/// drawn at 1/1.24 of the size given: 0.5 per char of the given size).
pub fn title_px(title: &str) -> u32 {
    let fit = (WIDTH as f64 - 48.0) / (0.5 * title.chars().count().max(1) as f64);
    (fit.floor() as u32).clamp(26, TITLE_PX)
}

/// A dotted key's last part, for titles (`workload.agents` -> `agents`).
pub fn short_key(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// Text in the embedded font at `px` in `color`, anchored at (`h`, `v`) of its box.
pub fn text_style(px: u32, color: RGBColor, (h, v): (HPos, VPos)) -> TextStyle<'static> {
    (FONT, px).into_font().color(&color).pos(Pos::new(h, v))
}

static FONTS: Once = Once::new();

/// Register DejaVu Sans (regular, bold) as `FONT`; without it nothing is drawn.
pub fn register_fonts() {
    FONTS.call_once(|| {
        for (style, bytes) in
            [(FontStyle::Normal, dejavu::sans::regular()), (FontStyle::Bold, dejavu::sans::bold())]
        {
            plotters::style::register_font(FONT, style, bytes)
                .unwrap_or_else(|_| panic!("the embedded DejaVu font is valid"));
        }
    });
}

/// The hue of a strategy family: the label's name before `(`.
fn family_hue(label: &str) -> RGBColor {
    match label.split('(').next().unwrap_or("").trim() {
        "eager" => RGBColor(214, 39, 40),
        "wait_first" => RGBColor(31, 119, 180),
        "stagger" => RGBColor(255, 127, 14),
        "sequential" => RGBColor(148, 103, 189),
        "prewarm" => RGBColor(44, 160, 44),
        _ => RGBColor(127, 127, 127),
    }
}

/// The colour of `label` among `all` (the run's strategies, in order): its family's hue,
/// darker for the first variant and lighter for the last when a family has several.
pub fn strategy_color(label: &str, all: &[String]) -> RGBColor {
    let fam = |l: &str| l.split('(').next().unwrap_or("").trim().to_string();
    let same: Vec<&String> = all.iter().filter(|l| fam(l) == fam(label)).collect();
    let hue = family_hue(label);
    let n = same.len();
    let k = same.iter().position(|l| *l == label).unwrap_or(0);
    if n <= 1 {
        return hue;
    }
    // t in [-0.45, 0.45]: negative darkens toward black, positive lightens toward white.
    let t = -0.45 + 0.9 * k as f64 / (n - 1) as f64;
    let mix = |c: u8| {
        let c = c as f64;
        let v = if t < 0.0 { c * (1.0 + t) } else { c + (255.0 - c) * t };
        v.round().clamp(0.0, 255.0) as u8
    };
    RGBColor(mix(hue.0), mix(hue.1), mix(hue.2))
}

/// A marker shape: series differ in shape as well as colour, so none hides under another and
/// the figure reads in grey.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
    Cross,
    Ring,
    Star,
}

/// The shapes in the order series take them.
pub const SHAPES: [Shape; 7] = [
    Shape::Circle,
    Shape::Square,
    Shape::Triangle,
    Shape::Diamond,
    Shape::Cross,
    Shape::Ring,
    Shape::Star,
];

/// The shape of the `i`-th series of a figure.
pub fn shape(i: usize) -> Shape {
    SHAPES[i % SHAPES.len()]
}

/// A qualitative palette (Okabe and Ito's, yellow left out for contrast on white) for lines
/// that are not strategies (values of another axis).
const QUALITATIVE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
];

/// The colour of the `k`-th line of those that are values of an axis.
pub fn series_color(k: usize) -> RGBColor {
    QUALITATIVE[k % QUALITATIVE.len()]
}

/// Colours of trace segments (timeline).
pub fn segment_color(kind: &str) -> RGBColor {
    match kind {
        "hold" => RGBColor(190, 190, 190),
        "rate_limit" => RGBColor(214, 39, 40),
        "prefill" => RGBColor(31, 119, 180),
        "decode" => RGBColor(44, 160, 44),
        "tool" => RGBColor(240, 190, 60),
        _ => RGBColor(0, 0, 0),
    }
}

/// A sequential colour map (viridis anchors, linearly interpolated), `t` in [0, 1].
pub fn colormap(t: f64) -> RGBColor {
    const ANCHORS: [(u8, u8, u8); 5] =
        [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let x = t * (ANCHORS.len() - 1) as f64;
    let i = (x.floor() as usize).min(ANCHORS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (ANCHORS[i], ANCHORS[i + 1]);
    let lerp = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * f).round() as u8;
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}
