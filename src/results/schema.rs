//! The schema of the result files (docs/results.md): one definition of each record,
//! used by the writers (`write.rs`) and the reader (`read.rs`) alike, and the names that tie
//! files together (strategy slugs in histogram tags, the segment kinds of `trace.csv`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::aggregate::{Aggregate, PERCENTILES};
use crate::metrics::{LATENCY_NAMES, SCALAR_NAMES};

/// `--shard K/N`: the points whose index mod N == K (K is 0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// One swept axis as `manifest.json` lists it: the key and its values in point order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestAxis {
    pub key: String,
    #[serde(default)]
    pub values: Vec<serde_json::Value>,
}

/// `manifest.json` of a run or a sweep (or one shard of it): its fields in the order written.
/// The writers fill every field; the reader also accepts a manifest without the optional ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub prefixsim_version: String,
    /// `"run"` or `"sweep"`.
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub replications: Option<u32>,
    pub strategies: Vec<String>,
    #[serde(default)]
    pub axes: Vec<ManifestAxis>,
    #[serde(default)]
    pub points: Option<u64>,
    #[serde(default)]
    pub shard: Option<Shard>,
    /// SHA-256 of `experiment`, hex.
    #[serde(default)]
    pub content_hash: Option<String>,
    /// The resolved experiment's canonical TOML (a sweep's base experiment and its `[sweep]`).
    #[serde(default)]
    pub experiment: Option<String>,
}

/// One row of `summary.csv`: a (point, strategy) aggregated over replications. Read back, a
/// sweep's rows share their texts: every row of a strategy holds one `Label`, every row of a
/// point one `AxisValues`, so a row is 64 bytes and its numbers (`Values`), whatever its label.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    pub point: u32,
    /// The value of each axis at this point, as the cell's text.
    pub axis_values: AxisValues,
    pub strategy: Label,
    pub replications: u32,
    /// By column name (`summary_columns`): `<metric>_mean`, `_sd`, `_ci95`,
    /// `<latency>_pooled_p99_s`, ...
    pub values: Values,
}

/// A strategy label shared by the rows that carry it (a pointer a row, not a string).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(Arc<str>);

impl std::ops::Deref for Label {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// By its text, as `Ord` compares it: a set of labels is looked up by `&str`.
impl std::borrow::Borrow<str> for Label {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Label {
    fn from(s: &str) -> Label {
        Label(s.into())
    }
}

impl From<String> for Label {
    fn from(s: String) -> Label {
        Label(s.into())
    }
}

impl Label {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl PartialEq<&str> for Label {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Label {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl std::fmt::Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The axis values of a point as their cells' text, shared by the rows of that point.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct AxisValues(Arc<[String]>);

impl std::ops::Deref for AxisValues {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl FromIterator<String> for AxisValues {
    fn from_iter<I: IntoIterator<Item = String>>(values: I) -> AxisValues {
        AxisValues(values.into_iter().collect())
    }
}

impl PartialEq<Vec<String>> for AxisValues {
    fn eq(&self, other: &Vec<String>) -> bool {
        *self.0 == **other
    }
}

impl std::fmt::Debug for AxisValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

/// The numbers of one row by column name. The names live once per file (`Columns`, shared by
/// its rows), the row holds 8 bytes a number: a sweep's summary.csv has 600,000 rows of ~100
/// numbers at 100,000 points, and a map of names per row would take 10x the memory.
#[derive(Clone, Default)]
pub struct Values {
    columns: Columns,
    /// Boxed, not a `Vec`: no capacity to carry (8 bytes a row).
    numbers: Box<[f64]>,
}

/// Column name -> position in a row's numbers, shared by every row of a file.
pub type Columns = Arc<BTreeMap<String, usize>>;

/// The `Columns` of `names`, in order (of a name given twice, the last).
pub fn column_index(names: &[String]) -> Columns {
    Arc::new(names.iter().enumerate().map(|(i, n)| (n.clone(), i)).collect())
}

/// The columns of `summary.csv` that `plot` and `report` read, and all the reader keeps of a
/// row's ~70 numbers (a sweep's summary would otherwise be most of the memory of reading it
/// back). Asking a row read from a file for another of its columns is a bug of the caller.
pub const SUMMARY_COLUMNS_READ: [&str; 15] = [
    "cost_usd_mean",
    "cost_usd_ci95",
    "hit_rate_mean",
    "hit_rate_ci95",
    "makespan_s_mean",
    "makespan_s_ci95",
    "launch_wait_p99_s_mean",
    "launch_wait_p99_s_ci95",
    "throughput_agents_per_min_mean",
    "throughput_agents_per_min_ci95",
    "redundant_writes_mean",
    "redundant_writes_ci95",
    "launch_wait_pooled_p50_s",
    "launch_wait_pooled_p99_s",
    "completion_pooled_p99_s",
];

/// Where `Columns` puts a column of the file that the reader does not keep.
const NOT_KEPT: usize = usize::MAX;

/// The `Columns` of a file whose value columns are `names`, of which a row keeps those in
/// `kept` (of a name given twice, the last), and which of `names` those are.
pub fn kept_column_index(names: &[String], kept: &[&str]) -> (Columns, Vec<bool>) {
    let keep: Vec<bool> = (0..names.len())
        .map(|i| {
            kept.contains(&names[i].as_str())
                && names.iter().rposition(|n| *n == names[i]) == Some(i)
        })
        .collect();
    let mut columns = BTreeMap::new();
    let mut next = 0;
    for (name, &k) in names.iter().zip(&keep) {
        columns.insert(name.clone(), if k { next } else { NOT_KEPT });
        next += k as usize;
    }
    (Arc::new(columns), keep)
}

impl Values {
    /// `numbers[i]` is the value of the column `columns` maps to `i`.
    pub fn new(columns: Columns, numbers: Vec<f64>) -> Values {
        Values { columns, numbers: numbers.into_boxed_slice() }
    }

