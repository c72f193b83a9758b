//! Direct labels, one placement for every figure: a line's label in a column right of the
//! plot, level with the line's end and pushed apart from its neighbours (`stack`), joined to
//! the end by a leader in the line's colour; a point's label beside it, moved up or down
//! until it overlaps no earlier label and none of the data's boxes (`place_beside`). Small
//! multiples (`grid`) take over when lines are too many to label.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{self, Shape};
use super::{frame, marker, text_width, wrap, DrawResult, Mark};

/// Up to this many lines are labelled directly; more are drawn as small multiples.
pub const DIRECT_LABELS_MAX: usize = 6;
/// The widest line of an end label (pixels); longer labels wrap.
const END_LABEL_MAX_PX: u32 = 300;
/// Pixels left of an end label's text (its leader and marker).
const END_LABEL_TEXT_X: i32 = 40;
/// The height of one line of an end label (pixels).
pub const END_LABEL_LINE_PX: i32 = 26;

/// A line's label: its text (wrapped to the column), colour and marker.
#[derive(Debug, Clone)]
pub struct EndLabel {
    pub lines: Vec<String>,
    pub color: RGBColor,
    pub shape: Shape,
}

/// Wrap each (label, colour, shape) to the label column and split `framed` into the plot and
/// the column right of it, as wide as the widest label (no column without labels).
pub fn end_strip<DB: DrawingBackend>(
    framed: &DrawingArea<DB, Shift>,
    series: &[(String, RGBColor, Shape)],
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>, Vec<EndLabel>) {
    let labels: Vec<EndLabel> = series
        .iter()
        .map(|(text, color, shape)| EndLabel {
            lines: wrap(framed, text, style::LEGEND_PX, END_LABEL_MAX_PX),
            color: *color,
            shape: *shape,
        })
        .collect();
    let strip_w = labels
        .iter()
        .flat_map(|l| l.lines.iter())
        .map(|l| text_width(framed, l, style::LEGEND_PX, false) as i32 + END_LABEL_TEXT_X + 8)
        .max()
        .unwrap_or(0);
    let (area, strip) =
        framed.split_horizontally((framed.dim_in_pixel().0 as i32 - strip_w).max(0));
    (area, strip, labels)
}

/// The top of each label block (`heights` pixels tall) in a column: centred on its line's
/// end (`ends`), pushed down past the block above, then the whole column pulled up if it runs
/// below `rows.1`. Blocks never overlap; each stays within half a line of `rows`.
pub fn stack(ends: &[i32], heights: &[i32], rows: (i32, i32)) -> Vec<i32> {
    let half = END_LABEL_LINE_PX / 2;
    let mut order: Vec<usize> = (0..ends.len()).collect();
    order.sort_by_key(|&i| (ends[i], i));
    let mut tops = vec![0i32; ends.len()];
    let mut next = rows.0 - half;
    for &i in &order {
        tops[i] = (ends[i] - half).max(next);
        next = tops[i] + heights[i];
    }
    if next - (rows.1 + half) > 0 {
        let mut limit = rows.1 + half;
        for &i in order.iter().rev() {
            tops[i] = tops[i].min(limit - heights[i]);
            limit = tops[i];
        }
    }
    tops
}

/// Each label in the column `strip` of `area` (the plot and the column right of it) beside
/// its line's end (`ends`: (x, y) in the backend's pixels), the line's marker before it;
/// labels that would overlap are pushed apart within `rows` (the plot's top and bottom in
/// the backend's pixels; `stack`) and joined to their line's end by a leader in its colour.
pub fn draw_end_labels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    strip: &DrawingArea<DB, Shift>,
    labels: &[EndLabel],
    ends: &[(i32, i32)],
    rows: (i32, i32),
) -> DrawResult {
    let base = area.get_base_pixel();
    let strip_x = strip.get_base_pixel().0 - base.0;
    let ends: Vec<(i32, i32)> = ends.iter().map(|e| (e.0 - base.0, e.1 - base.1)).collect();
    let heights: Vec<i32> =
        labels.iter().map(|l| l.lines.len().max(1) as i32 * END_LABEL_LINE_PX).collect();
    let ys: Vec<i32> = ends.iter().map(|e| e.1).collect();
    let tops = stack(&ys, &heights, (rows.0 - base.1, rows.1 - base.1));
    let font = style::text_style(style::LEGEND_PX, style::INK, (HPos::Left, VPos::Center));
    for (i, l) in labels.iter().enumerate() {
        let y = tops[i] + END_LABEL_LINE_PX / 2;
        let (x10, x16) = (strip_x + 10, strip_x + 16);
        let leader = PathElement::new(vec![ends[i], (x10, y), (x16, y)], l.color.stroke_width(2));
        area.draw(&leader)?;
        marker(area, (strip_x + 27, y), l.shape, l.color, 7)?;
        for (k, line) in l.lines.iter().enumerate() {
            let at = (strip_x + END_LABEL_TEXT_X, y + k as i32 * END_LABEL_LINE_PX);
            area.draw(&Text::new(line.clone(), at, font.clone()))?;
        }
    }
    Ok(())
}

