//! Model definitions: the schema of a `[models."name"]` table as the presets (`presets.toml`)
//! and user-defined models (an experiment's `[models]`, or a file named by `--models`) write
//! it, its checks, and the `ModelParams` it gives. docs/models.md is the reference.
//!
//! Knows no preset and reads no file: `presets` holds the table, `resolve` reads and checks the
//! user's definitions (`resolve/models.rs`).

use serde::{Deserialize, Serialize};

pub use super::experiment::DefinedModel;

use super::error::{At, ConfigError};
use super::fields::{AtMost, GetOr, Name, Tokens, MAX_MULTIPLIER, MAX_PRICE_USD_PER_MTOK};
use crate::cache::{LongContext, ModelParams, Policy, ThinkingHistory};

/// A price in USD per million tokens (as `[model_params]`'s).
type Price = AtMost<MAX_PRICE_USD_PER_MTOK>;
/// A multiple of the input price (as `[model_params]`'s).
type Multiplier = AtMost<MAX_MULTIPLIER>;

/// One `[models."name"]` table. Prices in USD per million tokens; multipliers of the input
/// price. A user model needs the five prices, the minimum and the window, and a latency
/// (`latency_from` or `[models."name".latency]`); the rest has defaults (`params`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelDef {
    /// The cache policy the model is served under (default `anthropic`).
    pub policy: Option<Name<Policy>>,
    pub input_usd_per_mtok: Option<Price>,
    pub output_usd_per_mtok: Option<Price>,
    pub read_multiplier: Option<Multiplier>,
    pub write_5m_multiplier: Option<Multiplier>,
    pub write_1h_multiplier: Option<Multiplier>,
    pub storage_usd_per_mtok_hour: Option<Price>,
    pub min_cacheable_tokens: Option<Tokens>,
    pub context_window_tokens: Option<Tokens>,
    /// A price tier: a request whose input is above the threshold pays the tier's multiples
    /// of the input and output prices on all its tokens (all three keys, or none).
    pub tier_threshold_tokens: Option<Tokens>,
    pub tier_input_multiplier: Option<Multiplier>,
    pub tier_output_multiplier: Option<Multiplier>,
    /// A larger window offered on request (`model_params.long_context = true` uses it).
    pub long_context_window_tokens: Option<Tokens>,
    pub long_context_threshold_tokens: Option<Tokens>,
    pub long_context_input_multiplier: Option<Multiplier>,
    pub long_context_output_multiplier: Option<Multiplier>,
    pub thinking_history: Option<Name<ThinkingHistory>>,
    /// Models of one class share rate-limit buckets (default: the model's own name).
    pub rate_limit_class: Option<String>,
    /// Cache reads count toward the input-tokens-per-minute limit (default `false`).
    pub itpm_counts_cache_reads: Option<bool>,
    /// A preset whose calibrated latency the model uses.
    pub latency_from: Option<String>,
    /// `[latency]`'s keys for this model, over `latency_from`'s fit (or the defaults).
    pub latency: Option<toml::Table>,
    /// Where the numbers come from: a URL, the day it was read, how, and what is not from it.
    pub source: Option<String>,
    pub checked: Option<String>,
    pub read: Option<String>,
    pub note: Option<String>,
}

/// The definition a `DefinedModel` holds (checked when the experiment was resolved).
pub fn def_of(d: &DefinedModel) -> ModelDef {
    match d.table.clone().try_into() {
        Ok(def) => def,
        Err(e) => unreachable!("a defined model's table was checked when read: {e}"),
    }
}

/// The parameters of a defined model (errors name `origin`, the file it is written in).
pub fn defined_params(d: &DefinedModel, origin: &str) -> Result<ModelParams, ConfigError> {
    let prefix = format!("models.{}.", d.name);
    params(&d.name, &def_of(d), At { origin, prefix: &prefix })
}

