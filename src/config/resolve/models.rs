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
use crate::config::file::LatencyKeys;
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
    models: Option<BTreeMap<String, ModelDef>>,
}

/// The definitions of a models file, each checked; errors name the file and the key.
pub fn read_models_file(path: &Path) -> Result<Vec<DefinedModel>, ConfigError> {
    let origin = path.display().to_string();
    let text =
        crate::config::dist_syntax::read_bounded(path, MAX_MODELS_FILE_BYTES, "a models file")
            .map_err(|source| ConfigError::Io { path: origin.clone(), source })?;
    let table = crate::config::parse_table(&text, &origin)?;
    let file: ModelsFile = read(&table, toml::Value::Table(table.clone()), &origin, "")?;
    checked(file.models.unwrap_or_default(), &origin)
}

/// Every definition of `defs` checked, as written in `origin`.
fn checked(
    defs: BTreeMap<String, ModelDef>,
    origin: &str,
) -> Result<Vec<DefinedModel>, ConfigError> {
    let mut out = Vec::with_capacity(defs.len());
    for (name, def) in defs {
        let prefix = format!("models.{name}.");
        let at = At { origin, prefix: &prefix };
        check_name(&name, At { origin, prefix: "" })?;
        models::params(&name, &def, at)?;
        models::check_latency(&def, at)?;
        if let Some(t) = &def.latency {
            let lat_prefix = format!("{prefix}latency.");
            let keys: LatencyKeys = read(t, toml::Value::Table(t.clone()), origin, &lat_prefix)?;
            latency_keys(keys, LatencyParams::default(), at.section(&lat_prefix))?;
        }
        out.push(DefinedModel { name, def });
    }
    Ok(out)
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
    own: Option<BTreeMap<String, ModelDef>>,
    models_file: Option<String>,
    at: At,
) -> Result<Vec<DefinedModel>, ConfigError> {
    let mut all = checked(own.unwrap_or_default(), at.origin)?;
    let Some(file) = models_file else { return Ok(all) };
    let path = Path::new(at.origin).with_file_name(&file);
    let from_file = read_models_file(&path).map_err(|e| match e {
        ConfigError::Io { .. } => at.bad_str("models_file", &file, e.to_string()),
        e => e,
    })?;
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
    let prefix = format!("models.{name}.");
    Some(models::params(name, &d.def, at.section(&prefix)))
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
    let natural = models::policy(&d.def);
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
pub(super) fn fit_name<'a>(defined: &'a [DefinedModel], model: &'a str) -> &'a str {
    let d = defined.iter().find(|d| d.name == model);
    d.and_then(|d| d.def.latency_from.as_deref()).unwrap_or(model)
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
    let base = latency_presets::params_draw(from, preset, draw).unwrap_or_default();
    let def = defined.iter().find(|d| d.name == model);
    let Some(t) = def.and_then(|d| d.def.latency.as_ref()) else { return Ok(base) };
    let prefix = format!("models.{model}.latency.");
    let keys: LatencyKeys = read(t, toml::Value::Table(t.clone()), at.origin, &prefix)?;
    latency_keys(keys, base, at.section(&prefix))
}
