//! The user-defined models of resolving an experiment: `[models."name"]` tables of the file and
//! of the file `models_file` names (`--models FILE`), each checked where it is written; the
//! model, its policy and its latency looked up among them before the presets.
//!
//! A definition may not carry a preset's name (or one of its API ids): an error says to pick
//! another name or to change the preset's values with `[model_params]`. A model defined in
//! both places is an error naming both.

use std::collections::BTreeMap;
use std::path::Path;

use super::{latency_keys, read};
use crate::cache::{ModelParams, Policy};
use crate::config::error::{At, ConfigError};
use crate::config::fields::{GetOr, Int};
use crate::config::file::{LatencyKeys, Multiplier};
use crate::config::latency_presets::{self, LatencyPreset};
use crate::config::models::{self, DefinedModel, ModelDef};
use crate::config::presets;
use crate::config::LatencyParams;

/// The largest models file read (a few KiB each model).
const MAX_MODELS_FILE_BYTES: u64 = 4 << 20;

/// A models file: `[models."name"]` tables and nothing else.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsFile {
    models: Option<BTreeMap<String, toml::Table>>,
}

/// The definitions of a models file, each checked; errors name the file and the key.
pub fn read_models_file(path: &Path) -> Result<Vec<DefinedModel>, ConfigError> {
    let origin = path.display().to_string();
    let text = read_text(path).map_err(|e| ConfigError::Syntax {
        origin: origin.clone(),
        message: format!("cannot read the models file: {e}"),
    })?;
    parse_models(&text, &origin)
}

/// A models file's text, refused past `MAX_MODELS_FILE_BYTES`.
fn read_text(path: &Path) -> std::io::Result<String> {
    crate::config::dist_syntax::read_bounded(path, MAX_MODELS_FILE_BYTES, "a models file")
}

/// The definitions of a models file's text, written in `origin`.
fn parse_models(text: &str, origin: &str) -> Result<Vec<DefinedModel>, ConfigError> {
    // Not `parse_table`: a leading comment is no question here.
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Syntax {
        origin: origin.to_string(),
        message: crate::config::error::toml_syntax(&e, text),
    })?;
    let file: ModelsFile = read(&table, toml::Value::Table(table.clone()), origin, "")?;
    checked(file.models.unwrap_or_default(), origin)
}

/// Every definition of `defs` checked, as written in `origin`.
fn checked(
    defs: BTreeMap<String, toml::Table>,
    origin: &str,
) -> Result<Vec<DefinedModel>, ConfigError> {
    let mut out = Vec::with_capacity(defs.len());
    for (name, table) in defs {
        let prefix = format!("models.{name}.");
        let at = At { origin, prefix: &prefix };
        check_name(&name, At { origin, prefix: "" })?;
        let def: ModelDef = read(&table, toml::Value::Table(table.clone()), origin, &prefix)?;
        models::params(&name, &def, at)?;
        check_latency(&def, at)?;
        if let Some(t) = &def.latency {
            let lat_prefix = format!("{prefix}latency.");
            let keys: LatencyKeys = read(t, toml::Value::Table(t.clone()), origin, &lat_prefix)?;
            latency_keys(keys, LatencyParams::default(), at.section(&lat_prefix))?;
        }
        out.push(DefinedModel { name, table });
    }
    Ok(out)
}

