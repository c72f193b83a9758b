//! The API's model ids -> our preset names. The Messages API names a model by an id such as
//! `claude-sonnet-4-5-20250929` (a dated snapshot) or its alias `claude-sonnet-4-5`; our presets
//! are named `claude-sonnet-4.5`. Everywhere a model is named (experiment files, `--set`,
//! traces, usage logs), any of the three spellings means the same preset.
//!
//! The rule: strip a trailing `-YYYYMMDD` snapshot date, then write the `-` between the two
//! version numbers as `.` (`claude-opus-4-5` -> `claude-opus-4.5`; `claude-sonnet-4` stays).

/// Dated snapshot ids the API documents for our presets (the models overview page,
/// https://platform.claude.com/docs/en/about-claude/models/overview), and the one older
/// spelling that puts the version before the family (`claude-3-5-haiku`).
const SNAPSHOTS: [(&str, &str); 8] = [
    ("claude-haiku-3.5", "claude-3-5-haiku-20241022"),
    ("claude-haiku-3.5", "claude-3-5-haiku-latest"),
    ("claude-haiku-4.5", "claude-haiku-4-5-20251001"),
    ("claude-opus-4", "claude-opus-4-20250514"),
    ("claude-opus-4.1", "claude-opus-4-1-20250805"),
    ("claude-opus-4.5", "claude-opus-4-5-20251101"),
    ("claude-sonnet-4", "claude-sonnet-4-20250514"),
    ("claude-sonnet-4.5", "claude-sonnet-4-5-20250929"),
];

/// The API ids that name `preset`: its alias (`claude-sonnet-4-5`) and any documented dated
/// snapshot, in that order.
pub fn api_ids(preset: &str) -> Vec<String> {
    let alias = match preset.rsplit_once('.') {
        Some((head, minor)) => format!("{head}-{minor}"),
        None => preset.to_string(),
    };
    let mut ids = vec![alias];
    ids.extend(SNAPSHOTS.iter().filter(|(p, _)| *p == preset).map(|(_, id)| id.to_string()));
    ids
}

/// The preset name that `id` means, if it names a preset.
pub fn preset_for_api_id(id: &str) -> Option<&'static str> {
    let names = super::preset_names();
    if let Some(name) = names.iter().find(|n| **n == id) {
        return Some(name);
    }
    if let Some((preset, _)) = SNAPSHOTS.iter().find(|(_, s)| *s == id) {
        return names.into_iter().find(|n| n == preset);
    }
    let undated = strip_date(id);
    let dotted = dot_minor_version(undated);
    names.into_iter().find(|n| *n == dotted)
}

/// `id` without a trailing `-YYYYMMDD`.
fn strip_date(id: &str) -> &str {
    match id.rsplit_once('-') {
        Some((head, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    }
}

/// `family-X-Y` -> `family-X.Y` when X and Y are short numbers; otherwise `id` unchanged.
fn dot_minor_version(id: &str) -> String {
    let short_number =
        |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, minor)) = id.rsplit_once('-') {
        if let Some((_, major)) = head.rsplit_once('-') {
            if short_number(major) && short_number(minor) {
                return format!("{head}.{minor}");
            }
        }
    }
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_ids_aliases_and_preset_names_mean_one_preset() {
        let cases = [
            ("claude-sonnet-4-5-20250929", Some("claude-sonnet-4.5")),
            ("claude-sonnet-4-5", Some("claude-sonnet-4.5")),
            ("claude-sonnet-4.5", Some("claude-sonnet-4.5")),
            ("claude-sonnet-4-20250514", Some("claude-sonnet-4")),
            ("claude-opus-4-1-20250805", Some("claude-opus-4.1")),
            ("claude-opus-4-5-20251101", Some("claude-opus-4.5")),
            ("claude-haiku-4-5-20251001", Some("claude-haiku-4.5")),
            ("claude-opus-4-6", Some("claude-opus-4.6")),
            ("claude-3-5-haiku-20241022", Some("claude-haiku-3.5")),
            ("claude-3-7-sonnet-20250219", None),
            ("gpt-9", None),
            ("", None),
        ];
        for (id, want) in cases {
            assert_eq!(preset_for_api_id(id), want, "{id}");
        }
    }

    #[test]
    fn every_listed_id_names_its_preset() {
        for preset in super::super::preset_names() {
            let ids = api_ids(preset);
            assert!(!ids.is_empty());
            for id in ids {
                assert_eq!(preset_for_api_id(&id), Some(preset), "{id}");
            }
        }
    }
}
