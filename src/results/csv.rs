//! The CSV dialect of the result files (README.md, "Result files"): the one quoter (`csv_cell`)
//! and the one splitter (`split_fields`), and a small, strict reader built on them.
//!
//! Fields are separated by `,`, lines by `\n`; a cell holding a comma, a quote or a line break
//! is quoted with `"` (quotes doubled). Files of earlier versions did not quote strategy labels
//! (`wait_first(max_wait=5s,release=timer)`), so a comma inside parentheses does not split a
//! field either. It knows nothing of what the columns mean.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::csv_lines::CsvLines;
use super::error::ResultsError;
use super::schema::{axis_text, fmt_f, STRATEGY_COLUMNS};

/// A CSV cell: quoted (with doubled quotes) when it holds a comma, a quote or a line break, or
/// parentheses that do not pair up (which `split_fields` would otherwise carry into the next
/// cells).
pub fn csv_cell(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) || s.matches('(').count() != s.matches(')').count() {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

/// An axis value as a CSV cell: strings as they are, floats `{:.6}`, the rest as TOML.
pub fn axis_cell(v: &toml::Value) -> String {
    match v {
        toml::Value::Float(x) => fmt_f(*x),
        other => csv_cell(&axis_text(other)).into_owned(),
    }
}

/// A parsed CSV file: the header and the rows, each with its 1-based line number.
#[derive(Debug, Clone)]
pub struct Csv {
    pub path: PathBuf,
    pub header: Vec<String>,
    pub rows: Vec<(usize, Vec<String>)>,
}

/// Split one line into fields: `,` separates, except inside `"..."` or `(...)`.
pub fn split_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    split_into(line, &mut fields, false);
    fields
}

/// `split_fields` with each field trimmed (as `str::trim` trims), into `out`, whose strings
/// are reused: reading a file row by row allocates nothing once its rows' widths are reached
/// (a string per field, and a second for its trimmed copy, were half the CPU of `report`).
pub fn split_trimmed_into(line: &str, out: &mut Vec<String>) {
    split_into(line, out, true);
}

/// The splitter. It walks the bytes: every character it acts on (`"`, `(`, `)`, `,`) is ASCII,
/// so the text between two of them is whole UTF-8 and is copied in one piece.
fn split_into(line: &str, out: &mut Vec<String>, trim: bool) {
    let bytes = line.as_bytes();
    let (mut depth, mut quoted) = (0i32, false);
    let (mut n, mut run, mut i) = (0, 0, 0);
    open_field(out, &mut n); // the field being read is `out[n - 1]`
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                out[n - 1].push_str(&line[run..i]);
                if quoted && bytes.get(i + 1) == Some(&b'"') {
                    out[n - 1].push('"');
                    i += 1;
                } else {
                    quoted = !quoted;
                }
                run = i + 1;
            }
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b',' if !quoted && depth <= 0 => {
                out[n - 1].push_str(&line[run..i]);
                close_field(&mut out[n - 1], trim);
                open_field(out, &mut n);
                run = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out[n - 1].push_str(&line[run..]);
    close_field(&mut out[n - 1], trim);
    out.truncate(n);
}

/// Start field `n` of `out` (reusing the string there, if any) and count it.
fn open_field(out: &mut Vec<String>, n: &mut usize) {
    match out.get_mut(*n) {
        Some(f) => f.clear(),
        None => out.push(String::new()),
    }
    *n += 1;
}

