//! `--set key=value` on a raw experiment table: the value is parsed as a TOML value, and
//! anything that is not one (`1h`, `fork_drop_tool(tool=Bash)`) is taken as a bare string.
//! A strategy parameter by any of the names `tune --param` and `[sweep]` take (`max_wait`,
//! `wait_first.max_wait`, `strategy.wait_first.max_wait`: `names::STRATEGY_PARAMS`) is set in
//! every listed strategy of that name.

use super::names::{canonical_key, set_param_in};
use super::ConfigError;

/// Apply one `dotted.key=value` assignment.
pub fn apply_set(table: &mut toml::Table, assignment: &str) -> Result<(), ConfigError> {
    let bad = |reason: &str| ConfigError::BadSet {
        assignment: assignment.to_string(),
        reason: reason.to_string(),
    };
    let (key, value) = assignment.split_once('=').ok_or_else(|| bad("expected key=value"))?;
    let (key, value) = (key.trim(), value.trim());
    if value.is_empty() {
        return Err(bad("the value is empty"));
    }
    let value = parse_set_value(value);
    if let Some(rest) = canonical_key(key).strip_prefix("strategy.") {
        return set_strategy_param(table, rest, &value).map_err(|reason| bad(&reason));
    }
    set_key(table, key, value).map_err(|e| match e {
        ConfigError::BadSet { reason, .. } => bad(&reason),
        other => other,
    })
}

/// Set the parameter `rest` (`wait_first.max_wait`) to `value` in every strategy of
/// `strategies` of that name (the default strategies when the table lists none); those that
/// become the same are run once.
fn set_strategy_param(
    table: &mut toml::Table,
    rest: &str,
    value: &toml::Value,
) -> Result<(), String> {
    let Some((name, param)) = rest.split_once('.').filter(|(_, p)| !p.contains('.')) else {
        return Err(format!("`strategy.{rest}`: expected `<strategy>.<param>`"));
    };
    let text = match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let defaults = || super::resolve::DEFAULT_STRATEGIES.map(toml::Value::from).to_vec();
    let list = table.entry("strategies").or_insert_with(|| toml::Value::Array(defaults()));
    let list = list.as_array_mut().ok_or("`strategies` is not a list of strategies")?;
    if set_param_in(list, name, param, &text) {
        return Ok(());
    }
    let labels: Vec<&str> = list.iter().filter_map(toml::Value::as_str).collect();
    Err(format!("no `{name}` strategy in `strategies` ({})", super::capped(&labels.join(", "))))
}

/// A TOML value if `text` is one, else the text as a string.
fn parse_set_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or_else(|| text.into()),
        _ => toml::Value::String(text.to_string()),
    }
}

/// Set `dotted` (e.g. `workload.agents`) to `value`, creating tables on the way.
pub fn set_key(
    table: &mut toml::Table,
    dotted: &str,
    value: toml::Value,
) -> Result<(), ConfigError> {
    let bad = |reason: String| ConfigError::BadSet { assignment: dotted.to_string(), reason };
    let parts = key_parts(dotted).ok_or_else(|| bad("not a dotted key".to_string()))?;
    let (last, path) = parts.split_last().expect("a key has at least one part");
    let mut here = table;
    for (i, part) in path.iter().enumerate() {
        let entry =
            here.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        here = entry.as_table_mut().ok_or_else(|| {
            bad(format!("`{}` is a value, not a table", super::capped(&parts[..=i].join("."))))
        })?;
    }
    here.insert(last.to_string(), value);
    Ok(())
}

/// The parts of a TOML dotted key, quotes honoured: `sweep."workload.agents"` is
/// `["sweep", "workload.agents"]` (the one key a `[sweep]` axis is written as), not three
/// parts. `None` if `dotted` is not a key TOML accepts (`a..b`, an empty part).
fn key_parts(dotted: &str) -> Option<Vec<String>> {
    let doc: toml::Table = format!("{dotted} = 0").parse().ok()?;
    let mut parts = Vec::new();
    let mut here = &doc;
    loop {
        let mut entries = here.iter();
        let (key, value) = entries.next()?;
        if entries.next().is_some() {
            return None;
        }
        parts.push(key.clone());
        match value {
            toml::Value::Table(sub) => here = sub,
            _ => return Some(parts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_toml_or_bare_strings() {
        let mut t = toml::Table::new();
        apply_set(&mut t, "workload.agents=16").unwrap();
        apply_set(&mut t, "cache.ttl=1h").unwrap();
        apply_set(&mut t, r#"strategies=["eager","wait_first(max_wait=2s)"]"#).unwrap();
        apply_set(&mut t, "workload.kind=fork_drop_tool(tool=Bash)").unwrap();
        assert_eq!(t["workload"]["agents"].as_integer(), Some(16));
        assert_eq!(t["cache"]["ttl"].as_str(), Some("1h"));
        assert_eq!(t["strategies"].as_array().map(Vec::len), Some(2));
        assert_eq!(t["workload"]["kind"].as_str(), Some("fork_drop_tool(tool=Bash)"));
    }

    #[test]
    fn refuses_malformed_assignments() {
        let mut t = toml::Table::new();
        assert!(apply_set(&mut t, "agents").is_err());
        assert!(apply_set(&mut t, "a..b=1").is_err());
        assert!(apply_set(&mut t, "x=").is_err());
        apply_set(&mut t, "seed=1").unwrap();
        assert!(apply_set(&mut t, "seed.x=1").is_err());
        assert!(apply_set(&mut t, "a.=1").is_err());
        assert!(apply_set(&mut t, "a b=1").is_err());
    }

    #[test]
    fn a_quoted_part_is_one_key_as_in_toml() {
        // A `[sweep]` axis is one key with dots in it: `--set` replaces it, not a new axis.
        let mut t: toml::Table = "[sweep]\n\"workload.agents\" = [1, 2]\n".parse().unwrap();
        apply_set(&mut t, r#"sweep."workload.agents"=[4, 8, 16]"#).unwrap();
        apply_set(&mut t, "sweep . 'cache.ttl' = ['5m', '1h']").unwrap();
        let want: toml::Table =
            "[sweep]\n\"workload.agents\" = [4, 8, 16]\n\"cache.ttl\" = [\"5m\", \"1h\"]\n"
                .parse()
                .unwrap();
        assert_eq!(t, want);
        apply_set(&mut t, "workload . agents = 3").unwrap();
        assert_eq!(t["workload"]["agents"].as_integer(), Some(3));
    }
}