    /// The value of `column`; `None` if the row has no such column. Panics on a column of
    /// its file that the reader did not keep (`SUMMARY_COLUMNS_READ`).
    pub fn get(&self, column: &str) -> Option<&f64> {
        match *self.columns.get(column)? {
            NOT_KEPT => panic!("column `{column}` is not kept: add it to SUMMARY_COLUMNS_READ"),
            i => self.numbers.get(i),
        }
    }

    /// (name, value) in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, f64)> + '_ {
        self.columns.iter().filter_map(|(n, &i)| Some((n, *self.numbers.get(i)?)))
    }
}

impl FromIterator<(String, f64)> for Values {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(pairs: I) -> Values {
        let (names, numbers): (Vec<String>, Vec<f64>) = pairs.into_iter().unzip();
        Values { columns: column_index(&names), numbers: numbers.into_boxed_slice() }
    }
}

/// Equal when they map the same names to the same numbers (as maps are).
impl PartialEq for Values {
    fn eq(&self, other: &Values) -> bool {
        self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl SummaryRow {
    /// The row of `strategy` at `point` whose axes take `axis_values`, from its aggregate.
    pub fn from_aggregate(
        point: u32,
        axis_values: &[toml::Value],
        strategy: &str,
        agg: &Aggregate,
    ) -> SummaryRow {
        let stats = agg.stats().into_iter().flat_map(|st| [st.mean, st.sd, st.ci95]);
        let ladders = (0..LATENCY_NAMES.len()).flat_map(|i| {
            let [p50, p90, p99, p999, max] = agg.ladder_s(i);
            [p50, p90, p99, p999, agg.min_s(i), max]
        });
        SummaryRow {
            point,
            axis_values: axis_values.iter().map(axis_text).collect(),
            strategy: strategy.into(),
            replications: agg.replications() as u32,
            values: Values::new(summary_column_index(), stats.chain(ladders).collect()),
        }
    }

    pub fn get(&self, column: &str) -> Option<f64> {
        self.values.get(column).copied()
    }
}

/// The value columns of `summary.csv`, in order: `<m>_mean,<m>_sd,<m>_ci95` for each of
/// `SCALAR_NAMES`, then `<l>_pooled_p50_s ... <l>_pooled_p999_s,<l>_min_s,<l>_max_s` for each of
/// `LATENCY_NAMES`.
///
/// Two different p99s, two names: `launch_wait_p99_s_mean` is the mean over replications of
/// each replication's own p99 (a scalar of `runs.csv`); `launch_wait_pooled_p99_s` is the p99
/// of every agent of every replication together (the merged histogram).
pub fn summary_columns() -> Vec<String> {
    let mut cols = Vec::new();
    for m in SCALAR_NAMES {
        cols.extend([format!("{m}_mean"), format!("{m}_sd"), format!("{m}_ci95")]);
    }
    for l in LATENCY_NAMES {
        cols.extend(PERCENTILES.iter().map(|(_, p)| pooled_column(l, p)));
        cols.extend([format!("{l}_min_s"), format!("{l}_max_s")]);
    }
    cols
}

/// `column_index(&summary_columns())`, made once.
fn summary_column_index() -> Columns {
    static INDEX: OnceLock<Columns> = OnceLock::new();
    INDEX.get_or_init(|| column_index(&summary_columns())).clone()
}

/// The column of percentile `p` (`p99`) of latency `l` pooled over all agents and replications.
pub fn pooled_column(l: &str, p: &str) -> String {
    format!("{l}_pooled_{p}_s")
}

/// The strategy's family and parameters as columns of their own (after `replications` in
/// `summary.csv`, after `strategy` in `runs.csv`), so that cost plots against the cap without
/// parsing `wait_first(max_wait=10s)`. A parameter the family does not have is an empty cell.
pub const STRATEGY_COLUMNS: [&str; 4] = ["strategy_family", "max_wait_s", "release", "interval_s"];

/// The cells of `STRATEGY_COLUMNS` for `label`: durations in seconds (`seconds_text`),
/// `release` `on_ready` or `timer` for `wait_first`. A swept label (`max_wait=x`) leaves its
/// cell empty.
pub fn strategy_cells(label: &str) -> [String; 4] {
    let (family, params) = parse_label(label);
    let param = |k: &str| params.iter().find(|p| p.0 == k).map(|p| p.1.as_str());
    let secs = |k: &str| {
        param(k)
            .and_then(|v| crate::time::parse_duration_us(v).ok())
            .map_or(String::new(), seconds_text)
    };
    let release = match family.as_str() {
        "wait_first" => param("release").unwrap_or("on_ready").to_string(),
        _ => String::new(),
    };
    [family, secs("max_wait"), release, secs("interval")]
}

/// A duration in seconds as a result file writes it: whole seconds as an integer (`300`), the
/// rest `{:.6}` (`1.500000`).
pub fn seconds_text(us: u64) -> String {
    let us_per_s = crate::time::US_PER_S;
    if us.is_multiple_of(us_per_s) {
        (us / us_per_s).to_string()
    } else {
        fmt_f(crate::time::secs(us))
    }
}

/// A duration-valued sweep axis (every value a duration such as `"5m"` or `"500ms"`) has a
/// numeric column of its own right after its key's, named `<key>_s`, holding the value in
/// seconds (`cache.ttl` = `5m`, `cache.ttl_s` = `300`), so that no reader parses `5m`.
pub fn has_seconds_column(values: &[toml::Value]) -> bool {
    !values.is_empty() && values.iter().all(|v| duration_us(v).is_some())
}

fn duration_us(v: &toml::Value) -> Option<u64> {
    v.as_str().and_then(|s| crate::time::parse_duration_us(s).ok())
}

/// The name of the seconds column of axis `key`.
pub fn seconds_column(key: &str) -> String {
    format!("{key}_s")
}

/// The axis columns of `summary.csv` and `runs.csv` for axes (key, values): each key, then
/// its seconds column when it has one.
pub fn axis_columns<'a>(
    axes: impl IntoIterator<Item = (&'a str, &'a [toml::Value])>,
) -> Vec<String> {
    let columns = axes.into_iter().map(|(key, values)| {
        let seconds = has_seconds_column(values).then(|| seconds_column(key));
        std::iter::once(key.to_string()).chain(seconds)
    });
    columns.flatten().collect()
}

/// The axis cells of one point, in `axis_columns` order: `value` of each axis, then its
/// seconds (an integer when whole) where `seconds[i]` says the axis has the column.
pub fn axis_cells(values: &[toml::Value], seconds: &[bool]) -> Vec<toml::Value> {
    let mut out = Vec::new();
    for (v, &s) in values.iter().zip(seconds) {
        out.push(v.clone());
        if s {
            let us = duration_us(v).unwrap_or(0);
            out.push(match seconds_text(us).parse::<i64>() {
                Ok(whole) => toml::Value::Integer(whole),
                Err(_) => toml::Value::Float(crate::time::secs(us)),
            });
        }
    }
    out
}

/// Whether column `i` of `columns` (a header's axis part) is the seconds column of the axis
/// before it; the readers skip it (it restates that axis).
pub fn is_seconds_column(columns: &[String], i: usize) -> bool {
    i > 0 && columns[i] == seconds_column(&columns[i - 1])
}

/// The scalars of `runs.csv` that count things (`requests` through `output`, and
/// `rate_limited`): written as integers, not `{:.6}`.
pub const INTEGER_SCALARS: [&str; 8] = {
    let s = SCALAR_NAMES;
    [s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[13]]
};

/// One row of `trace.csv`: a segment of an agent's life in replication 0.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    pub strategy: String,
    pub agent: u32,
    pub request: u32,
    /// One of `SEGMENT_KINDS`.
    pub segment: String,
    pub start_s: f64,
    pub end_s: f64,
    /// hit | partial | miss | redundant_write, or empty
    pub outcome: String,
}

/// The header of `trace.csv`.
pub const TRACE_HEADER: &str = "strategy,agent,request,segment,start_s,end_s,outcome";

/// The segment kinds `trace.csv` may name.
pub const SEGMENT_KINDS: [&str; 6] =
    ["hold", "rate_limit", "prefill", "decode", "tool", "entry_ready"];

/// The fixed float format of every result file.
pub fn fmt_f(x: f64) -> String {
    format!("{x:.6}")
}

/// An axis value as the text of its cell: strings as they are, floats `{:.6}`, the rest as TOML.
pub fn axis_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(x) => fmt_f(*x),
        other => other.to_string(),
    }
}

/// A label made safe for file names: every char not in `[a-z0-9]` becomes `_`.
pub fn slug(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' })
        .collect()
}

/// `wait_first(max_wait=5s,release=timer)` -> ("wait_first", [("max_wait","5s"), ("release","timer")]).
pub fn parse_label(label: &str) -> (String, Vec<(String, String)>) {
    let Some((family, rest)) = label.split_once('(') else {
        return (label.trim().to_string(), Vec::new());
    };
    let params = rest
        .trim_end_matches(')')
        .split(',')
        .filter_map(|kv| {
            kv.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    (family.trim().to_string(), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_row_read_keeps_the_columns_read_and_knows_the_others() {
        let (columns, keep) = kept_column_index(
            &names(&["cost_usd_mean", "cost_usd_sd", "hit_rate_mean"]),
            &SUMMARY_COLUMNS_READ,
        );
        assert_eq!(keep, [true, false, true]);
        let v = Values::new(columns, vec![1.5, 0.25]);
        assert_eq!((v.get("cost_usd_mean"), v.get("hit_rate_mean")), (Some(&1.5), Some(&0.25)));
        assert_eq!(v.get("makespan_s_mean"), None, "a column the file lacks");
        assert_eq!(v.iter().count(), 2, "the columns kept");
    }

    #[test]
    #[should_panic(expected = "not kept")]
    fn asking_a_row_read_for_a_column_not_kept_is_a_bug() {
        let (columns, _) = kept_column_index(&names(&["cost_usd_sd"]), &SUMMARY_COLUMNS_READ);
        Values::new(columns, Vec::new()).get("cost_usd_sd");
    }

    #[test]
    fn of_a_column_named_twice_the_last_is_kept() {
        let (columns, keep) =
            kept_column_index(&names(&["cost_usd_mean", "cost_usd_mean"]), &SUMMARY_COLUMNS_READ);
        assert_eq!(keep, [false, true]);
        assert_eq!(Values::new(columns, vec![2.0]).get("cost_usd_mean"), Some(&2.0));
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("wait_first(max_wait=5s)"), "wait_first_max_wait_5s_");
    }

    #[test]
    fn the_integer_scalars_are_the_counts() {
        let counts = ["requests", "requests_with_hit", "redundant_writes", "cache_read"];
        assert_eq!(INTEGER_SCALARS[..4], counts);
        assert_eq!(INTEGER_SCALARS[4..], ["cache_write", "uncached", "output", "rate_limited"]);
    }

    #[test]
    fn a_strategy_label_becomes_numeric_columns() {
        assert_eq!(strategy_cells("eager"), ["eager", "", "", ""]);
        assert_eq!(
            strategy_cells("wait_first(max_wait=1500ms, release=timer)"),
            ["wait_first", "1.500000", "timer", ""]
        );
        assert_eq!(strategy_cells("wait_first(max_wait=5s)"), ["wait_first", "5", "on_ready", ""]);
        assert_eq!(strategy_cells("stagger(interval=1s)"), ["stagger", "", "", "1"]);
        assert_eq!(strategy_cells("wait_first(max_wait=x)")[1], "");
    }

    #[test]
    fn a_duration_axis_gets_a_seconds_column_in_whole_seconds_where_whole() {
        let ttl = [toml::Value::from("5m"), toml::Value::from("1h")];
        let agents = [toml::Value::from(4), toml::Value::from(8)];
        let cap = [toml::Value::from("1500ms")];
        let cols = axis_columns([("cache.ttl", &ttl[..]), ("workload.agents", &agents[..])]);
        assert_eq!(cols, ["cache.ttl", "cache.ttl_s", "workload.agents"]);
        assert!(is_seconds_column(&cols, 1) && !is_seconds_column(&cols, 2));
        let cells = axis_cells(&[ttl[0].clone(), agents[0].clone()], &[true, false]);
        assert_eq!(cells, [ttl[0].clone(), toml::Value::Integer(300), agents[0].clone()]);
        assert_eq!(axis_cells(&cap, &[true])[1], toml::Value::Float(1.5));
        // A value that is not a plain duration (a distribution) leaves the axis without one.
        assert!(!has_seconds_column(&[toml::Value::from("2s"), toml::Value::from("exp(2s)")]));
    }
}