/// A box in pixels: x, y (top), width, height.
pub type PxBox = (i32, i32, i32, i32);

pub fn overlaps(a: PxBox, b: PxBox) -> bool {
    a.0 < b.0 + b.2 && b.0 < a.0 + a.2 && a.1 < b.1 + b.3 && b.1 < a.1 + a.3
}

/// A point's label in the plotting area's pixels: anchor x, centre y, which side of the point
/// it sits on, and the point itself (a leader joins them when the label was moved).
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub text: String,
    pub x: i32,
    pub y: i32,
    pub left: bool,
    pub point: (i32, i32),
}

/// Gap between a point and its label's near edge (pixels).
const BESIDE_GAP: i32 = 14;
/// How far either side of a point its own label's place reaches (pixels): no other label
/// goes there.
const SLOT_PX: i32 = 60;

/// Put each (point, text, text width) label beside its point within a `w` x `h` area, right
/// of it unless that leaves the area, moved up or down in half rows (bounded tries) until it
/// overlaps none of `taken` (the data's boxes and other text), an earlier label, nor the place
/// beside another point; top to bottom, so the labels keep the points' order. Each placed box
/// is added to `taken`.
pub fn place_beside(
    labels: &[((i32, i32), String, i32)],
    row: i32,
    (w, h): (i32, i32),
    taken: &mut Vec<PxBox>,
) -> Vec<Placed> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by_key(|&i| (labels[i].0 .1, labels[i].0 .0));
    let mut out: Vec<Option<Placed>> = vec![None; labels.len()];
    for i in order {
        let ((x, y), text, tw) = (labels[i].0, &labels[i].1, labels[i].2);
        let x0 = |left: bool| if left { x - BESIDE_GAP - tw } else { x + BESIDE_GAP };
        let fits = |left: bool| x0(left) >= 0 && x0(left) + tw <= w - 4;
        let sides: Vec<bool> = [false, true].into_iter().filter(|&l| fits(l)).collect();
        // Beside another point, at its height, a label would read as that point's.
        let theirs = |r: PxBox| {
            labels.iter().enumerate().any(|(j, l)| {
                let (px, py) = l.0;
                j != i && overlaps(r, (px - SLOT_PX, py - row / 2, 2 * SLOT_PX, row))
            })
        };
        let free = |left: bool, yy: i32, taken: &[PxBox]| {
            let r = (x0(left), yy - row / 2, tw, row);
            r.1 >= 0 && r.1 + r.3 <= h && !taken.iter().any(|t| overlaps(r, *t)) && !theirs(r)
        };
        let (left, yy) = (0..24)
            .flat_map(|k| [y + k * row / 2, y - k * row / 2])
            .flat_map(|yy| sides.iter().map(move |&l| (l, yy)))
            .find(|&(l, yy)| free(l, yy, taken))
            .unwrap_or((sides.first() == Some(&true), y));
        taken.push((x0(left), yy - row / 2, tw, row));
        let ax = if left { x - BESIDE_GAP } else { x + BESIDE_GAP };
        out[i] = Some(Placed { text: text.clone(), x: ax, y: yy, left, point: (x, y) });
    }
    out.into_iter().flatten().collect()
}

/// Small multiples: the title, `note` in a column on the right when given, the axis titles
/// said once, and `n` panels in a near-square grid (row by row); with the width each
/// panel's x axis has room for (tick labels of about 90 px).
pub fn grid<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    note: Option<&String>,
    (x_title, y_title): (&str, &str),
    n: usize,
) -> DrawResult<(Vec<DrawingArea<DB, Shift>>, usize)> {
    let note: Vec<(String, Mark)> = note.iter().map(|n| ((*n).clone(), Mark::Note)).collect();
    let area = frame(root, title, &note)?;
    let (w, h) = area.dim_in_pixel();
    let title_font = |rotated: bool| {
        let f = (style::FONT, style::AXIS_TITLE_PX).into_font().color(&style::INK);
        let f = if rotated { f.transform(FontTransform::Rotate270) } else { f };
        f.pos(Pos::new(HPos::Center, VPos::Center))
    };
    area.draw(&Text::new(x_title.to_string(), (w as i32 / 2, h as i32 - 22), title_font(false)))?;
    area.draw(&Text::new(y_title.to_string(), (22, h as i32 / 2), title_font(true)))?;
    let grid = area.margin(0, 50, 50, 0);
    let cols = (n as f64).sqrt().ceil() as usize;
    let fit = (grid.dim_in_pixel().0 as usize / cols / 90).max(2);
    let mut panels = grid.split_evenly((n.div_ceil(cols), cols));
    panels.truncate(n);
    Ok((panels, fit))
}

/// A chart builder for one small multiple, captioned with its series' label.
pub fn panel_builder<'a, 'b, DB: DrawingBackend>(
    panel: &'a DrawingArea<DB, Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(panel);
    b.margin(6)
        .margin_right(24)
        .caption(caption, (style::FONT, style::TICK_PX).into_font().color(&style::INK))
        .x_label_area_size(34)
        .y_label_area_size(64);
    b
}
