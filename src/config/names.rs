//! Strategy and agent-kind names: `wait_first(max_wait=5s)` <-> `Strategy`, `fork_drop_tool(tool=Bash)`
//! <-> `AgentKind`. Canonical labels round-trip through the parsers; they name result columns
//! and files, so they never change for a given value.

use super::call::{bind, parse_call, Call, CallError};
use super::experiment::{AgentKind, Release, Strategy};
use crate::time::{exact_duration, parse_duration_us, DurationError, US_PER_S};

/// Why a strategy or agent-kind name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("unknown release `{0}` (use on_ready or timer)")]
    UnknownRelease(String),
    /// `hint` is empty or `; did you mean `..`?`.
    #[error("unknown {what} `{name}` (known: {known}){hint}")]
    Unknown { what: &'static str, name: String, known: String, hint: String },
    #[error("`{0}` takes no arguments")]
    NoArguments(String),
    #[error("`{name}`: {source}")]
    Duration { name: String, source: DurationError },
    #[error("`{name}`: `{word}` is not a name")]
    NotAName { name: String, word: String },
}

/// Claude Code's hold cap, `CLAUDE_CODE_WORKFLOW_PREFIX_STAGGER_MS` = 5000 (the Claude Code docs (code.claude.com/docs/en/workflows)).
pub const DEFAULT_MAX_WAIT_US: u64 = 5 * US_PER_S;
/// `stagger` without an interval: 1 s (an assumption, matching the default experiment).
pub const DEFAULT_STAGGER_US: u64 = US_PER_S;
/// The tool `fork_drop_tool` / `fork_deny_at_call` name when none is given (the seed's example).
pub const DEFAULT_TOOL: &str = "Bash";
/// The model `fork_other_model` switches to when none is given.
pub const DEFAULT_OTHER_MODEL: &str = "claude-haiku-4.5";

pub const STRATEGY_NAMES: [&str; 5] = ["eager", "wait_first", "stagger", "sequential", "prewarm"];
/// The agent kinds, without parameters (`workload.kind`, `[cache.ttl_by_kind]`).
pub const KIND_NAMES: [&str; 7] = [
    "fork",
    "subagent",
    "btw",
    "fork_drop_tool",
    "fork_edit_system",
    "fork_other_model",
    "fork_deny_at_call",
];

/// The strategy parameters by their short names: one table for `--set`, `[sweep]` keys and
/// `tune --param`, which accept each parameter as `max_wait`, `wait_first.max_wait` and
/// `strategy.wait_first.max_wait` alike.
pub const STRATEGY_PARAMS: [(&str, &str); 2] =
    [("max_wait", "wait_first.max_wait"), ("interval", "stagger.interval")];

/// Every spelling of the strategy parameters: short, `<strategy>.<param>`, full.
pub fn strategy_param_spellings() -> Vec<String> {
    let each = |(short, long): &(&str, &str)| {
        [short.to_string(), long.to_string(), format!("strategy.{long}")]
    };
    STRATEGY_PARAMS.iter().flat_map(each).collect()
}

/// The full form of a key: `max_wait` and `wait_first.max_wait` ->
/// `strategy.wait_first.max_wait` (a strategy's name first is its parameter); any other key
/// as it is.
pub fn canonical_key(key: &str) -> String {
    if let Some((_, long)) = STRATEGY_PARAMS.iter().find(|(short, _)| *short == key) {
        return format!("strategy.{long}");
    }
    match key.split_once('.') {
        Some((name, _)) if STRATEGY_NAMES.contains(&name) => format!("strategy.{key}"),
        _ => key.to_string(),
    }
}

/// `label` with `param=value` set, if `label` is a strategy named `name` (the label as text:
/// whether the result parses is the resolver's to say).
pub fn with_param(label: &str, name: &str, param: &str, value: &str) -> Option<String> {
    let label = label.trim();
    let (head, args) = match label.split_once('(') {
        Some((h, a)) => (h.trim(), a.trim_end().strip_suffix(')')?),
        None => (label, ""),
    };
    if head != name {
        return None;
    }
    let mut pairs: Vec<(String, String)> = args
        .split(',')
        .filter(|a| !a.trim().is_empty())
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (a.trim().to_string(), String::new()),
        })
        .collect();
    match pairs.iter_mut().find(|(k, _)| k == param) {
        Some(p) => p.1 = value.to_string(),
        None => pairs.insert(0, (param.to_string(), value.to_string())),
    }
    let args: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Some(format!("{name}({})", args.join(", ")))
}

