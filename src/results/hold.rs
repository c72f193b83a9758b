//! A sweep's hold answers (`hold.csv`): the row type, its writer's lines and the strict reader.

use csv::StringRecord;

use super::error::ResultsError;
use super::schema::{axis_text, fmt_f, is_seconds_column, Label};
use super::summary::Summary;
use super::table::{csv_line, Csv, CsvLines};

/// A sweep's hold answers: `hold.csv`, one row per point whose experiment asks for one
/// (`[report] answer = "hold_cap"` with a `wait_first`), in point order; no file when no
/// point does. Columns: `point`, the axis columns of summary.csv, then `HOLD_COLUMNS`.
pub const HOLD_CSV: &str = "hold.csv";

/// The columns of hold.csv after the axis columns (docs/results.md): the fields of
/// `sweep::hold::HoldAnswer`, the interval split in two, an empty cell where it has none.
pub const HOLD_COLUMNS: [&str; 11] = [
    "strategy",
    "cap_s",
    "cap_lo_s",
    "cap_hi_s",
    "p_after_cap",
    "p_after_cap_draws",
    "ttft_p50_s",
    "ttft_p95_s",
    "ttft_p99_s",
    "draws",
    "knife_edge",
];

/// One point's hold answer as hold.csv holds it (`sweep::hold::HoldAnswer`, which this module
/// cannot name: `results` knows nothing of how answers are found).
#[derive(Debug, Clone, PartialEq)]
pub struct HoldRow {
    pub point: u32,
    /// The `wait_first` whose cap it is (a label of the experiment's strategies).
    pub strategy: Label,
    /// The cap to use, seconds.
    pub cap_s: f64,
    /// The smallest and largest cap recommended over the calibration's refits: both or none
    /// (no refits, or some refit has no cap meeting the objective).
    pub cap_range_s: Option<[f64; 2]>,
    /// Share (0-1) of replications whose first token came after the cap, at the point fit.
    pub p_after_cap: f64,
    /// The same share pooled over the refits (none without refits).
    pub p_after_cap_draws: Option<f64>,
    /// The first writer's time to first token from the hold's start, at the point fit.
    pub ttft_p50_s: f64,
    pub ttft_p95_s: f64,
    pub ttft_p99_s: f64,
    /// Refits the interval comes from (0: none).
    pub draws: u32,
    pub knife_edge: bool,
}

/// The header line of hold.csv for these axis columns (`results::axis_columns`), without
/// its `\n`.
pub fn hold_header(axis_columns: &[String]) -> String {
    csv_line(
        ["point"].into_iter().chain(axis_columns.iter().map(String::as_str)).chain(HOLD_COLUMNS),
    )
}

/// The line of `row` (without its `\n`); `axis_cells` are the point's axis cells in
/// `axis_columns` order (`results::axis_cells`), as runs.csv writes them.
pub fn hold_line(row: &HoldRow, axis_cells: &[toml::Value]) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), fmt_f);
    let mut cells = vec![row.point.to_string()];
    cells.extend(axis_cells.iter().map(axis_text));
    cells.extend([
        row.strategy.to_string(),
        fmt_f(row.cap_s),
        opt(row.cap_range_s.map(|r| r[0])),
        opt(row.cap_range_s.map(|r| r[1])),
        fmt_f(row.p_after_cap),
        opt(row.p_after_cap_draws),
        fmt_f(row.ttft_p50_s),
        fmt_f(row.ttft_p95_s),
        fmt_f(row.ttft_p99_s),
        row.draws.to_string(),
        row.knife_edge.to_string(),
    ]);
    csv_line(cells)
}

