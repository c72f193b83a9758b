//! `[report]` (which metric answers the experiment's question and how the design-review report
//! reads it: docs/plot.md, "Design-review report") and `[plot] baseline`. No effect on a run; rendered
//! into the resolved experiment only when they differ from the default.

use crate::config::error::{At, ConfigError};
use crate::config::fields::GetOr;
use crate::config::file::{PlotSection, ReportSection};
use crate::config::names::strategy_label;
use crate::config::{ReportSpec, Strategy};

impl ReportSection {
    /// `[report]`; `file` is the table the experiment was read from (each of `assumptions` is a
    /// key it sets or sweeps).
    pub(super) fn validate(
        self,
        file: &toml::Table,
        strategies: &[Strategy],
        at: At,
    ) -> Result<ReportSpec, ConfigError> {
        let s = at.section("report.");
        let strategy = match self.strategy {
            None => None,
            Some(v) => {
                let labels: Vec<String> = strategies.iter().map(strategy_label).collect();
                match v.as_str() {
                    Some(l) if labels.iter().any(|x| x == l) => Some(l.to_string()),
                    _ => {
                        let why =
                            format!("expected one of the file's strategies: {}", labels.join(", "));
                        return Err(s.bad("strategy", v, why));
                    }
                }
            }
        };
        let compare = match self.compare {
            None => None,
            Some(toml::Value::String(k)) if !k.is_empty() => Some(k),
            Some(v) => return Err(s.bad("compare", v, "expected a swept key, a string")),
        };
        let items = match self.assumptions {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items,
            Some(v) => return Err(s.bad("assumptions", v, "expected a list of dotted keys")),
        };
        let mut assumptions: Vec<String> = Vec::new();
        for item in items {
            let key = item.as_str().unwrap_or_default();
            if lookup(file, key).is_none() && !swept(file, key) {
                let why = "expected a dotted key this file sets or sweeps, e.g. \
                           \"workload.brief_tokens\"";
                return Err(s.bad("assumptions", item, why));
            }
            if !assumptions.iter().any(|k| k == key) {
                assumptions.push(key.to_string());
            }
        }
        Ok(ReportSpec {
            answer: self.answer.map(|a| a.0),
            tolerance: self.tolerance.get_or(ReportSpec::DEFAULT_TOLERANCE),
            compare,
            strategy,
            assumptions,
        })
    }
}

impl PlotSection {
    /// `[plot] baseline = { "cache.ttl" = "5m" }`: the slice figures show by default. Each value
    /// is a scalar as the `[sweep]` lists write it; `plot` checks it is one of the swept values.
    pub(super) fn validate(self, at: At) -> Result<Vec<(String, toml::Value)>, ConfigError> {
        let table = match self.baseline {
            None => toml::Table::new(),
            Some(toml::Value::Table(t)) => t,
            Some(v) => {
                let why =
                    "expected a table of swept keys and values, e.g. { \"cache.ttl\" = \"5m\" }";
                return Err(at.bad("plot.baseline", v, why));
            }
        };
        for (k, v) in &table {
            let scalar = matches!(
                v,
                toml::Value::String(_)
                    | toml::Value::Integer(_)
                    | toml::Value::Float(_)
                    | toml::Value::Boolean(_)
            );
            if !scalar || k.is_empty() {
                let reason = "expected one swept value (a string, number or boolean)";
                return Err(at.bad(&format!("plot.baseline.\"{k}\""), v, reason));
            }
        }
        Ok(table.into_iter().collect())
    }
}

/// Whether `t`'s `[sweep]` table has an axis `key` (the report ranges its answers over the
/// values of such an assumption: docs/plot.md).
fn swept(t: &toml::Table, key: &str) -> bool {
    let axes = crate::config::sweep_table(t).map(crate::config::flatten_keys);
    axes.is_some_and(|a| a.iter().any(|(k, _)| k == key))
}

/// The value at dotted `key` of `t` (`workload.brief_tokens`), if the table sets it.
pub fn lookup<'a>(t: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let (head, rest) = match key.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    match (t.get(head)?, rest) {
        (v, None) => Some(v),
        (toml::Value::Table(sub), Some(r)) => lookup(sub, r),
        _ => None,
    }
}