/// Set `param=value` in every strategy of `list` named `name`; strategies that become the same
/// label are kept once, at the first's place (`max_wait=3s` over `wait_first(max_wait=2s)` and
/// `wait_first(max_wait=5s)` runs one `wait_first(max_wait=3s)`). Whether one was found.
pub fn set_param_in(list: &mut Vec<toml::Value>, name: &str, param: &str, value: &str) -> bool {
    let mut found = false;
    for s in list.iter_mut() {
        if let Some(new) = s.as_str().and_then(|label| with_param(label, name, param, value)) {
            *s = toml::Value::String(new);
            found = true;
        }
    }
    let mut seen = Vec::new();
    list.retain(|s| match s.as_str() {
        Some(label) if seen.contains(&label.to_string()) => false,
        Some(label) => {
            seen.push(label.to_string());
            true
        }
        None => true,
    });
    found
}

/// The known key closest to `key`, an unknown dotted key, outside its own section: a
/// strategy parameter's spelling a letter or two away (`max_wiat`), or the key among `known`
/// (every dotted key, sorted) with the same last part (`ttl` -> `cache.ttl`, `workload.horizon`
/// -> `limits.horizon`), else a last part a letter or two away.
pub fn key_elsewhere(key: &str, known: &[String]) -> Option<String> {
    let spellings = strategy_param_spellings();
    if let Some(s) = super::call::did_you_mean(key, spellings.iter().map(String::as_str)) {
        return Some(s.to_string());
    }
    let last_of = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let last = last_of(key);
    if let Some(same) = known.iter().find(|k| last_of(k) == last) {
        return Some(same.clone());
    }
    let lasts: Vec<String> = known.iter().map(|k| last_of(k)).collect();
    let close = super::call::did_you_mean(&last, lasts.iter().map(String::as_str))?;
    known.iter().find(|k| last_of(k) == close).cloned()
}

/// Parse `eager`, `wait_first(max_wait=5s[, release=on_ready|timer])`, `stagger(interval=1s)`,
/// `sequential`, `prewarm`.
pub fn parse_strategy(text: &str) -> Result<Strategy, NameError> {
    let call = parse_call(text)?;
    let s = match call.name {
        "eager" => no_args(&call, Strategy::Eager)?,
        "sequential" => no_args(&call, Strategy::Sequential)?,
        "prewarm" => no_args(&call, Strategy::Prewarm)?,
        "wait_first" => {
            let a = bind(&call, &["max_wait", "release"])?;
            let max_wait_us = duration_or(a[0], DEFAULT_MAX_WAIT_US, "max_wait")?;
            let release = match a[1] {
                None | Some("on_ready") => Release::OnReady,
                Some("timer") => Release::Timer,
                Some(other) => return Err(NameError::UnknownRelease(other.to_string())),
            };
            Strategy::WaitFirst { max_wait_us, release }
        }
        "stagger" => {
            let a = bind(&call, &["interval"])?;
            Strategy::Stagger { interval_us: duration_or(a[0], DEFAULT_STAGGER_US, "interval")? }
        }
        other => return Err(unknown("strategy", other, &STRATEGY_NAMES)),
    };
    Ok(s)
}

/// The canonical label: `eager`, `wait_first(max_wait=5s)`, `wait_first(max_wait=5s, release=timer)`,
/// `stagger(interval=1s)`, `sequential`, `prewarm`.
pub fn strategy_label(s: &Strategy) -> String {
    match s {
        Strategy::Eager => "eager".to_string(),
        Strategy::WaitFirst { max_wait_us, release: Release::OnReady } => {
            format!("wait_first(max_wait={})", exact_duration(*max_wait_us))
        }
        Strategy::WaitFirst { max_wait_us, release: Release::Timer } => {
            format!("wait_first(max_wait={}, release=timer)", exact_duration(*max_wait_us))
        }
        Strategy::Stagger { interval_us } => {
            format!("stagger(interval={})", exact_duration(*interval_us))
        }
        Strategy::Sequential => "sequential".to_string(),
        Strategy::Prewarm => "prewarm".to_string(),
    }
}

/// Parse an agent kind: `fork`, `subagent`, `btw`, `fork_drop_tool(tool=Bash)`,
/// `fork_edit_system`, `fork_other_model(model=claude-haiku-4.5)`, `fork_deny_at_call(tool=Edit)`.
/// The model name is checked against the presets by the resolver, not here.
pub fn parse_kind(text: &str) -> Result<AgentKind, NameError> {
    let call = parse_call(text)?;
    let k = match call.name {
        "fork" => no_args(&call, AgentKind::Fork)?,
        "subagent" => no_args(&call, AgentKind::Subagent)?,
        "btw" => no_args(&call, AgentKind::Btw)?,
        "fork_edit_system" => no_args(&call, AgentKind::ForkEditSystem)?,
        "fork_drop_tool" => {
            AgentKind::ForkDropTool { tool: word_arg(&call, "tool", DEFAULT_TOOL)? }
        }
        "fork_deny_at_call" => {
            AgentKind::ForkDenyAtCall { tool: word_arg(&call, "tool", DEFAULT_TOOL)? }
        }
        "fork_other_model" => {
            AgentKind::ForkOtherModel { model: word_arg(&call, "model", DEFAULT_OTHER_MODEL)? }
        }
        other => return Err(unknown("agent kind", other, &KIND_NAMES)),
    };
    Ok(k)
}