/// Read hold.csv (its header read), checking every row: its header is `point`, the axis
/// columns of `summary` (when there is one), then `HOLD_COLUMNS`; points ascend, once each,
/// and are points of the summary; shares are 0-1, durations and draws not negative, the
/// interval both-or-neither and ordered. One row a point in memory (~100 bytes; labels
/// shared), like the summary's index. Errors name the file and line.
pub(super) fn read_hold(
    lines: &mut CsvLines,
    summary: &Summary,
) -> Result<Vec<HoldRow>, ResultsError> {
    let first = hold_columns_at(&lines.csv, summary)?;
    let points = summary.points();
    let mut rows: Vec<HoldRow> = Vec::new();
    while let Some(line) = lines.next_row()? {
        let row = hold_row(&lines.csv, line, lines.row(), first, rows.last())?;
        if !summary.is_empty() && points.binary_search(&row.point).is_err() {
            let msg = format!("point {} is not a point of summary.csv", row.point);
            return Err(malformed(&lines.csv, line, msg));
        }
        check_hold_row(&lines.csv, line, &row)?;
        rows.push(row);
    }
    rows.shrink_to_fit();
    Ok(rows)
}

fn malformed(csv: &Csv, line: usize, msg: String) -> ResultsError {
    ResultsError::malformed(&csv.path, line, msg)
}

/// Where `HOLD_COLUMNS` start in the header of hold.csv, whose axis columns must be those of
/// `summary` (when there is one).
fn hold_columns_at(csv: &Csv, summary: &Summary) -> Result<usize, ResultsError> {
    let n = csv.header.len();
    let first = n.checked_sub(HOLD_COLUMNS.len()).filter(|&f| f >= 1);
    let shape_ok = first.is_some_and(|f| {
        csv.header[0] == "point" && csv.header[f..].iter().zip(HOLD_COLUMNS).all(|(a, b)| a == b)
    });
    let Some(first) = first.filter(|_| shape_ok) else {
        let want =
            format!("the header must be `point,<axis columns...>,{}`", HOLD_COLUMNS.join(","));
        return Err(malformed(csv, 1, want));
    };
    let axes = &csv.header[1..first];
    let keys: Vec<&str> = (0..axes.len())
        .filter(|&i| !is_seconds_column(axes, i))
        .map(|i| axes[i].as_str())
        .collect();
    if !summary.is_empty()
        && keys.iter().copied().ne(summary.axis_keys().iter().map(String::as_str))
    {
        let msg = format!(
            "axis columns `{}` are not summary.csv's (`{}`)",
            keys.join(","),
            summary.axis_keys().join(",")
        );
        return Err(malformed(csv, 1, msg));
    }
    Ok(first)
}

/// The row `f` on `line`, its hold columns from `first`, after the row `last` (points ascend;
/// a label like the last row's is shared with it).
fn hold_row(
    csv: &Csv,
    line: usize,
    f: &StringRecord,
    first: usize,
    last: Option<&HoldRow>,
) -> Result<HoldRow, ResultsError> {
    let point: u32 = csv.parse_field(line, f, 0)?;
    if let Some(last) = last.map(|r| r.point).filter(|&l| point <= l) {
        let msg = format!("point {point} after point {last}: one row a point, in point order");
        return Err(malformed(csv, line, msg));
    }
    let num = |i: usize| csv.parse_number(line, f, first + i);
    let opt = |i: usize| (!f[first + i].is_empty()).then(|| num(i)).transpose();
    let text = &f[first];
    let strategy = match last {
        Some(r) if &*r.strategy == text => r.strategy.clone(),
        _ => Label::from(text),
    };
    let cap_range_s = match (opt(2)?, opt(3)?) {
        (Some(lo), Some(hi)) if lo <= hi => Some([lo, hi]),
        (None, None) => None,
        (lo, hi) => {
            let msg = format!(
                "cap_lo_s `{}` and cap_hi_s `{}`: both or neither, the first not above the second",
                lo.map_or(String::new(), fmt_f),
                hi.map_or(String::new(), fmt_f)
            );
            return Err(malformed(csv, line, msg));
        }
    };
    let Ok(knife_edge) = f[first + 10].parse() else {
        let msg = format!("column `knife_edge`: `{}` is not true or false", &f[first + 10]);
        return Err(malformed(csv, line, msg));
    };
    Ok(HoldRow {
        point,
        strategy,
        cap_s: num(1)?,
        cap_range_s,
        p_after_cap: num(4)?,
        p_after_cap_draws: opt(5)?,
        ttft_p50_s: num(6)?,
        ttft_p95_s: num(7)?,
        ttft_p99_s: num(8)?,
        draws: csv.parse_field(line, f, first + 9)?,
        knife_edge,
    })
}

