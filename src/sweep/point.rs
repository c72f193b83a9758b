//! One sweep point, start to finish: its experiment table (base + axis values), every
//! replication of every strategy, and the finished record (runs.csv rows, summary.csv rows,
//! histograms) that the journal stores and the outputs are assembled from.
//!
//! Memory per point is its replications' scalars and one merged histogram per strategy and
//! latency metric; nothing outlives the point.

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::spec::value_text;
use super::stats::{csv_cell, fmt6, summarize};
use super::Simulator;
use crate::metrics::{RunMetrics, LATENCY_NAMES, SCALAR_NAMES};

/// What a finished point contributes to every output file, already formatted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: u64,
    /// runs.csv rows, each ending in `\n`.
    pub runs: String,
    /// summary.csv rows, each ending in `\n`.
    pub summary: String,
    /// (file name under `histograms/`, base64 V2+deflate histogram).
    pub hists: Vec<(String, String)>,
}

/// The header of runs.csv for these axis keys.
pub fn runs_header(axis_keys: &[String]) -> String {
    let mut cols: Vec<String> = vec!["point".into()];
    cols.extend(axis_keys.iter().map(|k| csv_cell(k)));
    cols.extend(["replication".to_string(), "strategy".to_string()]);
    cols.extend(SCALAR_NAMES.iter().map(|s| s.to_string()));
    cols.join(",") + "\n"
}

/// The header of summary.csv for these axis keys.
pub fn summary_header(axis_keys: &[String]) -> String {
    let mut cols: Vec<String> = vec!["point".into()];
    cols.extend(axis_keys.iter().map(|k| csv_cell(k)));
    cols.extend(["strategy".to_string(), "replications".to_string()]);
    for m in SCALAR_NAMES {
        cols.extend([format!("{m}_mean"), format!("{m}_sd"), format!("{m}_ci95")]);
    }
    for l in LATENCY_NAMES {
        for q in ["p50", "p90", "p99", "p999", "max"] {
            cols.push(format!("{l}_{q}_s"));
        }
    }
    cols.join(",") + "\n"
}

/// A strategy label as a file-name slug: every char not `[a-z0-9]` becomes `_`.
pub fn slug(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '_' })
        .collect()
}

/// The histogram file name of (point, strategy, latency metric).
pub fn hist_name(point: u64, label: &str, latency: &str) -> String {
    format!("p{point:05}_{}_{latency}.hdr", slug(label))
}

/// Serialize a histogram as HdrHistogram V2 + deflate, base64, one line.
pub fn encode_histogram(h: &Histogram<u64>) -> Result<String, String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| format!("serializing a histogram: {e:?}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Per-strategy accumulator over replications.
struct Acc {
    scalars: Vec<[f64; 18]>,
    hists: [Histogram<u64>; 3],
}

/// Run every replication of every strategy of one point and format its record.
/// `values` are the point's axis values in axis order (for the CSV columns).
pub fn run_point<S: Simulator>(
    sim: &S,
    exp: &S::Exp,
    point: u64,
    values: &[toml::Value],
) -> Result<PointRecord, String> {
    let desc = sim.describe(exp);
    let (labels, reps) = (&desc.strategies, desc.replications);
    let prefix: String = std::iter::once(point.to_string())
        .chain(values.iter().map(|v| csv_cell(&value_text(v))))
        .collect::<Vec<_>>()
        .join(",");
    let mut accs: Vec<Acc> = labels
        .iter()
        .map(|_| Acc {
            scalars: Vec::with_capacity(reps as usize),
            hists: std::array::from_fn(|_| crate::metrics::new_histogram()),
        })
        .collect();
    let mut runs = String::new();
    let mut m = RunMetrics::new();
    for r in 0..reps {
        for (s, label) in labels.iter().enumerate() {
            sim.simulate_into(exp, s, r, &mut m)?;
            let sc = m.scalars();
            runs.push_str(&prefix);
            runs.push_str(&format!(",{r},{}", csv_cell(label)));
            for x in sc {
                runs.push(',');
                runs.push_str(&fmt6(x));
            }
            runs.push('\n');
            let acc = &mut accs[s];
            acc.scalars.push(sc);
            for (h, src) in acc.hists.iter_mut().zip(m.histograms()) {
                h.add(src).map_err(|e| format!("merging histograms: {e:?}"))?;
            }
        }
    }
    let mut summary = String::new();
    let mut hists = Vec::new();
    for (label, acc) in labels.iter().zip(&accs) {
        summary.push_str(&summary_row(&prefix, label, acc));
        for (h, name) in acc.hists.iter().zip(LATENCY_NAMES) {
            hists.push((hist_name(point, label, name), encode_histogram(h)?));
        }
    }
    Ok(PointRecord { point, runs, summary, hists })
}

fn summary_row(prefix: &str, label: &str, acc: &Acc) -> String {
    let mut row = format!("{prefix},{},{}", csv_cell(label), acc.scalars.len());
    let mut column = Vec::with_capacity(acc.scalars.len());
    for m in 0..SCALAR_NAMES.len() {
        column.clear();
        column.extend(acc.scalars.iter().map(|s| s[m]));
        let st = summarize(&column);
        for x in [st.mean, st.sd, st.ci95] {
            row.push(',');
            row.push_str(&fmt6(x));
        }
    }
    for h in &acc.hists {
        for q in latency_quantiles_s(h) {
            row.push(',');
            row.push_str(&fmt6(q));
        }
    }
    row.push('\n');
    row
}

/// p50, p90, p99, p99.9 and max of a histogram in seconds (all 0 when it is empty).
pub fn latency_quantiles_s(h: &Histogram<u64>) -> [f64; 5] {
    if h.is_empty() {
        return [0.0; 5];
    }
    let s = crate::time::secs;
    [
        s(h.value_at_quantile(0.50)),
        s(h.value_at_quantile(0.90)),
        s(h.value_at_quantile(0.99)),
        s(h.value_at_quantile(0.999)),
        s(h.max()),
    ]
}