/// The canonical label of a kind (parameters always written out).
pub fn kind_label(k: &AgentKind) -> String {
    match k {
        AgentKind::Fork => "fork".to_string(),
        AgentKind::Subagent => "subagent".to_string(),
        AgentKind::Btw => "btw".to_string(),
        AgentKind::ForkDropTool { tool } => format!("fork_drop_tool(tool={tool})"),
        AgentKind::ForkEditSystem => "fork_edit_system".to_string(),
        AgentKind::ForkOtherModel { model } => format!("fork_other_model(model={model})"),
        AgentKind::ForkDenyAtCall { tool } => format!("fork_deny_at_call(tool={tool})"),
    }
}

fn no_args<T>(call: &Call<'_>, value: T) -> Result<T, NameError> {
    if call.args.is_empty() {
        Ok(value)
    } else {
        Err(NameError::NoArguments(call.name.to_string()))
    }
}

fn duration_or(text: Option<&str>, default_us: u64, name: &str) -> Result<u64, NameError> {
    match text {
        None => Ok(default_us),
        Some(t) => parse_duration_us(t)
            .map_err(|source| NameError::Duration { name: name.to_string(), source }),
    }
}

fn word_arg(call: &Call<'_>, name: &str, default: &str) -> Result<String, NameError> {
    let a = bind(call, &[name])?;
    let word = a[0].unwrap_or(default).trim().trim_matches(['"', '\'']);
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c)) {
        return Err(NameError::NotAName { name: name.to_string(), word: word.to_string() });
    }
    Ok(word.to_string())
}

fn unknown(what: &'static str, name: &str, known: &[&str]) -> NameError {
    let hint = super::call::did_you_mean(name, known.iter().copied())
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default();
    NameError::Unknown { what, name: name.to_string(), known: known.join(", "), hint }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for label in [
            "fork",
            "subagent",
            "btw",
            "fork_drop_tool(tool=Bash)",
            "fork_edit_system",
            "fork_other_model(model=claude-haiku-4.5)",
            "fork_deny_at_call(tool=Edit)",
        ] {
            assert_eq!(kind_label(&parse_kind(label).unwrap()), label);
        }
        assert_eq!(
            parse_kind("fork_drop_tool").unwrap(),
            AgentKind::ForkDropTool { tool: "Bash".into() }
        );
        assert!(parse_kind("spoon").is_err());
    }

    #[test]
    fn short_names_are_strategy_parameters() {
        for k in ["max_wait", "wait_first.max_wait", "strategy.wait_first.max_wait"] {
            assert_eq!(canonical_key(k), "strategy.wait_first.max_wait");
        }
        assert_eq!(canonical_key("interval"), "strategy.stagger.interval");
        assert_eq!(canonical_key("workload.agents"), "workload.agents");
        let label = with_param("wait_first(max_wait=2s)", "wait_first", "max_wait", "3s");
        assert_eq!(label.as_deref(), Some("wait_first(max_wait=3s)"));
        assert_eq!(with_param("eager", "wait_first", "max_wait", "3s"), None);
        let mut list: Vec<toml::Value> =
            ["eager", "wait_first(max_wait=2s)", "wait_first(max_wait=5s)", "prewarm"]
                .map(toml::Value::from)
                .to_vec();
        assert!(set_param_in(&mut list, "wait_first", "max_wait", "3s"));
        let want = ["eager", "wait_first(max_wait=3s)", "prewarm"].map(toml::Value::from);
        assert_eq!(list, want);
        assert!(!set_param_in(&mut list, "stagger", "interval", "1s"));
    }

    #[test]
    fn an_unknown_key_finds_its_section() {
        let known = ["cache.ttl", "limits.horizon", "workload.agents"].map(String::from);
        assert_eq!(key_elsewhere("max_wiat", &known).as_deref(), Some("max_wait"));
        assert_eq!(key_elsewhere("ttl", &known).as_deref(), Some("cache.ttl"));
        assert_eq!(key_elsewhere("workload.horizon", &known).as_deref(), Some("limits.horizon"));
        assert_eq!(key_elsewhere("agentz", &known).as_deref(), Some("workload.agents"));
        assert_eq!(key_elsewhere("zzzzzzzz", &known), None);
    }
}
