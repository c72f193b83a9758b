//! Lines of more points than a plot has pixel columns, reduced to what can be seen of them:
//! per column (or per part of the x axis, as a line is built) the lowest and highest mean and
//! the line's ends; and the x axis of such a figure cut to the values its lines reach. What a
//! figure holds and draws is bounded by its width, not by the sweep's points.

use super::axis::XAxis;
use super::style;

/// A line of more points than this is reduced, once built, to the lowest and highest mean of
/// each of this many equal parts of the x axis: finer than the pixel columns of any plot (the
/// figure is this wide), so what is held and drawn is bounded by the width, not the points.
pub(crate) const X_PARTS: usize = style::WIDTH as usize;

/// The x axis as a figure drawn to scale needs it once its lines are built: the lowest and
/// highest positions (the scale's range) and the first of each position `reached` (the
/// caption names the value at the last), with their labels, in axis order. An axis of words
/// is drawn a row per value and kept whole; so is one no longer than `X_PARTS`.
pub(crate) fn drawn_axis(x: XAxis, reached: impl Iterator<Item = f64>) -> XAxis {
    if x.words || x.positions.len() <= X_PARTS {
        return x;
    }
    let mut reached: Vec<f64> = reached.collect();
    reached.sort_by(f64::total_cmp);
    reached.dedup();
    let lowest = (0..x.positions.len()).min_by(|&i, &j| x.positions[i].total_cmp(&x.positions[j]));
    let highest = (0..x.positions.len()).max_by(|&i, &j| x.positions[i].total_cmp(&x.positions[j]));
    let mut seen: Vec<bool> = vec![false; reached.len()];
    let keep: Vec<usize> = (0..x.positions.len())
        .filter(|&i| {
            let first_reached = match reached.binary_search_by(|p| p.total_cmp(&x.positions[i])) {
                Ok(k) if !seen[k] => {
                    seen[k] = true;
                    true
                }
                _ => false,
            };
            first_reached || Some(i) == lowest || Some(i) == highest
        })
        .collect();
    XAxis {
        positions: keep.iter().map(|&i| x.positions[i]).collect(),
        labels: keep.iter().map(|&i| x.labels[i].clone()).collect(),
        ..x
    }
}

/// A point of a line as it is built: (x position, mean, ci95 half-width).
pub(crate) type Seen = (f64, f64, f64);

/// The points of one line of a metric figure, as the summary streams past: all of them up to
/// `X_PARTS`, past that reduced per part of the x axis (`per_column`) whenever the buffer
/// fills, so a line holds at most a few times `X_PARTS` points whatever the sweep's size.
/// Reducing in batches keeps what one reduction of the whole line keeps: a part's lowest
/// and highest mean (first and last of ties, in x then walk order) are the lowest and highest
/// of the batch that holds them, and so are the line's ends. The walk order of points of one
/// x is kept by stable sorts: a reduced batch (sorted, earlier) comes before the points after.
#[derive(Default)]
pub(crate) struct Built {
    points: Vec<Seen>,
    pub(crate) count: usize,
}

impl Built {
    /// What the buffer holds before it is reduced: a reduction keeps up to two points a part
    /// and the ends, so each frees room for at least `X_PARTS` more.
    const FULL: usize = 3 * X_PARTS + 2;

    pub(crate) fn push(&mut self, p: Seen, span: (f64, f64)) {
        if self.points.capacity() == 0 {
            self.points.reserve_exact(Built::FULL);
        }
        self.points.push(p);
        self.count += 1;
        if self.points.len() >= Built::FULL {
            self.reduce(span);
        }
    }

    fn reduce(&mut self, span: (f64, f64)) {
        self.points.sort_by(|p, q| p.0.total_cmp(&q.0));
        let kept = per_column(&self.points, |px| x_part(span, px));
        self.points.clear();
        self.points.extend(kept);
    }

