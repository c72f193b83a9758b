//! Setting a sweep axis's value into an experiment table: a dotted key (`workload.agents`), or
//! a strategy parameter `strategy.<name>.<param>` (e.g. `strategy.wait_first.max_wait`), which
//! rewrites that parameter in every listed strategy of that name (`max_wait` alone is short for
//! `strategy.wait_first.max_wait`, `interval` for `strategy.stagger.interval`: the one table of
//! short names, `config::names::STRATEGY_PARAMS`, that `--set` and `tune --param` share).
//!
//! Knows the strategy label syntax `name(k=v, ...)` only as text; whether the result is a valid
//! experiment is decided by the resolver.

pub use crate::config::names::canonical_key;
use crate::config::names::set_param_in;

/// Why an axis value cannot be set (the key is named in full).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("`{key}` is not a dotted key")]
    NotDotted { key: String },
    #[error("`{key}`: `{part}` is not a table")]
    NotATable { key: String, part: String },
    #[error("`strategy.{rest}`: expected `strategy.<name>.<param>`")]
    NotAStrategyParam { rest: String },
    #[error("`strategy.{rest}`: the experiment lists no `strategies`")]
    NoStrategies { rest: String },
    #[error("`strategy.{rest}`: no `{name}` strategy in `strategies`")]
    NoSuchStrategy { rest: String, name: String },
}

/// Set `key` to `value` in `table`, creating intermediate tables.
pub fn set_value(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), KeyError> {
    let key = canonical_key(key);
    if let Some(rest) = key.strip_prefix("strategy.") {
        return set_strategy_param(table, rest, &value);
    }
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(KeyError::NotDotted { key });
    }
    let (last, path) = parts.split_last().expect("split yields one part");
    let mut t = table;
    for p in path {
        let entry =
            t.entry(p.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry
            .as_table_mut()
            .ok_or_else(|| KeyError::NotATable { key: key.clone(), part: p.to_string() })?;
    }
    t.insert(last.to_string(), value);
    Ok(())
}

/// What `set_value` replaced, so a table can be set value after value and put back each time
/// instead of cloned for each (`Undo::restore`).
#[derive(Debug)]
pub struct Undo {
    /// The path of the entry to put back: the key set, or the first table the set created.
    path: Vec<String>,
    /// Its value before (`None`: it did not exist).
    old: Option<toml::Value>,
}

/// `set_value`, returning what puts `table` back as it was.
pub fn set_value_undoable(
    table: &mut toml::Table,
    key: &str,
    value: toml::Value,
) -> Result<Undo, KeyError> {
    let full = canonical_key(key);
    let parts: Vec<&str> = match full.strip_prefix("strategy.") {
        Some(_) => vec!["strategies"],
        None => full.split('.').collect(),
    };
    let mut cut = parts.len();
    let mut old = None;
    let mut t = &*table;
    for (depth, part) in parts.iter().enumerate() {
        match t.get(*part) {
            None => {
                cut = depth + 1;
                break;
            }
            Some(v) if depth + 1 == parts.len() => old = Some(v.clone()),
            Some(toml::Value::Table(sub)) => t = sub,
            // Not a table: `set_value` refuses it below.
            Some(_) => break,
        }
    }
    set_value(table, key, value)?;
    Ok(Undo { path: parts[..cut].iter().map(|p| p.to_string()).collect(), old })
}

impl Undo {
    /// Put back what the set replaced (the table must be as the set left it).
    pub fn restore(self, table: &mut toml::Table) {
        let (last, parents) = self.path.split_last().expect("a key has a part");
        let mut t = table;
        for p in parents {
            t = t.get_mut(p).and_then(toml::Value::as_table_mut).expect("the set made it a table");
        }
        match self.old {
            Some(v) => t.insert(last.clone(), v),
            None => t.remove(last),
        };
    }
}

fn set_strategy_param(
    table: &mut toml::Table,
    rest: &str,
    v: &toml::Value,
) -> Result<(), KeyError> {
    let (name, param) =
        rest.split_once('.').ok_or_else(|| KeyError::NotAStrategyParam { rest: rest.into() })?;
    let text = match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let list = table
        .get_mut("strategies")
        .and_then(|s| s.as_array_mut())
        .ok_or_else(|| KeyError::NoStrategies { rest: rest.into() })?;
    if set_param_in(list, name, param, &text) {
        Ok(())
    } else {
        Err(KeyError::NoSuchStrategy { rest: rest.into(), name: name.into() })
    }
}
