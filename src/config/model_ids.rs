//! API model ids to preset names: the one place that knows how Anthropic spells a model
//! (`claude-sonnet-4-5-20250929`, `claude-sonnet-4-5`, `claude-3-5-haiku-latest`, a Bedrock
//! `anthropic.claude-opus-4-1-20250805-v1:0`, a Vertex `claude-opus-4-1@20250805`) and how our
//! presets are named (`claude-sonnet-4.5`, `claude-opus-4.1`, `claude-haiku-3.5`).
//!
//! Pure string work against a list of preset names; knows nothing of prices or latency.

/// The name among `names` that `id` names: the name itself, or an API model id. Rules, in
/// order:
/// 1. drop a platform wrapper: a Bedrock prefix up to `anthropic.` and a `-vN:M` suffix, a
///    Vertex `@YYYYMMDD` suffix;
/// 2. drop a trailing `-YYYYMMDD` snapshot date or `-latest`;
/// 3. the 2024 order `claude-3-5-haiku` becomes `claude-haiku-3-5`;
/// 4. the `-` between two trailing version numbers becomes `.` (`claude-opus-4-1` ->
///    `claude-opus-4.1`), and an alias `-0` minor names the major (`claude-sonnet-4-0` ->
///    `claude-sonnet-4`);
/// 5. the result must be one of `names`, else `None`.
pub fn name_for_api_id(id: &str, names: &[&'static str]) -> Option<&'static str> {
    let find = |name: &str| names.iter().copied().find(|n| *n == name);
    let id = id.trim();
    if let Some(name) = find(id) {
        return Some(name);
    }
    let id = strip_platform(id);
    let id = strip_date(id);
    let id = family_first(id);
    if let Some(name) = find(&id) {
        return Some(name);
    }
    let (base, minor) = split_version(&id)?;
    let dotted = format!("{base}.{minor}");
    find(&dotted).or_else(|| if minor == "0" { find(base) } else { None })
}

/// `us.anthropic.claude-x-v1:0` -> `claude-x`; `claude-x@20250805` -> `claude-x`.
fn strip_platform(id: &str) -> &str {
    let id = id.rsplit_once("anthropic.").map_or(id, |(_, rest)| rest);
    let id = id.split_once('@').map_or(id, |(head, _)| head);
    match id.rsplit_once("-v") {
        Some((head, tail))
            if tail.split(':').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
        {
            head
        }
        _ => id,
    }
}

/// Drop a trailing `-YYYYMMDD` or `-latest`.
fn strip_date(id: &str) -> &str {
    if let Some(head) = id.strip_suffix("-latest") {
        return head;
    }
    match id.rsplit_once('-') {
        Some((head, tail)) if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    }
}

/// `claude-3-5-haiku` -> `claude-haiku-3-5`; `claude-3-opus` -> `claude-opus-3`; else as is.
fn family_first(id: &str) -> String {
    let parts: Vec<&str> = id.split('-').collect();
    let is_num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match parts.as_slice() {
        ["claude", major, minor, family] if is_num(major) && is_num(minor) && !is_num(family) => {
            format!("claude-{family}-{major}-{minor}")
        }
        ["claude", major, family] if is_num(major) && !is_num(family) => {
            format!("claude-{family}-{major}")
        }
        _ => id.to_string(),
    }
}

/// `claude-opus-4-1` -> (`claude-opus-4`, `1`) when the id ends in two version numbers.
fn split_version(id: &str) -> Option<(&str, &str)> {
    let (base, minor) = id.rsplit_once('-')?;
    let major = base.rsplit_once('-')?.1;
    let is_num = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    (is_num(major) && is_num(minor)).then_some((base, minor))
}

/// Dated snapshot ids the API documents for our presets (the models overview page,
/// https://platform.claude.com/docs/en/about-claude/models/overview), for listings.
const SNAPSHOTS: [(&str, &str); 7] = [
    ("claude-haiku-3.5", "claude-3-5-haiku-20241022"),
    ("claude-haiku-4.5", "claude-haiku-4-5-20251001"),
    ("claude-opus-4", "claude-opus-4-20250514"),
    ("claude-opus-4.1", "claude-opus-4-1-20250805"),
    ("claude-opus-4.5", "claude-opus-4-5-20251101"),
    ("claude-sonnet-4", "claude-sonnet-4-20250514"),
    ("claude-sonnet-4.5", "claude-sonnet-4-5-20250929"),
];

/// The API ids that name `preset` (`prefixsim models`): its alias (`claude-sonnet-4-5`) and
/// any documented dated snapshot, in that order. Every one maps back by `name_for_api_id`.
pub fn api_ids(preset: &str) -> Vec<String> {
    // OpenAI and Gemini models are called by the preset's own name (`gpt-5.4`).
    if !preset.starts_with("claude-") {
        return vec![preset.to_string()];
    }
    let alias = match preset.rsplit_once('.') {
        Some((head, minor)) => format!("{head}-{minor}"),
        None => preset.to_string(),
    };
    let mut ids = vec![alias];
    ids.extend(SNAPSHOTS.iter().filter(|(p, _)| *p == preset).map(|(_, id)| id.to_string()));
    ids
}

#[cfg(test)]
mod tests {
    use crate::config::preset_for_api_id;

    /// Every id the API, the platforms and the presets spell, and ids that name no preset
    /// (every id `api_ids` lists is checked through `prefixsim models`, tests/it/latency.rs).
    #[test]
    fn api_ids_name_presets() {
        for (id, want) in [
            ("claude-sonnet-4-5-20250929", Some("claude-sonnet-4.5")),
            ("claude-sonnet-4-5", Some("claude-sonnet-4.5")),
            ("claude-opus-4-1-20250805", Some("claude-opus-4.1")),
            ("claude-opus-4-5-20251101", Some("claude-opus-4.5")),
            ("claude-haiku-4-5-20251001", Some("claude-haiku-4.5")),
            ("claude-sonnet-4-20250514", Some("claude-sonnet-4")),
            ("claude-opus-4-20250514", Some("claude-opus-4")),
            ("claude-sonnet-4-0", Some("claude-sonnet-4")),
            ("claude-3-5-haiku-20241022", Some("claude-haiku-3.5")),
            ("claude-3-5-haiku-latest", Some("claude-haiku-3.5")),
            ("claude-sonnet-4.5", Some("claude-sonnet-4.5")),
            (" claude-opus-4.1 ", Some("claude-opus-4.1")),
            ("anthropic.claude-opus-4-1-20250805-v1:0", Some("claude-opus-4.1")),
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Some("claude-sonnet-4.5")),
            ("claude-opus-4-1@20250805", Some("claude-opus-4.1")),
            ("gpt-4o-2024-08-06", None),
            ("claude-sonnet-9-9", None),
            ("claude-3-opus-20240229", None), // no claude-opus-3 preset
            ("", None),
            ("claude-sonnet-4-5-2025092", None), // a 7-digit tail is not a date
        ] {
            assert_eq!(preset_for_api_id(id), want, "{id}");
        }
    }
}