/// End a field: trim it in place if asked.
fn close_field(field: &mut String, trim: bool) {
    // Most fields start and end with a visible ASCII character: nothing to trim, and no need
    // for `trim`'s Unicode tables.
    let visible = |b: Option<&u8>| b.is_some_and(|&b| b > b' ' && b < 0x80);
    if !trim || (visible(field.as_bytes().first()) && visible(field.as_bytes().last())) {
        return;
    }
    let end = field.trim_end().len();
    field.truncate(end);
    let start = field.len() - field.trim_start().len();
    if start > 0 {
        field.drain(..start);
    }
}
impl Csv {
    /// Parse `text` (the contents of `path`): a non-empty header, then rows of the same width.
    pub fn parse(path: &Path, text: &str) -> Result<Csv, ResultsError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let bad = |line: usize, msg: String| ResultsError::Malformed {
            path: path.to_path_buf(),
            line,
            msg,
        };
        let Some((_, head)) = lines.next() else {
            return Err(bad(1, "the file is empty (expected a header row)".into()));
        };
        let mut header = Vec::new();
        split_trimmed_into(head, &mut header);
        let mut rows = Vec::new();
        for (i, line) in lines {
            let mut fields = Vec::with_capacity(header.len());
            split_trimmed_into(line.trim_end_matches('\r'), &mut fields);
            if fields.len() != header.len() {
                let msg = format!(
                    "{} fields, but the header has {} columns: `{line}`",
                    fields.len(),
                    header.len()
                );
                return Err(bad(i + 1, msg));
            }
            rows.push((i + 1, fields));
        }
        Ok(Csv { path: path.to_path_buf(), header, rows })
    }

    /// The index of column `name`, or an error naming the file and the column.
    pub fn column(&self, name: &str) -> Result<usize, ResultsError> {
        self.header.iter().position(|h| h == name).ok_or_else(|| ResultsError::Malformed {
            path: self.path.clone(),
            line: 1,
            msg: format!("missing column `{name}` in the header"),
        })
    }

    /// Parse field `col` of the row on `line` as a number of a result file: finite, at most
    /// `MAX_RESULT_ABS` in magnitude, and not negative in a spread column (`*_sd`, `*_ci95`).
    /// Anything else is not what prefixsim writes: an error naming file, line, column, value.
    pub fn parse_number(
        &self,
        line: usize,
        fields: &[String],
        col: usize,
    ) -> Result<f64, ResultsError> {
        let x: f64 = self.parse_field(line, fields, col)?;
        let name = &self.header[col];
        let why = check_number(name, x);
        why.map_or(Ok(x), |why| {
            Err(ResultsError::Malformed {
                path: self.path.clone(),
                line,
                msg: format!("column `{name}`: `{}` {why}", fields[col]),
            })
        })
    }

    /// Parse field `col` of the row on `line` as `T`, naming file, line, column and value.
    pub fn parse_field<T: std::str::FromStr>(
        &self,
        line: usize,
        fields: &[String],
        col: usize,
    ) -> Result<T, ResultsError> {
        let text = &fields[col];
        text.parse().map_err(|_| ResultsError::Malformed {
            path: self.path.clone(),
            line,
            msg: format!("column `{}`: `{text}` is not a valid number", self.header[col]),
        })
    }
}

