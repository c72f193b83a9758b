//! The models an experiment can name, as rows: the presets (API ids, prices, tiers, minimum
//! cacheable length, window, latency, and the page and day each row was checked), then the
//! models a file defines. `prefixsim models` prints these as a table, `--sources` or JSON.

use std::path::Path;

use serde::Serialize;

use super::error::Error;
use crate::config;
use crate::config::latency_presets::{Fit, DECODE_RATE_FALLBACK};
use crate::config::models::{DefinedModel, ModelDef};
use crate::config::ModelParams;

/// One model: a preset, or a model a file defines (`defined_in`).
#[derive(Serialize)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ModelRow {
    pub(crate) name: String,
    /// The models file that defines the model (absent for a preset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) defined_in: Option<String>,
    pub(crate) api_ids: Vec<String>,
    pub(crate) policy: &'static str,
    pub(crate) prices: Prices,
    pub(crate) min_cacheable_tokens: u64,
    pub(crate) context_window_tokens: u64,
    /// The larger window the model offers behind a beta header (absent when none).
    pub(crate) long_context_window_tokens: Option<u64>,
    /// The price tier above a threshold of the window (absent when none).
    pub(crate) tier: Option<Tier>,
    pub(crate) itpm_counts_cache_reads: bool,
    /// `None`: a defined model with latency keys of its own and no fit.
    pub(crate) latency: Option<Latency>,
    pub(crate) source: Option<String>,
    pub(crate) checked: Option<String>,
    pub(crate) read: Option<String>,
    pub(crate) note: Option<String>,
}

/// Dollars per million tokens.
#[derive(Serialize)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct Prices {
    pub(crate) input_usd_per_mtok: f64,
    pub(crate) output_usd_per_mtok: f64,
    pub(crate) cache_write_5m_usd_per_mtok: f64,
    pub(crate) cache_write_1h_usd_per_mtok: f64,
    pub(crate) cache_read_usd_per_mtok: f64,
    pub(crate) storage_usd_per_mtok_hour: f64,
}

/// Requests whose input is above `threshold_tokens` pay these multiples on all their tokens.
#[derive(Serialize)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct Tier {
    pub(crate) threshold_tokens: u64,
    pub(crate) input_multiplier: f64,
    pub(crate) output_multiplier: f64,
}

/// A model's latency fit, rates in tokens per second.
#[derive(Serialize)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct Latency {
    pub(crate) overhead_s: f64,
    pub(crate) prefill_rate: f64,
    /// `None`: the fit found no measurable time per cached token, and none is simulated.
    pub(crate) cached_rate: Option<f64>,
    pub(crate) decode_rate: f64,
    /// Whether `decode_rate` was identified by the data (else a fallback).
    pub(crate) decode_rate_fitted: bool,
    /// The overhead's 99th percentile (the measured residuals' fitted tail), seconds.
    pub(crate) overhead_p99_s: f64,
    pub(crate) source: String,
}

/// The rows `prefixsim models [--models FILE]` lists: the presets, then the models
/// `models_file` defines (a bad file is an input error naming it).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn model_rows(models_file: Option<&Path>) -> Result<Vec<ModelRow>, Error> {
    let defined = match models_file {
        Some(file) => config::read_models_file(file)?,
        None => Vec::new(),
    };
    let presets = config::presets::table().iter();
    let mut rows: Vec<ModelRow> =
        presets.map(|p| row(&p.name, &p.params, &p.def, None, &defined)).collect();
    let origin = models_file.map(|f| f.display().to_string());
    for d in &defined {
        let origin_text = origin.as_deref().unwrap_or_default();
        let params = config::models::defined_params(d, origin_text)?;
        let def = config::models::def_of(d);
        rows.push(row(&d.name, &params, &def, origin.clone(), &defined));
    }
    Ok(rows)
}

/// What `prefixsim models --json` prints: `{"models": [...]}`, fields in the rows' order, and
/// a final newline.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn models_json(rows: &[ModelRow]) -> String {
    let v = serde_json::json!({ "models": rows });
    serde_json::to_string_pretty(&v).expect("model rows serialize") + "\n"
}