/// What the definition of `name` gives, checked; errors name `at`'s file and
/// `<at.prefix>key` (`models.NAME.key`).
pub fn params(name: &str, d: &ModelDef, at: At) -> Result<ModelParams, ConfigError> {
    let need = |key: &str, v: Option<f64>| {
        v.ok_or_else(|| at.bad(key, "(absent)", "a model definition needs it (docs/models.md)"))
    };
    let input = need("input_usd_per_mtok", d.input_usd_per_mtok.map(|p| p.0))?;
    let output = need("output_usd_per_mtok", d.output_usd_per_mtok.map(|p| p.0))?;
    let read = need("read_multiplier", d.read_multiplier.map(|p| p.0))?;
    let write_5m = need("write_5m_multiplier", d.write_5m_multiplier.map(|p| p.0))?;
    let write_1h = need("write_1h_multiplier", d.write_1h_multiplier.map(|p| p.0))?;
    let min = need("min_cacheable_tokens", d.min_cacheable_tokens.map(|t| t.0 as f64))?;
    let window = need("context_window_tokens", d.context_window_tokens.map(|t| t.0 as f64))?;
    let window = window as u64;
    if window == 0 {
        return Err(at.bad("context_window_tokens", 0, "a window holds at least 1 token"));
    }
    let (long_context, use_long_context) = match (tier(d, window, at)?, offer(d, window, at)?) {
        (Some(_), Some(_)) => {
            let why = "a model has a price tier or a long-context offer, not both";
            return Err(at.bad("long_context_window_tokens", "(given)", why));
        }
        (Some(t), None) => (Some(t), true),
        (None, o) => (o, false),
    };
    Ok(ModelParams {
        name: name.to_string(),
        input_usd_per_mtok: input,
        output_usd_per_mtok: output,
        read_multiplier: read,
        write_5m_multiplier: write_5m,
        write_1h_multiplier: write_1h,
        storage_usd_per_mtok_hour: d.storage_usd_per_mtok_hour.get_or(0.0),
        min_cacheable_tokens: min as u64,
        context_window_tokens: window,
        long_context,
        use_long_context,
        thinking: d.thinking_history.map_or(ThinkingHistory::Kept, |t| t.0),
        rate_limit_class: d.rate_limit_class.clone().unwrap_or_else(|| name.to_string()),
        itpm_counts_cache_reads: d.itpm_counts_cache_reads.unwrap_or(false),
    })
}

/// The price tier (`tier_*`): all three keys or none, the threshold below the window.
fn tier(d: &ModelDef, window: u64, at: At) -> Result<Option<LongContext>, ConfigError> {
    let keys = (d.tier_threshold_tokens, d.tier_input_multiplier, d.tier_output_multiplier);
    match keys {
        (None, None, None) => Ok(None),
        (Some(t), Some(i), Some(o)) if t.0 < window => Ok(Some(LongContext {
            window_tokens: window,
            threshold_tokens: t.0,
            input_multiplier: i.0,
            output_multiplier: o.0,
        })),
        (Some(t), Some(_), Some(_)) => {
            let why = format!("the tier starts inside the window ({window} tokens)");
            Err(at.bad("tier_threshold_tokens", t.0, why))
        }
        _ => {
            let why = "give tier_threshold_tokens, tier_input_multiplier and \
                       tier_output_multiplier together";
            Err(at.bad("tier_threshold_tokens", "(partly given)", why))
        }
    }
}

/// The long-context offer: a window larger than the standard one, priced 2x input and 1.5x
/// output above the threshold (default: the standard window) unless given.
fn offer(d: &ModelDef, window: u64, at: At) -> Result<Option<LongContext>, ConfigError> {
    let Some(long) = d.long_context_window_tokens.map(|t| t.0) else {
        let given = d.long_context_threshold_tokens.is_some()
            || d.long_context_input_multiplier.is_some()
            || d.long_context_output_multiplier.is_some();
        return match given {
            true => Err(at.bad(
                "long_context_window_tokens",
                "(absent)",
                "the long-context keys describe an offered window: give its size",
            )),
            false => Ok(None),
        };
    };
    if long <= window {
        let why = format!("a long-context window is larger than the standard {window} tokens");
        return Err(at.bad("long_context_window_tokens", long, why));
    }
    Ok(Some(LongContext {
        window_tokens: long,
        threshold_tokens: d.long_context_threshold_tokens.map_or(window, |t| t.0),
        input_multiplier: d.long_context_input_multiplier.get_or(2.0),
        output_multiplier: d.long_context_output_multiplier.get_or(1.5),
    }))
}

/// The policy the definition names (`anthropic` when it names none).
pub fn policy(d: &ModelDef) -> Policy {
    d.policy.map_or(Policy::Anthropic, |p| p.0)
}

/// The fit a model's latency starts from and where it comes from: a model the experiment
/// defines borrows its `latency_from`'s fit (none when it has only latency keys of its
/// own); any other model is `latency_presets::fit_for`'s. This is how a caller learns that
/// model X's latency is model Y's fit (`fit.fitted_on`).
pub fn fit_for(
    defined: &[DefinedModel],
    model: &str,
) -> Option<(&'static super::latency_presets::Fit, String)> {
    let Some(d) = defined.iter().find(|d| d.name == model) else {
        return super::latency_presets::fit_for(model);
    };
    let (fit, _) = super::latency_presets::fit_for(&def_of(d).latency_from?)?;
    let source = format!(
        "{model} is defined by the experiment: borrows the fit of {} ({} requests)",
        fit.fitted_on, fit.requests
    );
    Some((fit, source))
}