/// Why `summary_long` stopped: the summary did not read, or the output did not take it.
#[derive(Debug, thiserror::Error)]
pub enum LongError {
    #[error(transparent)]
    Read(#[from] ResultsError),
    #[error("{0}")]
    Write(#[from] std::io::Error),
}

/// `summary.csv` in long form, for pandas, R and spreadsheets: one row per (point, strategy,
/// metric), columns `point,<axis columns>,strategy,<STRATEGY_COLUMNS>,metric,value`. The
/// metrics are `replications` and every value column, in the file's order; every cell is
/// copied as written (no number is reformatted), so each value cell of the wide file is one
/// row of the long one. Written to `out` as `summary` (its header read) streams past, a row of
/// the wide file at a time (a sweep's summary is ~70 rows of the long file a row); returns
/// the rows written.
pub fn summary_long(summary: &mut CsvLines, out: &mut impl Write) -> Result<usize, LongError> {
    let header = summary.csv.header.clone();
    let reps = summary.csv.column("replications")?;
    let n = STRATEGY_COLUMNS.len();
    let has_strategy_columns =
        header.get(reps + 1..reps + 1 + n) == Some(&STRATEGY_COLUMNS.map(String::from)[..]);
    let id_cols: Vec<usize> =
        (0..reps).chain(if has_strategy_columns { reps + 1..reps + 1 + n } else { 0..0 }).collect();
    let metric_cols: Vec<usize> = (reps..header.len()).filter(|c| !id_cols.contains(c)).collect();
    let line = |cells: &mut dyn Iterator<Item = &String>| {
        cells.map(|c| csv_cell(c).into_owned()).collect::<Vec<_>>().join(",")
    };
    writeln!(out, "{},metric,value", line(&mut id_cols.iter().map(|&c| &header[c])))?;
    let names: Vec<String> = header.iter().map(|h| csv_cell(h).into_owned()).collect();
    let mut rows = 0;
    while summary.next_row()?.is_some() {
        let f = summary.row();
        let id = line(&mut id_cols.iter().map(|&c| &f[c]));
        for &c in &metric_cols {
            writeln!(out, "{id},{},{}", names[c], csv_cell(&f[c]))?;
            rows += 1;
        }
    }
    Ok(rows)
}

/// Why `x`, the value of a field called `name`, cannot be in a result file (`None`: it can).
pub fn check_number(name: &str, x: f64) -> Option<String> {
    use crate::limits::MAX_RESULT_ABS;
    if !x.is_finite() {
        Some("is not a finite number".into())
    } else if x.abs() > MAX_RESULT_ABS {
        Some(format!("is beyond {MAX_RESULT_ABS:e} in magnitude (not a value prefixsim writes)"))
    } else if x < 0.0 && (name.ends_with("_sd") || name.ends_with("ci95")) {
        Some("is negative (a spread or confidence interval cannot be)".into())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_inside_parentheses_and_quotes_do_not_split() {
        assert_eq!(
            split_fields("1,wait_first(max_wait=5s,release=timer),2"),
            ["1", "wait_first(max_wait=5s,release=timer)", "2"]
        );
        assert_eq!(split_fields("\"a,b\",\"c\"\"d\""), ["a,b", "c\"d"]);
    }

    /// The splitter as first written, a character at a time with a string per field: the
    /// definition the byte-walking one must meet.
    fn split_reference(line: &str) -> Vec<String> {
        let mut fields = Vec::new();
        let mut field = String::new();
        let (mut depth, mut quoted) = (0i32, false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                '(' if !quoted => {
                    depth += 1;
                    field.push(c);
                }
                ')' if !quoted => {
                    depth -= 1;
                    field.push(c);
                }
                ',' if !quoted && depth <= 0 => fields.push(std::mem::take(&mut field)),
                _ => field.push(c),
            }
        }
        fields.push(field);
        fields
    }

    proptest::proptest! {
        /// Any line, over the characters the splitter acts on, spaces and a non-ASCII letter:
        /// the same fields as the reference, and trimmed into a reused vector (wider or
        /// narrower than the line) the same fields trimmed.
        #[test]
        fn the_splitter_is_the_reference(
            line in "[a\",() \té]{0,24}",
            stale in proptest::collection::vec("[a ]{0,3}", 0..12),
        ) {
            let want = split_reference(&line);
            proptest::prop_assert_eq!(split_fields(&line), want.clone());
            let mut out = stale;
            split_trimmed_into(&line, &mut out);
            let trimmed: Vec<String> = want.iter().map(|f| f.trim().to_string()).collect();
            proptest::prop_assert_eq!(out, trimmed);
        }
    }

    #[test]
    fn cells_that_would_not_split_back_are_quoted() {
        assert_eq!(csv_cell("eager"), "eager");
        assert_eq!(csv_cell("wait_first(max_wait=5s)"), "wait_first(max_wait=5s)");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell("x("), "\"x(\"");
        let line = format!("{},{},1", csv_cell("x("), csv_cell("a,b"));
        assert_eq!(split_fields(&line), ["x(", "a,b", "1"]);
    }

    #[test]
    fn a_short_row_names_the_line() {
        let e = Csv::parse(Path::new("x.csv"), "a,b\n1,2\n3\n").unwrap_err();
        assert!(e.to_string().contains("x.csv:3"), "{e}");
    }
}