/// Durations are not negative and shares are 0-1.
fn check_hold_row(csv: &Csv, line: usize, row: &HoldRow) -> Result<(), ResultsError> {
    let seconds = [row.cap_s, row.ttft_p50_s, row.ttft_p95_s, row.ttft_p99_s];
    let shares = [Some(row.p_after_cap), row.p_after_cap_draws];
    if let Some(x) = seconds.iter().chain(row.cap_range_s.iter().flatten()).find(|x| **x < 0.0) {
        let msg = format!("a duration of {} s: durations are not negative", fmt_f(*x));
        return Err(malformed(csv, line, msg));
    }
    if let Some(x) = shares.into_iter().flatten().find(|x| !(0.0..=1.0).contains(x)) {
        return Err(malformed(csv, line, format!("a share of {}: shares are 0-1", fmt_f(x))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(point: u32) -> HoldRow {
        HoldRow {
            point,
            strategy: "wait_first(max_wait=1s,release=timer)".into(),
            cap_s: 2.75,
            cap_range_s: Some([2.5, 3.125]),
            p_after_cap: 0.02,
            p_after_cap_draws: Some(0.0625),
            ttft_p50_s: 1.5,
            ttft_p95_s: 2.5,
            ttft_p99_s: 3.0,
            draws: 20,
            knife_edge: true,
        }
    }

    fn read(text: &str) -> Result<Vec<HoldRow>, ResultsError> {
        let path = crate::results::test_csv("hold", "hold", text);
        read_hold(&mut CsvLines::open(&path).unwrap().unwrap(), &Summary::default())
    }

    #[test]
    fn hold_csv_reads_back_what_is_written_and_names_the_line_of_a_bad_row() {
        let cells = [toml::Value::String("5m".into()), toml::Value::Integer(300)];
        let head = hold_header(&["cache.ttl".into(), "cache.ttl_s".into()]);
        let none = HoldRow { cap_range_s: None, p_after_cap_draws: None, draws: 0, ..row(4) };
        let text =
            format!("{head}\n{}\n{}\n", hold_line(&row(1), &cells), hold_line(&none, &cells));
        assert!(text.contains("1,5m,300,\"wait_first(max_wait=1s,release=timer)\",2.750000,"));
        assert!(text.contains(",2.750000,,,0.020000,,1.500000,"), "{text}");
        assert_eq!(read(&text).unwrap(), vec![row(1), none]);
        let bad = |from: &str, to: &str, want: &str| {
            let e = read(&text.replacen(from, to, 1)).unwrap_err().to_string();
            assert!(e.contains("hold.csv:") && e.contains(want), "{from} -> {to}: {e}");
        };
        bad(",true\n", ",yes\n", ":2: column `knife_edge`: `yes` is not true or false");
        bad("\n4,", "\n1,", ":3: point 1 after point 1");
        bad(",0.020000,", ",1.500000,", ":2: a share of 1.500000");
        bad("2.500000,3.125000", "2.500000,", ":2: cap_lo_s `2.500000` and cap_hi_s ``");
        bad("2.500000,3.125000", "3.500000,3.125000", ":2: cap_lo_s");
        bad(",2.750000,2.500000", ",-1.000000,2.500000", ":2: a duration of -1.000000 s");
        bad(",20,true", ",x,true", ":2: column `draws`: `x` is not a valid number");
        bad(",2.750000,2.500000", ",inf,2.500000", "column `cap_s`: `inf` is not a finite number");
        bad("knife_edge", "knife", ":1: the header must be");
    }
}
