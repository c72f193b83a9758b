//! Experiment files: the resolved experiment the model runs, parsing from TOML, `--set`
//! overrides on dotted keys, defaults and validation.
//!
//! Two stages: `parse_table` (TOML syntax only; `apply_set` edits the raw table) then `resolve`
//! (the table read into the serde types of `file.rs`, whose value types in `fields.rs` check
//! each value; then each section's `validate` defaults it and checks it against the others, and
//! converts it to base units). `render` writes a resolved experiment back through the same
//! types. The raw table keeps `[sweep]`, which `resolve` ignores and `sweep_table` hands back
//! to the sweep code.
//!
//! The types in `experiment.rs` are read by model, exec, sweep, report and replay; they hold
//! base units (microseconds, tokens), never the text the user typed.

pub mod call;
pub mod dist_syntax;
mod error;
pub mod experiment;
mod fields;
pub mod file;
pub mod keys;
pub mod latency_file;
pub mod latency_origin;
pub mod latency_presets;
pub mod model_ids;
pub mod models;
pub mod names;
pub mod presets;
pub mod presets_hosted;
mod render;
mod resolve;
#[cfg(feature = "cli")]
pub mod schema;
pub mod server;
mod set;

use std::path::Path;

pub use crate::cache::params::*;
pub use crate::dist::Quantity;
#[cfg(any(test, feature = "internals"))]
pub use dist_syntax::parse_dist_in;
pub use dist_syntax::{dist_label, parse_dist, DistError};
pub use error::{capped, ConfigError};
pub use experiment::*;
pub use names::{kind_label, parse_strategy, strategy_label};
pub use presets::{preset, preset_for, preset_for_api_id, preset_names};
pub use render::render;
pub use resolve::{check_changed, lookup, read_models_file, resolve};
pub use server::{Router, ServerParams, Sharing};
pub use set::apply_set;

/// The largest experiment file read (they are a few KiB; a file without end, like
/// `/dev/zero`, is refused at this size instead of filling memory).
pub const MAX_EXPERIMENT_BYTES: u64 = 16 << 20;

/// The text of an experiment file, refused past `MAX_EXPERIMENT_BYTES`.
pub fn read_experiment(path: &Path) -> std::io::Result<String> {
    dist_syntax::read_bounded(path, MAX_EXPERIMENT_BYTES, "an experiment file")
}

/// The embedded default experiment (`prefixsim` with no command runs it).
pub const DEFAULT_EXPERIMENT: &str = include_str!("../../experiments/default.toml");
/// The origin string used in errors about the embedded default.
pub const DEFAULT_ORIGIN: &str = "<default experiment>";

/// Parse TOML text into a raw table (syntax only). When the table has no `question` key and
/// the text opens with a `#` comment line, that comment becomes the question.
pub fn parse_table(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ConfigError::Syntax { origin: origin.to_string(), message: error::toml_syntax(&e, text) }
    })?;
    if !table.contains_key("question") {
        if let Some(comment) = text.lines().next().and_then(|l| l.trim().strip_prefix('#')) {
            let q = comment.trim();
            if !q.is_empty() {
                table.insert("question".into(), toml::Value::String(q.to_string()));
            }
        }
    }
    Ok(table)
}

/// Read `path`, apply the `--set` assignments in order, and resolve. Returns the raw table
/// too. For tests and benchmarks (the product loads through `api::Experiment`).
#[cfg(any(test, feature = "internals"))]
pub fn load(path: &Path, sets: &[String]) -> Result<(toml::Table, ExperimentSpec), ConfigError> {
    let origin = path.display().to_string();
    let text =
        read_experiment(path).map_err(|source| ConfigError::Io { path: origin.clone(), source })?;
    let mut table = parse_table(&text, &origin)?;
    for s in sets {
        apply_set(&mut table, s)?;
    }
    let exp = resolve(&table, &origin).map_err(|e| e.blame_set(sets))?;
    Ok((table, exp))
}

/// The default experiment with `--set` assignments applied (for tests and benchmarks).
#[cfg(any(test, feature = "internals"))]
pub fn load_default(sets: &[String]) -> Result<(toml::Table, ExperimentSpec), ConfigError> {
    let mut table = parse_table(DEFAULT_EXPERIMENT, DEFAULT_ORIGIN)?;
    for s in sets {
        apply_set(&mut table, s)?;
    }
    let exp = resolve(&table, DEFAULT_ORIGIN).map_err(|e| e.blame_set(sets))?;
    Ok((table, exp))
}

/// The raw `[sweep]` table, if the file has one (`resolve` ignores it).
pub fn sweep_table(table: &toml::Table) -> Option<&toml::Table> {
    table.get("sweep").and_then(toml::Value::as_table)
}

/// A table's values by dotted key, nested tables flattened (`[sweep] workload.agents = [..]`
/// and `"workload.agents" = [..]` both give `workload.agents`), in the table's key order.
pub fn flatten_keys(table: &toml::Table) -> Vec<(String, &toml::Value)> {
    let mut out = Vec::new();
    flatten_into(table, "", &mut out);
    out
}

fn flatten_into<'t>(
    table: &'t toml::Table,
    prefix: &str,
    out: &mut Vec<(String, &'t toml::Value)>,
) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(t) => flatten_into(t, &format!("{key}."), out),
            _ => out.push((key, v)),
        }
    }
}