/// The latency a definition gives: `latency_from`'s preset, checked to be one with a fit; at
/// least one of it and `[latency]` keys.
fn check_latency(d: &ModelDef, at: At) -> Result<(), ConfigError> {
    match &d.latency_from {
        Some(from) if latency_presets::fit_for(from).is_none() => {
            let names = presets::preset_names();
            let hint = crate::config::call::did_you_mean(from, names.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            Err(at.bad_str("latency_from", from, format!("no preset of that name{hint}")))
        }
        None if d.latency.is_none() => Err(at.bad(
            "latency_from",
            "(absent)",
            "a model definition needs a latency: latency_from = \"<preset>\" (its calibrated \
             fit) or a [latency] table of its own",
        )),
        _ => Ok(()),
    }
}

/// A name a definition may carry: not empty, at most 100 characters of no space or control
/// character, and no preset's name or API id.
fn check_name(name: &str, at: At) -> Result<(), ConfigError> {
    let key = format!("models.{name}");
    let fine = |c: char| !c.is_whitespace() && !c.is_control();
    if name.is_empty() || name.chars().count() > 100 || !name.chars().all(fine) {
        let why = "a model name has 1 to 100 characters, none a space or a control character";
        return Err(at.bad_str(&key, name, why));
    }
    if let Some(p) = presets::preset_for_api_id(name) {
        let why = format!(
            "names the preset `{p}`: a definition may not replace a preset; give the model \
             another name, or change the preset's values with [model_params]"
        );
        return Err(at.bad_str(&key, name, why));
    }
    Ok(())
}

/// The experiment's definitions: its own `[models]` and those of `models_file` (relative to
/// the experiment's directory); a name defined in both is an error.
pub(super) fn defined(
    own: Option<BTreeMap<String, toml::Table>>,
    models_file: Option<String>,
    at: At,
) -> Result<Vec<DefinedModel>, ConfigError> {
    let mut all = checked(own.unwrap_or_default(), at.origin)?;
    let Some(file) = models_file else { return Ok(all) };
    let path = Path::new(at.origin).with_file_name(&file);
    let text = read_text(&path)
        .map_err(|e| at.bad_str("models_file", &file, format!("cannot read it: {e}")))?;
    let from_file = parse_models(&text, &path.display().to_string())?;
    for d in from_file {
        if all.iter().any(|o| o.name == d.name) {
            let why = format!("defined in {} too: define a model once", path.display());
            return Err(at.bad(&format!("models.{}", d.name), "(a table)", why));
        }
        all.push(d);
    }
    Ok(all)
}

/// The parameters of the model the experiment defines as `name`, if it does.
pub(super) fn find(
    defined: &[DefinedModel],
    name: &str,
    at: At,
) -> Option<Result<ModelParams, ConfigError>> {
    let d = defined.iter().find(|d| d.name == name)?;
    Some(models::defined_params(d, at.origin))
}

/// The definitions the experiment runs (its model and its other agents' model), as the
/// resolved experiment keeps them.
pub(super) fn used(defined: Vec<DefinedModel>, names: [Option<&str>; 2]) -> Vec<DefinedModel> {
    defined.into_iter().filter(|d| names.contains(&Some(d.name.as_str()))).collect()
}

/// `cache.policy` given against the policy the model's definition names: the same, or a
/// what-if (`every-block`) or a self-hosted server; otherwise an error naming both.
pub(super) fn check_policy(
    given: Option<Policy>,
    defined: &[DefinedModel],
    model: &str,
    s: At,
) -> Result<Option<Policy>, ConfigError> {
    let Some(d) = defined.iter().find(|d| d.name == model) else { return Ok(given) };
    let natural = models::policy(&models::def_of(d));
    match given {
        Some(p) if p != natural && p != Policy::EveryBlock && !p.is_server() => {
            let why = format!(
                "model {model} is defined to be served under the `{}` policy (models.{model}.policy)",
                natural.name()
            );
            Err(s.bad_str("policy", p.name(), why))
        }
        Some(p) => Ok(Some(p)),
        None => Ok(Some(natural)),
    }
}

/// The model whose calibrated fit `model`'s latency starts from: its definition's
/// `latency_from`, or itself.
pub(super) fn fit_name(defined: &[DefinedModel], model: &str) -> String {
    let d = defined.iter().find(|d| d.name == model);
    d.and_then(|d| models::def_of(d).latency_from).unwrap_or_else(|| model.to_string())
}

/// The latency `model` starts from under `preset`: the fit of `fit_name` (at `draw`), then the
/// definition's own `[latency]` keys.
pub(super) fn latency_base(
    defined: &[DefinedModel],
    model: &str,
    preset: LatencyPreset,
    draw: Option<usize>,
    at: At,
) -> Result<LatencyParams, ConfigError> {
    let from = fit_name(defined, model);
    let base = latency_presets::params_draw(&from, preset, draw).unwrap_or_default();
    let def = defined.iter().find(|d| d.name == model).map(models::def_of);
    let Some(t) = def.and_then(|d| d.latency) else { return Ok(base) };
    let prefix = format!("models.{model}.latency.");
    let keys: LatencyKeys = read(&t, toml::Value::Table(t.clone()), at.origin, &prefix)?;
    latency_keys(keys, base, at.section(&prefix))
}

/// `[model_params]`' long-context keys over `base`'s offer: `long_context_window_tokens`
/// declares an offer (Sonnet 4 and 4.5 have one); its prices and threshold default to the
/// base's offer, else 2x / 1.5x above the standard window `window`. A price tier (an offer of
/// the standard window, always in use) follows the window.
pub(super) fn long_context(
    keys: (Option<Int<1>>, Option<Int<0>>, Option<Multiplier>, Option<Multiplier>),
    base: &ModelParams,
    window: u64,
) -> Option<crate::cache::LongContext> {
    let (long_window, threshold, input, output) = keys;
    let offer = base.long_context.as_ref();
    let tier = |l: &crate::cache::LongContext| {
        base.use_long_context && l.window_tokens == base.context_window_tokens
    };
    let offered = offer.map(|l| if tier(l) { window } else { l.window_tokens });
    let window_tokens = long_window.map(u64::from).or(offered)?;
    Some(crate::cache::LongContext {
        window_tokens,
        threshold_tokens: threshold
            .map(u64::from)
            .or(offer.map(|l| l.threshold_tokens))
            .unwrap_or(window),
        input_multiplier: input.get_or(offer.map_or(2.0, |l| l.input_multiplier)),
        output_multiplier: output.get_or(offer.map_or(1.5, |l| l.output_multiplier)),
    })
}
