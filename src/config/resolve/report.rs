//! `[report]`: which metric answers the experiment's question and how the design-review report
//! reads it (docs/plot.md, "The report"). No effect on a run; rendered into the resolved
//! experiment only when it differs from the default.

use super::{unknown, Section};
use crate::config::names::strategy_label;
use crate::config::{Answer, ConfigError, ReportSpec, Strategy};

/// Every key `[report]` accepts.
pub const REPORT_KEYS: [&str; 5] = ["answer", "tolerance", "compare", "strategy", "assumptions"];

pub(super) fn resolve_report(
    s: &mut Section<'_>,
    file: &toml::Table,
    strategies: &[Strategy],
) -> Result<ReportSpec, ConfigError> {
    if let Some(k) = s.table.keys().find(|k| !REPORT_KEYS.contains(&k.as_str())) {
        let mut e = unknown(s.origin, k, &s.prefix, &REPORT_KEYS);
        if let ConfigError::UnknownKey { hint, .. } = &mut e {
            hint.push_str(&format!(" ([report] accepts {})", REPORT_KEYS.join(", ")));
        }
        return Err(e);
    }
    let mut r = ReportSpec::default();
    if let Some(v) = s.get("answer") {
        let accepted = format!("expected one of {}", Answer::NAMES.join(", "));
        let text = v.as_str().ok_or_else(|| s.bad("answer", v.to_string(), &accepted))?;
        r.answer = Some(Answer::parse(text).ok_or_else(|| s.bad_str("answer", text, &accepted))?);
    }
    r.tolerance = s.share("tolerance", ReportSpec::DEFAULT_TOLERANCE)?;
    if let Some(v) = s.get("compare") {
        match v.as_str() {
            Some(k) if !k.is_empty() => r.compare = Some(k.to_string()),
            _ => return Err(s.bad("compare", v.to_string(), "expected a swept key, a string")),
        }
    }
    if let Some(v) = s.get("strategy") {
        let labels: Vec<String> = strategies.iter().map(strategy_label).collect();
        match v.as_str() {
            Some(l) if labels.iter().any(|x| x == l) => r.strategy = Some(l.to_string()),
            _ => {
                let why = format!("expected one of the file's strategies: {}", labels.join(", "));
                return Err(s.bad("strategy", v.to_string(), &why));
            }
        }
    }
    r.assumptions = assumptions(s, file)?;
    s.finish()?;
    Ok(r)
}

/// `assumptions = ["workload.brief_tokens", ...]`: each a dotted key the file itself sets.
fn assumptions(s: &mut Section<'_>, file: &toml::Table) -> Result<Vec<String>, ConfigError> {
    let Some(v) = s.get("assumptions") else { return Ok(Vec::new()) };
    let items = v
        .as_array()
        .ok_or_else(|| s.bad("assumptions", v.to_string(), "expected a list of dotted keys"))?;
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let key = item.as_str().unwrap_or_default();
        if lookup(file, key).is_none() {
            let why = "expected a dotted key this file sets, e.g. \"workload.brief_tokens\"";
            return Err(s.bad("assumptions", item.to_string(), why));
        }
        if !out.iter().any(|k| k == key) {
            out.push(key.to_string());
        }
    }
    Ok(out)
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
