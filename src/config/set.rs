//! `--set key=value` on a raw experiment table: the value is parsed as a TOML value, and
//! anything that is not one (`1h`, `fork_drop_tool(tool=Bash)`) is taken as a bare string.

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
    set_key(table, key, parse_set_value(value)).map_err(|e| match e {
        ConfigError::BadSet { reason, .. } => bad(&reason),
        other => other,
    })
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
    let parts: Vec<&str> = dotted.split('.').map(str::trim).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(bad(format!("`{dotted}` is not a dotted key")));
    }
    let (last, path) = parts.split_last().expect("split yields at least one part");
    let mut here = table;
    for (i, part) in path.iter().enumerate() {
        let entry =
            here.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        here = entry
            .as_table_mut()
            .ok_or_else(|| bad(format!("`{}` is a value, not a table", parts[..=i].join("."))))?;
    }
    here.insert(last.to_string(), value);
    Ok(())
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
    }
}