    /// The line, ascending in x: every point, or more than `X_PARTS` reduced per part.
    pub(crate) fn finish(mut self, span: (f64, f64)) -> Vec<Seen> {
        if self.count > X_PARTS {
            self.reduce(span);
        } else {
            self.points.sort_by(|p, q| p.0.total_cmp(&q.0));
        }
        // Held until every figure is drawn: no spare capacity.
        self.points.into_boxed_slice().into()
    }
}

/// Which of `X_PARTS` equal parts of the span `lo..=hi` holds `x`.
fn x_part((lo, hi): (f64, f64), x: f64) -> i64 {
    let at = if hi > lo { (x - lo) / (hi - lo) } else { 0.0 };
    (at * (X_PARTS - 1) as f64).round() as i64
}

/// `points` (ascending in x) reduced to what can be seen of them: in each run of points in
/// one `column`, the point of the lowest mean and that of the highest, in x order (one if it
/// is both), and the first and last points. The line through them reaches every column's
/// extremes and both ends, as the full line would.
pub(crate) fn per_column(
    points: &[(f64, f64, f64)],
    column: impl Fn(f64) -> i64,
) -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < points.len() {
        let c = column(points[start].0);
        let len = points[start..].iter().take_while(|p| column(p.0) == c).count();
        let run = &points[start..start + len];
        let lowest = (0..len).min_by(|&i, &j| run[i].1.total_cmp(&run[j].1)).unwrap_or(0);
        let highest = (0..len).max_by(|&i, &j| run[i].1.total_cmp(&run[j].1)).unwrap_or(0);
        out.push(run[lowest.min(highest)]);
        if lowest != highest {
            out.push(run[lowest.max(highest)]);
        }
        start += len;
    }
    if let (Some(&first), Some(&last)) = (points.first(), points.last()) {
        if out.first() != Some(&first) {
            out.insert(0, first);
        }
        if out.last() != Some(&last) {
            out.push(last);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reduced_per_column_keeps_each_columns_lowest_and_highest_and_both_ends() {
        let points: Vec<(f64, f64, f64)> =
            (0..10).map(|i| (i as f64, [3., 1., 5., 2., 9., 0., 4., 4., 7., 6.][i], 0.5)).collect();
        // Columns of 3 points: {0,1,2}, {3,4,5}, {6,7,8}, {9}.
        let got = per_column(&points, |x| (x / 3.0).floor() as i64);
        let xs: Vec<f64> = got.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 8.0, 9.0]);
        assert!(got.iter().all(|p| points.contains(p)), "only points of the line: {got:?}");
    }

    /// A long line with ties in x and in mean, out of x order, as a sweep's rows arrive.
    fn long_line(n: usize) -> Vec<(f64, f64, f64)> {
        (0..n)
            .map(|i| {
                let x = ((i * 7919) % (n / 3)) as f64;
                let mean = ((i * 104_729) % 97) as f64 / 7.0;
                (x, mean, (i % 5) as f64)
            })
            .collect()
    }

    #[test]
    fn a_line_reduced_as_it_is_built_is_the_line_reduced_whole() {
        for n in [10, X_PARTS, X_PARTS + 1, 5 * Built::FULL + 17, 40_000] {
            let line = long_line(n);
            let span = crate::plot::scale::extent(line.iter().map(|p| p.0));
            let mut built = Built::default();
            for &p in &line {
                built.push(p, span);
            }
            assert!(built.points.len() < Built::FULL, "bounded by the width, not the points");
            let mut whole = line.clone();
            whole.sort_by(|p, q| p.0.total_cmp(&q.0));
            if whole.len() > X_PARTS {
                whole = per_column(&whole, |px| x_part(span, px));
            }
            assert_eq!(built.finish(span), whole, "{n} points");
        }
    }

    #[test]
    fn a_line_of_one_point_a_column_is_kept_whole() {
        let points: Vec<(f64, f64, f64)> = (0..5).map(|i| (i as f64, i as f64, 0.0)).collect();
        assert_eq!(per_column(&points, |x| x as i64), points);
    }
}