fn row(
    name: &str,
    m: &ModelParams,
    def: &ModelDef,
    defined_in: Option<String>,
    defined: &[DefinedModel],
) -> ModelRow {
    let usd = |x: f64| (x * m.input_usd_per_mtok * 1e6).round() / 1e6;
    let tier = m.long_context.as_ref().filter(|_| m.use_long_context);
    let offer = m.long_context.as_ref().filter(|_| !m.use_long_context);
    let fit = match defined_in {
        Some(_) => config::models::fit_for(defined, name),
        None => config::latency_presets::fit_for(name),
    };
    ModelRow {
        name: name.to_string(),
        api_ids: match defined_in {
            Some(_) => vec![name.to_string()],
            None => config::model_ids::api_ids(name),
        },
        defined_in,
        policy: config::models::policy(def).name(),
        prices: Prices {
            input_usd_per_mtok: m.input_usd_per_mtok,
            output_usd_per_mtok: m.output_usd_per_mtok,
            cache_write_5m_usd_per_mtok: usd(m.write_5m_multiplier),
            cache_write_1h_usd_per_mtok: usd(m.write_1h_multiplier),
            cache_read_usd_per_mtok: usd(m.read_multiplier),
            storage_usd_per_mtok_hour: m.storage_usd_per_mtok_hour,
        },
        min_cacheable_tokens: m.min_cacheable_tokens,
        context_window_tokens: m.context_window_tokens,
        long_context_window_tokens: offer.map(|l| l.window_tokens),
        tier: tier.map(|l| Tier {
            threshold_tokens: l.threshold_tokens,
            input_multiplier: l.input_multiplier,
            output_multiplier: l.output_multiplier,
        }),
        itpm_counts_cache_reads: m.itpm_counts_cache_reads,
        latency: fit.map(|(fit, source)| latency(fit, source)),
        source: def.source.clone(),
        checked: def.checked.clone(),
        read: def.read.clone(),
        note: def.note.clone(),
    }
}

fn latency(fit: &Fit, source: String) -> Latency {
    Latency {
        overhead_s: fit.overhead_s,
        prefill_rate: fit.prefill_rate,
        cached_rate: fit.cached_rate,
        decode_rate: fit.decode_rate.unwrap_or(DECODE_RATE_FALLBACK),
        decode_rate_fitted: fit.decode_rate.is_some(),
        overhead_p99_s: (fit.overhead.quantile_s(0.99) * 1e4).round() / 1e4,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_then_the_files_models_marked_with_the_file() {
        let presets = config::presets::table();
        let rows = model_rows(None).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, presets.iter().map(|p| p.name.as_str()).collect::<Vec<_>>());
        assert!(rows.iter().all(|r| r.defined_in.is_none() && r.latency.is_some()));
        let file = Path::new("data/samples/models.toml");
        let with = model_rows(Some(file)).unwrap();
        assert!(with.iter().zip(&rows).all(|(w, r)| w.name == r.name && w.defined_in.is_none()));
        let defined: Vec<(&str, Option<&str>)> =
            with[rows.len()..].iter().map(|r| (r.name.as_str(), r.defined_in.as_deref())).collect();
        let origin = Some("data/samples/models.toml");
        assert_eq!(defined[..2], [("acme-large", origin), ("acme-small", origin)]);
        assert_eq!(with[rows.len()].api_ids, ["acme-large"]);
    }

    #[test]
    fn the_json_lists_every_row_in_order_with_a_final_newline() {
        let rows = model_rows(Some(Path::new("data/samples/models.toml"))).unwrap();
        let text = models_json(&rows);
        assert!(
            text.starts_with("{\n  \"models\": [\n    {\n      \"name\": ")
                && text.ends_with("}\n")
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let names: Vec<&str> =
            v["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(names, rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>());
        let first = &v["models"][0];
        assert!(first.get("defined_in").is_none(), "a preset has no defined_in: {first}");
        assert!(v["models"][rows.len() - 1]["defined_in"].is_string());
    }

    #[test]
    fn a_bad_models_file_is_an_input_error_naming_it() {
        let err = model_rows(Some(Path::new("data/samples/no-such-models.toml"))).err().unwrap();
        assert!(err.is_input());
        assert!(err.to_string().contains("data/samples/no-such-models.toml"), "{err}");
    }
}
