//! The experiment's keys as the page sets them: every dotted key of the experiment file's
//! types (`config::file::ExperimentFile`, walked through serde, so a key added to the file is
//! on the page without a page edit), the few that name a file or the grid left out, each in a
//! section of the page with its starting value in `--set` syntax.

use std::sync::OnceLock;

use crate::config::keys::schema_keys;

/// Keys no request may set, and why: a request never names a file on the server, and the
/// page sweeps one key of its own instead of the file's grid.
pub const NOT_SETTABLE: [(&str, &str); 3] = [
    ("latency.from", "it names a file (serve --latency FILE gives the page's calibration files)"),
    ("models_file", "it names a file"),
    ("sweep", "the page sweeps one key at a time (sweep_key, sweep_values)"),
];

/// Every dotted key of the experiment file, in key order (`schema_keys`, computed once).
pub fn keys() -> &'static [String] {
    static KEYS: OnceLock<Vec<String>> = OnceLock::new();
    KEYS.get_or_init(schema_keys)
}

/// The schema key `key` sets: the key itself, or the map or table it is an entry of
/// (`models.mine.input_usd_per_mtok` sets `models`, `cache.ttl_by_kind.fork` sets
/// `cache.ttl_by_kind`). `None` when the schema has no such key.
pub fn leaf_of(key: &str) -> Option<&'static str> {
    let key = key.trim();
    keys().iter().map(String::as_str).find(|leaf| {
        key == *leaf || key.strip_prefix(leaf).is_some_and(|rest| rest.starts_with('.'))
    })
}

/// Why `leaf` cannot be set from the page, if it cannot.
pub fn refusal(leaf: &str) -> Option<&'static str> {
    NOT_SETTABLE.iter().find(|(k, _)| *k == leaf).map(|(_, why)| *why)
}

/// The page's section of a key: its file section, the top-level keys under "Experiment",
/// the workload's turn and brief keys apart from its launch keys.
pub fn section(key: &str) -> &'static str {
    let (head, rest) = key.split_once('.').unwrap_or(("", key));
    match head {
        "" => "Experiment",
        "workload" if TURN_PREFIXES.iter().any(|p| rest.starts_with(p)) => "Turns and brief",
        "workload" => "Workload",
        "cache" => "Cache",
        "model_params" | "models" => "Model and prices",
        "latency" => "Latency",
        "rate_limits" => "Rate limits",
        "overload" => "Overload (529 responses)",
        "server" => "Self-hosted server (vllm, sglang)",
        "openai" => "Provider: OpenAI",
        "gemini" => "Provider: Gemini",
        "limits" => "Limits",
        "report" | "plot" => "Report and plot",
        _ => "Other",
    }
}

/// The page's sections, in the order shown: the workload first, the bookkeeping last.
pub const SECTIONS: [&str; 14] = [
    "Workload",
    "Turns and brief",
    "Experiment",
    "Cache",
    "Model and prices",
    "Latency",
    "Rate limits",
    "Overload (529 responses)",
    "Self-hosted server (vllm, sglang)",
    "Provider: OpenAI",
    "Provider: Gemini",
    "Limits",
    "Report and plot",
    "Other",
];

/// The workload keys of an agent's turns and its brief (the section "Turns and brief").
const TURN_PREFIXES: [&str; 8] =
    ["brief", "task", "turn", "output", "tool", "denied", "thinking", "parent_thinking"];

/// The settable keys with their section and starting value, by section (`SECTIONS`) then
/// key: the value as the file wrote it, else as the resolved experiment renders it
/// (`rendered`), else `None` (the key's default applies and the experiment does not write it).
pub fn starting_values(raw: &toml::Table, rendered: &toml::Table) -> Vec<serde_json::Value> {
    let mut settable: Vec<&String> = keys().iter().filter(|k| refusal(k).is_none()).collect();
    settable.sort_by_key(|k| (SECTIONS.iter().position(|s| *s == section(k)), k.as_str()));
    settable
        .into_iter()
        .map(|k| {
            let value = lookup(raw, k).or_else(|| lookup(rendered, k)).map(set_text);
            serde_json::json!({"key": k, "section": section(k), "value": value})
        })
        .collect()
}

/// The value at dotted `key` of `table`.
fn lookup<'a>(table: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let (first, rest) = key.split_once('.').unwrap_or((key, ""));
    let v = table.get(first)?;
    match rest {
        "" => Some(v),
        rest => lookup(v.as_table()?, rest),
    }
}

/// `v` as a `--set` value: a string bare, anything else as TOML writes it.
pub fn set_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_is_named_and_nested_keys_are_found() {
        let keys = keys();
        assert!(keys.len() > 100, "{keys:?}");
        for k in keys {
            assert_ne!(section(k), "Other", "{k} has no section on the page");
            assert!(SECTIONS.contains(&section(k)), "{k}: its section is in the order");
        }
        assert_eq!(leaf_of("cache.ttl_by_kind.fork"), Some("cache.ttl_by_kind"));
        assert_eq!(leaf_of("models.mine.input_usd_per_mtok"), Some("models"));
        assert_eq!(leaf_of("workload.agents"), Some("workload.agents"));
        assert_eq!(leaf_of("workload.agentsx"), None);
        assert!(refusal("latency.from").is_some() && refusal("workload.agents").is_none());
    }
}
