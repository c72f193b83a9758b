//! `RunResult` (a finished run: the bytes `run --out` writes, the `run --json` document, the
//! table `run` prints, the hold answer, each latency's histogram) and `Histogram`.

use std::path::PathBuf;
use std::sync::Mutex;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use pyo3::prelude::*;

use super::{input, to_py};
use crate::api::{outdir, Experiment, Ran};
use crate::metrics::LATENCY_NAMES;
use crate::results::{self, Aggregate};

/// A finished run of an experiment.
#[pyclass(name = "RunResult", module = "prefixsim._native")]
pub(crate) struct PyRunResult {
    exp: Experiment,
    /// Behind a lock: an aggregate caches its percentiles in a `Cell`.
    ran: Mutex<Ran>,
}

impl PyRunResult {
    pub fn new(exp: Experiment, ran: Ran) -> PyRunResult {
        PyRunResult { exp, ran: Mutex::new(ran) }
    }

    fn with<T>(&self, f: impl FnOnce(&Ran) -> T) -> T {
        f(&self.ran.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[pymethods]
impl PyRunResult {
    /// summary.csv's text, as `run --out` writes it.
    fn summary_csv(&self) -> String {
        self.with(|ran| results::summary_text(&[], &crate::exec::run::summary_rows(&ran.outcomes)))
    }

    /// runs.csv's text, as `run --out` writes it.
    fn runs_csv(&self) -> String {
        self.with(|ran| {
            let rows = ran.outcomes.iter().flat_map(|o| {
                let runs = o.runs.iter().enumerate();
                runs.map(|(r, s)| results::runs_line(0, &[], r as u32, &o.label, s))
            });
            lines(results::runs_header(&[]), rows)
        })
    }

    /// The `run --json` document.
    fn json(&self) -> String {
        self.with(|ran| ran.summary(&self.exp).to_json())
    }

    /// The table `prefixsim run` prints, with the hold answer's sentence under it.
    fn table(&self) -> String {
        self.with(|ran| {
            let c = self.exp.config();
            let mut text = crate::report::run::table_text(c, &ran.outcomes, &ran.notes, &[]);
            if let Some(h) = &ran.hold {
                text.push_str(&format!("\n{}\n", crate::numfmt::capitalised(&h.sentence())));
            }
            text
        })
    }

    /// hold.json's text, when the run searched the hold answer.
    fn hold_json(&self) -> Option<String> {
        self.with(|ran| {
            let h = ran.hold.as_ref()?;
            Some(serde_json::to_string_pretty(h).expect("a hold answer serializes") + "\n")
        })
    }

    /// The strategies' labels, in the experiment's order.
    fn strategies(&self) -> Vec<String> {
        self.with(|ran| ran.outcomes.iter().map(|o| o.label.clone()).collect())
    }

    /// One latency's histogram over every agent (or request) of every replication.
    fn histogram(&self, strategy: &str, metric: &str) -> PyResult<PyHistogram> {
        let Some(i) = LATENCY_NAMES.iter().position(|n| *n == metric) else {
            return Err(input(format!(
                "histogram: no latency `{metric}` (one of {})",
                LATENCY_NAMES.join(", ")
            )));
        };
        self.with(|ran| {
            let Some(o) = ran.outcomes.iter().find(|o| o.label == strategy) else {
                let labels: Vec<&str> = ran.outcomes.iter().map(|o| o.label.as_str()).collect();
                return Err(input(format!(
                    "histogram: no strategy `{strategy}` in this run (one of {})",
                    labels.join(", ")
                )));
            };
            let hist = o.aggregate.histograms().into_iter().nth(i).expect("a latency index");
            let aggregate = Mutex::new(o.aggregate.clone());
            let name = format!("{strategy} {metric}");
            Ok(PyHistogram { hist, aggregate, index: i, name })
        })
    }

    /// Write the files `run --out DIR` writes (DIR absent or empty, or `force`), trace.csv too
    /// when `trace` (replication 0 is simulated again, the same numbers).
    #[pyo3(signature = (path, force = false, trace = false))]
    fn to_dir(&self, py: Python<'_>, path: PathBuf, force: bool, trace: bool) -> PyResult<()> {
        py.detach(|| {
            let out = outdir::open(&path, force, "").map_err(|e| to_py(e.into()))?;
            self.with(|ran| self.exp.write_files(ran, out, trace, None)).map_err(to_py)
        })
    }
}

/// A CSV file's text: `header`, then `rows`, each line ending in `\n`.
fn lines(header: String, rows: impl Iterator<Item = String>) -> String {
    std::iter::once(header).chain(rows).map(|l| l + "\n").collect()
}

/// One latency's histogram (HdrHistogram, microsecond buckets within 0.1%), read in seconds.
#[pyclass(name = "Histogram", module = "prefixsim._native")]
pub(crate) struct PyHistogram {
    hist: Histogram<u64>,
    /// The strategy's aggregate, which reads percentiles and exact extremes as summary.csv
    /// does (behind a lock: it caches its ladders in a `Cell`).
    aggregate: Mutex<Aggregate>,
    /// The latency's index in `LATENCY_NAMES`.
    index: usize,
    name: String,
}

impl PyHistogram {
    fn aggregate(&self) -> std::sync::MutexGuard<'_, Aggregate> {
        self.aggregate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The exact least and greatest values, seconds (the buckets only know their edges).
    fn extremes(&self) -> (f64, f64) {
        let a = self.aggregate();
        (a.min_s(self.index), a.ladder_s(self.index)[4])
    }
}

#[pymethods]
impl PyHistogram {
    /// Samples counted.
    #[getter]
    fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The exact least value, seconds (0 when empty).
    #[getter]
    fn min(&self) -> f64 {
        self.extremes().0
    }

    /// The exact greatest value, seconds (0 when empty).
    #[getter]
    fn max(&self) -> f64 {
        self.extremes().1
    }

    /// The mean of the buckets' values, seconds.
    #[getter]
    fn mean(&self) -> f64 {
        self.hist.mean() / 1e6
    }

    /// The value at percentile `q` (0 to 100), seconds: summary.csv's definition (the upper
    /// edge of the first bucket whose running count reaches q% of the samples, within the
    /// exact extremes); 0 is the exact least value.
    fn percentile(&self, q: f64) -> PyResult<f64> {
        if !(0.0..=100.0).contains(&q) {
            return Err(input(format!("percentile: {q} is not between 0 and 100")));
        }
        match q == 0.0 {
            true => Ok(self.min()),
            false => Ok(self.aggregate().quantile_s(self.index, q / 100.0)),
        }
    }

    /// The counted buckets: (each bucket's upper edge in seconds, its count), ascending.
    fn buckets(&self) -> (Vec<f64>, Vec<u64>) {
        let it = self.hist.iter_recorded();
        it.map(|v| (v.value_iterated_to() as f64 / 1e6, v.count_since_last_iteration())).unzip()
    }

    /// The histogram as HdrHistogram's compressed V2 encoding in base64 (microseconds), the
    /// form of histograms/latency.hlog and of the `hdrh` package's `HdrHistogram.decode`.
    fn encode(&self) -> PyResult<String> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.hist, &mut bytes)
            .map_err(|e| input(format!("cannot encode the histogram: {e:?}")))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    fn __repr__(&self) -> String {
        let (lo, hi) = self.extremes();
        format!("Histogram({}: {} samples, {lo:.6}..{hi:.6} s)", self.name, self.hist.len())
    }
}
